# attack: take os from a stdlib function's __globals__ (linecache.checkcache) and call system
# expect: denied
# layer: audit
import linecache

os_mod = linecache.checkcache.__globals__["os"]
os_mod.system("echo ESCAPED")
