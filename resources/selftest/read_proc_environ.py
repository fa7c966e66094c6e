# The selftest's probe: read the host's environment through /proc.
import os
for p in os.listdir('/proc'):
    if p.isdigit():
        try:
            print(open('/proc/' + p + '/environ', 'rb').read().decode('latin-1'))
        except OSError:
            pass
