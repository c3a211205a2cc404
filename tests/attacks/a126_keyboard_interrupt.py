# attack: raise KeyboardInterrupt out of the snippet
# expect: exception
raise KeyboardInterrupt
