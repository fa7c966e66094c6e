# The selftest's probe: stat a private file outside the mounts.
import os
try:
    st = os.stat(SECRET_FILE)
    print('size %d mode %o' % (st.st_size, st.st_mode & 0o777))
except OSError as e:
    print(type(e).__name__)
