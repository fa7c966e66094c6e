"""The import part of a policy in the form the runtime guard enforces it inside the child.

The runtime guard (src/guard) replaces builtins.__import__ in the child with a C function that
checks imports made directly by the user's code against a list of patterns. It cannot run this
package (the child starts with -I -S and must not trust Python code the user can patch), so the
host computes the patterns once per policy with runtime_import_patterns() and sends them in the
request frame. The patterns mean exactly what CompiledPolicy.import_allowed() means:

    "name"      allows the module `name` (exactly that dotted name)
    "pkg.*"     allows `pkg` and every submodule below it whose parts below `pkg` do not start
                with "_"
    "!name"     denies `name` and everything below it

A dotted name is allowed when it does not contain "subprocess" (case-insensitive) and either it
is named exactly, or of the "pkg.*" and "!name" patterns that match it (name == p or name
starts with p + ".") the longest is a "pkg.*" one. pattern_allows() is that rule in Python; the
C++ twin is src/guard/import_patterns.cpp, and tests check both against import_allowed().

Every blocked module (the default block list and the user's) is a "!" pattern, so that the
guard can tell a refused import from one of a module that is merely not allowed: the first
raises PermissionError, the second ModuleNotFoundError (pattern_refuses() tells which), which
an `except ImportError` fallback catches, as the validator accepts for such modules inside
`try` (validator/README.md "Accepted forms").
"""

from .policy import compiled as _compiled

__all__ = ["runtime_import_patterns", "pattern_allows", "pattern_refuses",
           "blocked_builtin_names"]

_cache = {}
_CACHE_LIMIT = 64


def runtime_import_patterns(policy=None):
    """The patterns for a policy (None, a dict with keys from POLICY_KEYS, or a Policy), sorted;
    cached per policy. A malformed policy raises ValueError, as validate() does."""
    cp = _compiled(policy)
    hit = _cache.get(id(cp))
    if hit is not None and hit[0] is cp:
        return list(hit[1])
    patterns = _patterns(cp)
    if len(_cache) >= _CACHE_LIMIT:
        _cache.clear()
    _cache[id(cp)] = (cp, patterns)
    return list(patterns)


def blocked_builtin_names(policy=None):
    """The builtins the policy blocks, sorted (the model's description lists them)."""
    return sorted(_compiled(policy).blocked_builtins)


def _patterns(cp):
    # Exact names first: an exact entry beats a blocked default (`os` is both), so every exact
    # name import_allowed() accepts is listed, and the user's block list (which beats exact
    # names) is applied by leaving those out.
    exact = {name for name in cp.allowed_exact if cp.import_allowed(name) is None}
    exact.add("__future__")
    user_blocked = set(cp.blocked_user)
    # A wildcard at or below a user-blocked prefix allows nothing: drop it, so that the "!x" of
    # the block is the longest match below x.
    wildcards = {w for w in cp.allowed_wildcards
                 if not any(w == b or w.startswith(b + ".") for b in user_blocked)}
    # A blocked default below a wildcard wins over it (`asyncio.*` does not allow
    # asyncio.subprocess); one at or above the wildcard does not (import_allowed compares
    # lengths, and so does pattern_allows: a "pkg.*" wins on equal length), so every blocked
    # default can be a "!" pattern. Exact names are checked first, so `os` stays allowed.
    denied = set(user_blocked) | set(cp.blocked_default)
    return tuple(sorted(exact) + sorted(w + ".*" for w in wildcards)
                 + sorted("!" + d for d in denied))


def pattern_allows(patterns, name):
    """Whether `patterns` (from runtime_import_patterns) allow importing the dotted `name`."""
    if "subprocess" in name.lower():
        return False
    if name in patterns:
        return True
    best = _longest_match(patterns, name)
    if best is None or best[1]:
        return False
    prefix = best[0]
    below = name[len(prefix) + 1:].split(".") if name != prefix else []
    return not any(part.startswith("_") for part in below)


def pattern_refuses(patterns, name):
    """Whether `patterns` refuse `name` (a "!" pattern or "subprocess" decides), as opposed to
    not allowing it because no pattern names it. Meaningful for a name pattern_allows()
    refuses."""
    if "subprocess" in name.lower():
        return True
    best = _longest_match(patterns, name)
    return best is not None and best[1]


def _longest_match(patterns, name):
    """The longest "pkg.*" or "!name" pattern at or above `name`, as (prefix, denies), or None.
    On equal length (not produced by _patterns) the wildcard wins, as in import_allowed."""
    best = None
    for p in patterns:
        if p.startswith("!"):
            prefix, deny = p[1:], True
        elif p.endswith(".*"):
            prefix, deny = p[:-2], False
        else:
            continue
        if name != prefix and not name.startswith(prefix + "."):
            continue
        if best is None or len(prefix) > len(best[0]) or (len(prefix) == len(best[0]) and not deny):
            best = (prefix, deny)
    return best
