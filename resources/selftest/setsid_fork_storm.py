# The selftest's probe: outrun the wall clock with a setsid fork storm.
import os, time
for i in range(4000):
    try:
        if os.fork() == 0:
            os.setsid()
            time.sleep(60)
            os._exit(0)
    except OSError:
        time.sleep(0.001)
time.sleep(60)
