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

# dotted package name -> frozenset of its direct submodule names, and of those that are packages
# themselves (only those can have submodules: discover() lists nothing below a plain module,
# which saved ~150 of ~200 listings of the default policy). Two threads may both list a package
# the first time; they compute the same sets, so no lock is needed.
_listed = {}
_subpackages = {}


# The file system through posix directly: importing os (and importlib.machinery) took ~3 ms of the
# first validation of a one-shot run, which listed the standard library's packages without them.
def _is_file(path):
    import posix
    try:
        return posix.stat(path).st_mode & 0o170000 == 0o100000
    except (OSError, ValueError):
        return False


def _stdlib_dir():
    import sys
    return getattr(sys, "_stdlib_dir", None)


def _stdlib_subdirectories(stdlib):
    """The names of the directories in the standard library's directory, listed once (one
    listing instead of a failed stat for each plain module the policy names); None when it
    cannot be listed."""
    if stdlib not in _stdlib_listing:
        import posix
        try:
            with posix.scandir(stdlib) as listing:
                _stdlib_listing[stdlib] = frozenset(e.name for e in listing if e.is_dir())
        except (OSError, ValueError):
            _stdlib_listing[stdlib] = None
    return _stdlib_listing[stdlib]


_stdlib_listing = {}


def _top_locations(top):
    """The directories of top-level package `top`. A standard-library name is looked up in the
    standard library's directory (a few stat calls); any other name through the import
    system's path finder, which searches sys.path without executing anything."""
    import sys
    stdlib = _stdlib_dir()
    if stdlib and top in sys.stdlib_module_names:
        subdirectories = _stdlib_subdirectories(stdlib)
        candidate = stdlib + "/" + top
        if (subdirectories is None or top in subdirectories) and _is_file(
                candidate + "/__init__.py"):
            return [candidate]
        return []
    # importlib.machinery.PathFinder is this class: importing the importlib package for it cost
    # ~0.8 ms of a first validation (the policy names `bltns`, which is not in the stdlib).
    from _frozen_importlib_external import PathFinder
    try:
        spec = PathFinder.find_spec(top)
    except Exception:   # a broken path entry must not break validation
        return []
    return list(getattr(spec, "submodule_search_locations", None) or ()) if spec else []


def _search_locations(dotted):
    """The directories of package `dotted`, or () when it is not a package on disk."""
    parts = dotted.split(".")
    locations = _top_locations(parts[0])
    for part in parts[1:]:
        locations = [loc + "/" + part for loc in locations
                     if _is_file(loc + "/" + part + "/__init__.py")]
    return tuple(locations)


def _list_package(dotted):
    """The names of the direct submodules (and subpackages) of package `dotted`, and of the
    subpackages alone."""
    import _imp
    import posix
    # importlib.machinery.all_suffixes(), without importing it.
    suffixes = (".py", ".pyc") + tuple(_imp.extension_suffixes())
    names = set()
    packages = set()
    for loc in _search_locations(dotted):
        # scandir: the kind of each entry comes with the listing (one stat per subdirectory, not
        # one per entry: ~1,300 fewer system calls for the default policy).
        try:
            with posix.scandir(loc) as listing:
                entries = list(listing)
        except (OSError, ValueError):
            continue
        for entry in entries:
            name = entry.name
            if name.startswith("__"):
                continue
            try:
                if entry.is_file():
                    if not name.endswith(suffixes):
                        continue
                    name = name.split(".", 1)[0]
                elif entry.is_dir() and _is_file(loc + "/" + name + "/__init__.py"):
                    if name.isidentifier():
                        packages.add(name)
                else:
                    continue
            except OSError:
                continue
            if name.isidentifier():
                names.add(name)
    return frozenset(names), frozenset(packages)


def submodules(dotted):
    """frozenset of the direct submodule names of package `dotted` (empty for a plain module
    or an unknown name). Cached for the life of the process."""
    hit = _listed.get(dotted)
    if hit is None:
        hit, _subpackages[dotted] = _list_package(dotted)
        _listed[dotted] = hit
    return hit


def discover(tops, depth=3):
    """Every dotted submodule below the packages `tops`, `depth` levels down."""
    found = set()
    todo = [(t, 0) for t in tops]
    while todo:
        name, level = todo.pop()
        if level >= depth:
            continue
        subs = submodules(name)
        packages = _subpackages.get(name, subs)
        for sub in subs:
            full = name + "." + sub
            found.add(full)
            if sub in packages:
                todo.append((full, level + 1))
    return found
