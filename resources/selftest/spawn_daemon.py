# The selftest's probe: spawn a daemon that outlives the run (MARKER in its command line).
import os
sys = __import__('sys')
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, '-c', 'import time; time.sleep(60)', MARKER])
    os._exit(0)
os.wait()
import time
time.sleep(0.3)
print('started')
