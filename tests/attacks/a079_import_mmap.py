# attack: import mmap (anonymous RWX mapping for shellcode)
# expect: denied
# layer: import
import mmap

m = mmap.mmap(-1, 4096, prot=7)
print("ESCAPED: rwx mapping", m)
