# attack: huge list multiplication
# expect: memory_limit
# args: --memory 128M
x = [0] * (10 ** 10)
print("ESCAPED", len(x))
