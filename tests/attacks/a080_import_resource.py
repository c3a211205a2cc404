# attack: import resource and raise RLIMIT_CPU back to unlimited
# expect: denied
# layer: import
import resource

resource.setrlimit(resource.RLIMIT_CPU, (-1, -1))
print("ESCAPED: rlimit raised")
