# The selftest's probe: spin past the CPU limit.
while True:
    pass
