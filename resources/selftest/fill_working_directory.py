# The selftest's probe: fill the working directory.
n = 0
chunk = b'x' * (8 << 20)
try:
    for i in range(48):
        with open('f%d' % i, 'wb') as f:
            for j in range(4):
                f.write(chunk)
                n += 8
except OSError as e:
    print(e.strerror)
print(n, 'MiB')
