# The selftest's probe: see a host process at /proc/PID.
import os
print('exists' if os.path.exists('/proc/' + str(HOST_PID)) else 'absent')
