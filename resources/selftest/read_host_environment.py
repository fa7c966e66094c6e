# The selftest's probe: read a host environment secret: one "NAME=value" line per variable.
import os
for k, v in os.environ.items(): print(k + '=' + v)
