import math
name = "pysnip"
print(f"hello from {name}: sqrt(2) = {math.sqrt(2):.6f}")
