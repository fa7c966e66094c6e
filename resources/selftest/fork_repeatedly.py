# The selftest's probe: fork repeatedly.
import os, time
n = 0
try:
    while n < 200:
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
        n += 1
except OSError as e:
    print(type(e).__name__)
print(n)
