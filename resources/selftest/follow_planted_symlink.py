# The selftest's probe: follow a planted symlink out of a mount.
print(open(MOUNT_SEEN + '/link').read())
