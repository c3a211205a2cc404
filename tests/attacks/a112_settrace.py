# attack: sys.settrace to watch (and rewrite) frames, including the host's report code
# expect: denied
# layer: audit
import sys

sys.settrace(lambda f, e, a: print("ESCAPED: traced", f.f_code.co_filename))
