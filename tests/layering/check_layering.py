"""ctest docs.layering: the include graph of src/ is the one docs/ARCHITECTURE.md's table allows.

Reads the table under "## Layers" in docs/ARCHITECTURE.md (folder | what it holds | may include),
scans every `#include "..."` of src/ and include/, and exits 1 naming `file:line` for each include
the table does not allow, for a folder of src/ without a row, for a row without a folder, and for a
cycle among the rows. A file belongs to the deepest folder with a row (src/backends/local/x.cpp to
`backends/local`, src/backends/x.cpp to `backends`); include/codeact is the public floor.

It also checks the child's modules, resources/*.py (parsed with ast): no module imports another's
private (`_x`) name or reads one as an attribute, and their imports (also those inside functions)
form no cycle.

Usage: check_layering.py REPO_ROOT
"""

import ast
import pathlib
import re
import sys

ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
DOC = ROOT / "docs" / "ARCHITECTURE.md"
PUBLIC = "include/codeact"
# Generated headers, by the folder that makes them (CMakeLists.txt).
GENERATED = {
    "codeact_build_config.hpp": PUBLIC,  # from src/build_config.hpp.in
    "seccomp_programs.inc": "sandbox",  # codeact-seccomp-gen's output
    "python_reserved_names.inc": "mcp_client",
}
SOURCE_SUFFIXES = {".cpp", ".hpp", ".h", ".cc", ".inc"}
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
TICKED = re.compile(r"`([^`]+)`")


def read_table():
    """{folder: set of folders it may include}, in the table's order."""
    lines = DOC.read_text().splitlines()
    try:
        at = lines.index("## Layers")
    except ValueError:
        sys.exit(f"{DOC.relative_to(ROOT)}: no '## Layers' section")
    rows = {}
    in_table = False
    for number, line in enumerate(lines[at + 1:], at + 2):
        if line.startswith("## "):
            break
        if not line.startswith("|"):
            if in_table:
                break
            continue
        in_table = True
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or set(cells[0]) <= {"-", " "} or cells[0] == "folder":
            continue
        folder = TICKED.fullmatch(cells[0])
        if not folder:
            sys.exit(f"{DOC.relative_to(ROOT)}:{number}: the first cell is not a `folder`")
        rows[folder.group(1)] = set(TICKED.findall(cells[-1]))
    if not rows:
        sys.exit(f"{DOC.relative_to(ROOT)}: no table under '## Layers'")
    return rows


def folder_of(rel, rows):
    """The row a repository-relative path belongs to, or None."""
    parts = rel.split("/")
    if parts[0] == "include":
        return PUBLIC
    if parts[0] != "src":
        return None
    for depth in range(len(parts) - 1, 1, -1):
        candidate = "/".join(parts[1:depth])
        if candidate in rows:
            return candidate
    return None


def resolve(including, text):
    """The repository-relative path an include names, or None where no file has it."""
    if text.startswith("codeact/"):
        return f"include/{text}"
    for base in (ROOT / "src", including.parent):
        path = (base / text).resolve()
        if path.is_file() and ROOT in path.parents:
            return path.relative_to(ROOT).as_posix()
    return None


def find_cycle(graph):
    """One cycle of `graph` as a list of nodes (first == last), or None."""
    state = {}
    stack = []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def check_includes(rows):
    errors = []
    folders_seen = set()
    scanned = 0
    for top in ("src", "include"):
        for path in sorted((ROOT / top).rglob("*")):
            if not path.is_file() or path.suffix not in SOURCE_SUFFIXES:
                continue
            rel = path.relative_to(ROOT).as_posix()
            own = folder_of(rel, rows)
            if own is None:
                errors.append(f"{rel}: its folder has no row in the table of {DOC.name}")
                continue
            folders_seen.add(own)
            for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                scanned += 1
                text = m.group(1)
                target = resolve(path, text)
                if target is not None:
                    to = folder_of(target, rows)
                elif "/" not in text and text in GENERATED:
                    to = GENERATED[text]
                else:
                    errors.append(f"{rel}:{number}: includes \"{text}\", which is no file of src/ or "
                                  f"include/ nor a known generated header (check_layering.py, GENERATED)")
                    continue
                if to is None:
                    errors.append(f"{rel}:{number}: includes \"{text}\", whose folder has no row")
                elif to != own and to not in rows[own]:
                    errors.append(f"{rel}:{number}: includes \"{text}\": `{own}` may not include "
                                  f"`{to}` (docs/ARCHITECTURE.md, Layers)")
    for folder in sorted(set(rows) - folders_seen):
        errors.append(f"{DOC.relative_to(ROOT)}: the row `{folder}` names no folder with sources")
    for folder, allowed in sorted(rows.items()):
        for other in sorted(allowed - set(rows)):
            errors.append(f"{DOC.relative_to(ROOT)}: the row `{folder}` allows `{other}`, which has no row")
    cycle = find_cycle({f: a & set(rows) for f, a in rows.items()})
    if cycle:
        errors.append(f"{DOC.relative_to(ROOT)}: the folders form a cycle: " + " -> ".join(cycle))
    return errors, scanned


def check_python():
    """Private names and cycles among the child's modules, resources/*.py."""
    errors = []
    modules = {p.stem: p for p in sorted((ROOT / "resources").glob("*.py"))}
    graph = {name: set() for name in modules}
    for name, path in modules.items():
        rel = path.relative_to(ROOT).as_posix()
        tree = ast.parse(path.read_text(), filename=rel)
        aliases = {}  # local name -> sibling module
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    top = alias.name.split(".")[0]
                    if top in modules and top != name:
                        graph[name].add(top)
                        aliases[alias.asname or top] = top
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                top = node.module.split(".")[0]
                if top in modules and top != name:
                    graph[name].add(top)
                    for alias in node.names:
                        if alias.name.startswith("_"):
                            errors.append(f"{rel}:{node.lineno}: imports {top}.{alias.name}, "
                                          "a private name of another module")
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in aliases and node.attr.startswith("_")
                    and not node.attr.startswith("__")):
                errors.append(f"{rel}:{node.lineno}: reads {aliases[node.value.id]}.{node.attr}, "
                              "a private name of another module")
    cycle = find_cycle(graph)
    if cycle:
        errors.append("resources/*.py import each other in a cycle: " + " -> ".join(cycle))
    return errors


def main():
    rows = read_table()
    errors, scanned = check_includes(rows)
    errors += check_python()
    for e in errors:
        print(e)
    print(f"{len(rows)} folders, {scanned} includes checked, {len(errors)} problems")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
