# The selftest's probe: make a private file outside the mounts readable.
import os
os.chmod(SECRET_FILE, 0o644)
