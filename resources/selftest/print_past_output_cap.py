# The selftest's probe: print past the output cap.
print('x' * (1 << 20))
