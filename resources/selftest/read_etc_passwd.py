# The selftest's probe: read /etc/passwd.
print(open('/etc/passwd').read())
