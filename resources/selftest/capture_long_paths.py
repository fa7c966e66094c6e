# The selftest's probe: capture thousands of long-path files.
import os
os.chdir(RW_SEEN)
for i in range(40):
    os.mkdir('d' * 250)
    os.chdir('d' * 250)
    for j in range(250):
        open('f%d' % j, 'w').write('x')
print('written')
