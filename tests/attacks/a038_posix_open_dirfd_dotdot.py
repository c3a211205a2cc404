# attack: posix.open with dir_fd of the scratch dir and a ../../ path up to /etc/shadow
# expect: denied
# layer: audit
import sys

posix = sys.modules["posix"]
d = posix.open(".", posix.O_RDONLY | posix.O_DIRECTORY)
fd = posix.open("../../../../../../etc/shadow", posix.O_RDONLY, dir_fd=d)
print("ESCAPED", posix.read(fd, 100))
