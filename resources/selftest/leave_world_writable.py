# The selftest's probe: leave a world-writable file in a mount.
import os
p = RW_SEEN + '/ww'
d = RW_SEEN + '/wwd'
open(p, 'w').write('x')
os.mkdir(d, 0o777)
try:
    os.chmod(p, 0o666)
except OSError:
    pass
try:
    os.chmod(d, 0o1777)
except OSError:
    pass
