# The selftest's probe: write a /proc/sys setting (the same value written back).
p = '/proc/sys/kernel/printk_ratelimit'
v = open(p).read()
open(p, 'w').write(v)
print('written')
