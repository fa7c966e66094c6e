# The selftest's probe: list /: what the code sees at /, one level below it, and where its interpreter lives.
# Lines of NUL-separated fields: "exe\0<real path>", then per entry of / "dir\0<name>\0<entries...>"
# or "other\0<name>".
import os
sys = __import__('sys')  # the real module: `import sys` is the view
print('exe', os.path.realpath(sys.executable), sep='\0')
for name in sorted(os.listdir('/')):
    try:
        inner = sorted(os.listdir('/' + name))
    except OSError:
        print('other', name, sep='\0')
    else:
        print('dir', name, *inner, sep='\0')
