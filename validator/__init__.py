"""codeact validator: the AST allow-list policy (README.md here), on CPython's own `ast`.

    from validator import validate
    validate("import os\nos.system('id')")
    # {"ok": False, "violations": [{"line": 2, "col": 3, "rule": "os-attribute",
    #   "message": "call to os.system is not allowed", "hint": "..."}]}

Defence in depth and a fast, readable error for the model: NOT the security boundary (the
isolation level is). Pure standard library; imports only `ast` and `time` up front.
"""

import time as _time

from .checker import check_code as _check_code
from .policy import DEFAULT_POLICY, POLICY_KEYS, Policy, compiled as _compiled
from .report import INTERNAL_ERROR, RULES, TOO_COMPLEX, Report, Violation

__all__ = ["validate", "validate_report", "Policy", "Violation", "Report", "DEFAULT_POLICY",
           "POLICY_KEYS", "RULES"]


def validate(code, policy=None):
    """Checks `code` against `policy` and returns
    {"ok": bool, "violations": [{"line", "col", "rule", "message", "hint"}, ...]}.

    `code` is a str (bytes are decoded as UTF-8 with replacement). `policy` is None, a dict
    with keys from POLICY_KEYS, or a Policy. Never raises because of the code: syntax errors,
    deep nesting, recursion and memory exhaustion come back as violations. A malformed policy
    (unknown key, wrong type) raises ValueError, a code of another type TypeError: those are
    host bugs, not untrusted input.
    """
    started = _time.perf_counter()
    cp = _compiled(policy)
    if isinstance(code, (bytes, bytearray)):
        code = bytes(code).decode("utf-8", "replace")
    elif not isinstance(code, str):
        raise TypeError("code must be str, not %s" % type(code).__name__)
    try:
        found = _check_code(code, cp, started)
    except (RecursionError, MemoryError) as e:
        found = [(0, 0, TOO_COMPLEX,
                  "the code is too complex to validate (%s)" % type(e).__name__,
                  "flatten the nesting: use intermediate variables, loops or helper functions")]
    except Exception as e:  # noqa: BLE001 - any bug here must become a rejection, not a crash
        found = [(0, 0, INTERNAL_ERROR,
                  "the validator failed: %s: %s" % (type(e).__name__, e),
                  "this is a validator bug; simplify the code or report it")]
    violations = [{"line": line, "col": col, "rule": rule, "message": message, "hint": hint}
                  for line, col, rule, message, hint in sorted(set(found))]
    return {"ok": not violations, "violations": violations}


def validate_report(code, policy=None):
    """validate() as a Report object."""
    return Report.from_dict(validate(code, policy))
