# attack: leave the recursion limit so low that the host cannot build the report after the snippet
# expect: ok
import sys

print("snippet finished normally")
sys.setrecursionlimit(6)
