# attack: multiprocessing.Process
# expect: denied
# layer: import
import multiprocessing

p = multiprocessing.Process(target=print, args=("ESCAPED",))
p.start()
p.join()
