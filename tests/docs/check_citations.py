"""ctest docs.citations: every Markdown file the code names exists in the repository.

Scans the comments and docstrings of the sources (src, include, resources, validator, tests,
samples, CMake files) for names ending in ".md" and looks each up as a path from the repository
root, from the citing file's folder, and as a file name anywhere in the repository. Absolute
paths are paths inside a sandbox (test data), not citations. Exits 1 naming what is missing.
"""

import pathlib
import re
import sys

ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
SCANNED = ["src", "include", "resources", "validator", "tests", "samples", "CMakeLists.txt", ".ci"]
SUFFIXES = {".cpp", ".hpp", ".in", ".py", ".sh", ".mjs", ".txt", ".cmake", ""}
CITATION = re.compile(r"(?<![A-Za-z0-9_./-])[A-Za-z0-9_.-][A-Za-z0-9_./-]*\.md\b")
# A comment (C++, shell, CMake, Python) or a docstring line: the text after the marker.
COMMENT = re.compile(r"(?://|#|^\s*\"\"\"|^\s*[A-Z`(]).*$")


def sources():
    for name in SCANNED:
        path = ROOT / name
        files = [path] if path.is_file() else path.rglob("*")
        for f in files:
            if f.is_file() and f.suffix in SUFFIXES and "node_modules" not in f.parts and "__pycache__" not in f.parts:
                yield f


def main():
    present = {p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*.md") if "node_modules" not in p.parts}
    names = {pathlib.PurePosixPath(p).name for p in present}
    missing = []
    checked = 0
    for f in sources():
        text = f.read_text(errors="replace")
        comments = "\n".join(m.group(0) for m in map(COMMENT.search, text.splitlines()) if m)
        for cited in set(CITATION.findall(comments)):
            checked += 1
            rel = (f.parent / cited).resolve()
            if cited.lstrip("./") in present or rel.exists() or pathlib.PurePosixPath(cited).name in names:
                continue
            missing.append(f"{f.relative_to(ROOT)}: {cited}")
    for m in sorted(missing):
        print("cites a missing file:", m)
    print(f"{checked} citations checked, {len(missing)} missing")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
