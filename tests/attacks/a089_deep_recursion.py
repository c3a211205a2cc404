# attack: lift the recursion limit and recurse in pure Python until memory runs out
# expect: memory_limit|cpu_limit
# args: --memory 96M
import sys

sys.setrecursionlimit(10 ** 9)


def f(n):
    return f(n + 1) + 1


f(0)
print("ESCAPED")
