# attack: busy loop past the wall clock
# expect: timeout
# args: --wall-time 1s --cpu-time 5s
while True:
    pass
