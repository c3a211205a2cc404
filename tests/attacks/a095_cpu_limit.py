# attack: burn CPU past the CPU limit (wall clock is longer)
# expect: cpu_limit
# args: --cpu-time 1s --wall-time 5s
while True:
    pass
