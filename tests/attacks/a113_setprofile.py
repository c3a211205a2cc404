# attack: sys.setprofile to observe C calls made while the report is built
# expect: denied
# layer: audit
import sys

sys.setprofile(lambda f, e, a: print("ESCAPED: profiled", e))
