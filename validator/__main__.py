"""python3 -m validator [--policy JSON | --policy @FILE] FILE|-

Prints the report as JSON on stdout. Exit status: 0 no violations, 1 violations, 2 bad
invocation (usage, unreadable file, code that is not UTF-8, malformed policy).
"""

import json
import sys

from . import validate

_USAGE = "usage: python3 -m validator [--policy JSON|@FILE] FILE|-"


def _fail(message):
    print("validator: %s\n%s" % (message, _USAGE), file=sys.stderr)
    return 2


def main(argv):
    policy = None
    args = list(argv)
    if args and args[0] in ("-h", "--help"):
        print(_USAGE + "\n" + __doc__.split("\n\n", 1)[1].strip())
        return 0
    if len(args) >= 2 and args[0] == "--policy":
        text = args[1]
        try:
            if text.startswith("@"):
                with open(text[1:], encoding="utf-8") as f:
                    text = f.read()
            policy = json.loads(text)
        except (OSError, ValueError) as e:
            return _fail("cannot read the policy: %s" % e)
        args = args[2:]
    if len(args) != 1 or (args[0].startswith("-") and args[0] != "-"):
        return _fail("expected exactly one FILE or -")
    path = args[0]
    try:
        if path == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(path, "rb") as f:
                data = f.read()
        code = data.decode("utf-8-sig")
    except OSError as e:
        return _fail("cannot read %s: %s" % (path, e.strerror or e))
    except UnicodeDecodeError as e:
        return _fail("%s is not UTF-8: %s" % (path, e))
    try:
        report = validate(code, policy)
    except (ValueError, TypeError) as e:
        return _fail("bad policy: %s" % e)
    json.dump(report, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
