# attack: allocate 1 TiB at once
# expect: memory_limit
# args: --memory 128M
x = bytearray(1 << 40)
print("ESCAPED: got", len(x))
