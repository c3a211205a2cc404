# attack: materialise an infinite generator
# expect: memory_limit
# args: --memory 128M --wall-time 10s --cpu-time 5s
import itertools

x = list(itertools.count())
print("ESCAPED")
