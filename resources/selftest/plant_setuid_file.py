# The selftest's probe: plant a setuid file through a mount.
import os
p = RW_SEEN + '/suid'
open(p, 'w').write('x')
os.chmod(p, 0o4755)
