# attack: write a file in /tmp, outside the scratch directory
# expect: denied
# layer: audit
with open("/tmp/pysnip-attack-a051", "w") as f:
    f.write("ESCAPED")
print("ESCAPED: wrote /tmp/pysnip-attack-a051")
