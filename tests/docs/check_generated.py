"""docs.generated: the generated blocks of docs/cli.md, docs/limits.md and docs/result.md are
what `codeact docs TOPIC` prints from the code's tables.

Each file holds the output between the lines `<!-- generated: codeact docs TOPIC -->` and
`<!-- end generated -->`; prose may sit around them. On a difference this prints a unified diff
and fails. With --update it rewrites the blocks instead (run it after changing a table).

usage: check_generated.py CODEACT_BINARY SOURCE_DIR [--update]
"""

import difflib
import subprocess
import sys
from pathlib import Path

TOPICS = ("cli", "limits", "result")
END = "<!-- end generated -->"


def begin_marker(topic):
    return "<!-- generated: codeact docs %s -->" % topic


def main():
    if len(sys.argv) not in (3, 4) or (len(sys.argv) == 4 and sys.argv[3] != "--update"):
        print(__doc__, file=sys.stderr)
        return 2
    binary, source = sys.argv[1], Path(sys.argv[2])
    update = len(sys.argv) == 4
    failed = False
    for topic in TOPICS:
        path = source / "docs" / (topic + ".md")
        generated = subprocess.run([binary, "docs", topic], check=True, capture_output=True,
                                   text=True).stdout
        text = path.read_text(encoding="utf-8")
        begin = begin_marker(topic)
        if text.count(begin) != 1 or text.count(END) < 1:
            print("%s: needs one line %r and a line %r after it" % (path, begin, END))
            failed = True
            continue
        head, rest = text.split(begin + "\n", 1)
        block, tail = rest.split(END, 1)
        if block == generated:
            continue
        if update:
            path.write_text(head + begin + "\n" + generated + END + tail, encoding="utf-8")
            print("%s: generated block rewritten" % path)
            continue
        failed = True
        print("%s: the generated block differs from `codeact docs %s` (rerun this script with "
              "--update):" % (path, topic))
        sys.stdout.writelines(difflib.unified_diff(
            block.splitlines(keepends=True), generated.splitlines(keepends=True),
            fromfile=str(path), tofile="codeact docs " + topic))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
