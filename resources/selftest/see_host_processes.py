# The selftest's probe: see host processes.
import os
print(sum(1 for p in os.listdir('/proc') if p.isdigit()))
