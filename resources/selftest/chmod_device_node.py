# The selftest's probe: chmod a device node (to the mode it has).
import os
os.chmod('/dev/null', 0o666)
print('changed')
