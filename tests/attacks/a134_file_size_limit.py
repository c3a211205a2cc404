# attack: write one 40 MB file in scratch, past the 16M file-size limit (disk filling)
# expect: signal|exception
import sys

with open("big", "wb") as f:
    for _ in range(40):
        f.write(b"\0" * (1 << 20))
print("ESCAPED: wrote 40 MB")
