"""Which dotted names are modules: the facts behind the module-value and module-private rules.

A name bound by `import json` is a module, and so is `from os import path` or
`asyncio.base_events`; `from datetime import datetime` is a class and `json.loads` a function.
The validator must tell them apart to reject a module used as a value (passed to a function,
put in a container, matched) without rejecting `key=json.loads`.

The import lists of the policy name some submodules (`os.path`, `collections.abc`). The rest
of a package's submodules are read from the package's directory on disk, without importing
anything: the validator runs inside the host, which must not execute standard-library code to
answer a question about the child's code. Both run the same CPython version (the host checks
it), so the host's standard library has the same packages as the child's. Only packages are
listed: a plain module's attributes that happen to be modules (`typing.collections`) are not
discovered, which is a documented gap.
"""

# dotted package name -> frozenset of its direct submodule names. Two threads may both list a
# package the first time; they compute the same set, so no lock is needed.
_listed = {}


def _top_locations(top):
    """The directories of top-level package `top`. A standard-library name is looked up in the
    standard library's directory (a few stat calls); any other name through the import
    system's path finder, which searches sys.path without executing anything."""
    import os
    import sys
    stdlib_file = getattr(os, "__file__", None)
    if stdlib_file and top in sys.stdlib_module_names:
        candidate = os.path.join(os.path.dirname(stdlib_file), top)
        if os.path.isfile(os.path.join(candidate, "__init__.py")):
            return [candidate]
        return []
    from importlib.machinery import PathFinder
    try:
        spec = PathFinder.find_spec(top)
    except Exception:   # a broken path entry must not break validation
        return []
    return list(getattr(spec, "submodule_search_locations", None) or ()) if spec else []


def _search_locations(dotted):
    """The directories of package `dotted`, or () when it is not a package on disk."""
    import os
    parts = dotted.split(".")
    locations = _top_locations(parts[0])
    for part in parts[1:]:
        locations = [os.path.join(loc, part) for loc in locations
                     if os.path.isfile(os.path.join(loc, part, "__init__.py"))]
    return tuple(locations)


def _list_package(dotted):
    """The names of the direct submodules (and subpackages) of package `dotted`."""
    import os
    from importlib.machinery import all_suffixes
    suffixes = tuple(all_suffixes())
    names = set()
    for loc in _search_locations(dotted):
        try:
            entries = os.listdir(loc)
        except OSError:
            continue
        for entry in entries:
            if entry.startswith("__"):
                continue
            full = os.path.join(loc, entry)
            if entry.endswith(suffixes) and os.path.isfile(full):
                name = entry.split(".", 1)[0]
            elif os.path.isfile(os.path.join(full, "__init__.py")):
                name = entry
            else:
                continue
            if name.isidentifier():
                names.add(name)
    return frozenset(names)


def submodules(dotted):
    """frozenset of the direct submodule names of package `dotted` (empty for a plain module
    or an unknown name). Cached for the life of the process."""
    hit = _listed.get(dotted)
    if hit is None:
        hit = _listed[dotted] = _list_package(dotted)
    return hit


def discover(tops, depth=3):
    """Every dotted submodule below the packages `tops`, `depth` levels down."""
    found = set()
    todo = [(t, 0) for t in tops]
    while todo:
        name, level = todo.pop()
        if level >= depth:
            continue
        for sub in submodules(name):
            full = name + "." + sub
            found.add(full)
            todo.append((full, level + 1))
    return found
