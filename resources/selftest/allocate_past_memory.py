# The selftest's probe: allocate past the memory limit.
x = bytearray(512 * 1024 * 1024)
