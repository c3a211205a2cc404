# attack: marshal.loads a code object (from marshal.dumps of compiled code) to run code the hook never saw compiled
# expect: denied
# layer: audit
import sys

marshal = sys.modules["marshal"]
blob = marshal.dumps(compile("print('ESCAPED: marshalled code ran')", "<m>", "exec"))
exec(marshal.loads(blob))
