# attack: decompression bomb: 1 MB of raw deflate that inflates to 1 GiB of zeros
# expect: memory_limit
# args: --memory 96M
import zlib

co = zlib.compressobj(9, zlib.DEFLATED, -15)
block = co.compress(b"\0" * (1 << 20)) + co.flush(zlib.Z_FULL_FLUSH)
bomb = block + block * 1023 + co.flush()
out = zlib.decompress(bomb, -15)
print("ESCAPED: inflated", len(out))
