# The selftest's probe: hold memory in /dev/shm (a file named MARKER).
chunk = b'x' * (8 << 20)
with open('/dev/shm/' + MARKER, 'wb') as out:
    for i in range(64):
        out.write(chunk)
print('held 512 MiB')
