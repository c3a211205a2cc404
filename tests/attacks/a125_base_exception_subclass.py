# attack: raise a BaseException subclass (not Exception) out of the snippet
# expect: exception
class Boom(BaseException):
    pass


raise Boom("not a sandbox denial")
