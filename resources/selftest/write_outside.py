# The selftest's probe: write outside the working directory and mounts.
open(ESCAPE_FILE, 'w').write('escaped')
