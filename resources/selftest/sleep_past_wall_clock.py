# The selftest's probe: sleep past the wall clock.
import time
time.sleep(60)
