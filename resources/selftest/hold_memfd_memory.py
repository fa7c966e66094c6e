# The selftest's probe: hold memory in memfds.
import os
fds = []
chunk = b'x' * (8 << 20)
for i in range(128):
    if i % 4 == 0:
        fds.append(os.memfd_create('m'))
    os.write(fds[-1], chunk)
print('held 1 GiB')
