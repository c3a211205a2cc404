# attack: flood stdout
# expect: output_limit
# args: --output-limit 64K
while True:
    print("x" * 100)
