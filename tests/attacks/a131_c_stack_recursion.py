# attack: lift the recursion limit and recurse through C frames (map -> lambda) until the C stack overflows
# expect: signal|memory_limit
# args: --wall-time 5s
import sys

sys.setrecursionlimit(10 ** 9)


def f():
    return list(map(lambda _: f(), [0]))


f()
print("ESCAPED")
