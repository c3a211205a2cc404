# attack: import cffi (foreign function interface)
# expect: denied
# layer: import
import cffi

print("ESCAPED", cffi.FFI().dlopen(None))
