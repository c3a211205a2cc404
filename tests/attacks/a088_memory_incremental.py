# attack: grow memory in small steps until the limit (no single huge request)
# expect: memory_limit
# args: --memory 128M --wall-time 10s --cpu-time 5s
chunks = []
while True:
    chunks.append(b"x" * (1 << 20))
