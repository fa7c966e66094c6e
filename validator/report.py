"""Violation and Report: the result of one validation, and the stable rule ids.

validate() returns Report.to_dict(): plain dict / list / str / int / bool only, so the C++ host
converts it without touching Python objects it does not know.
"""

# Stable rule ids. Tests and the host rely on these spellings.
SYNTAX_ERROR = "syntax-error"
CODE_TOO_LARGE = "code-too-large"
TOO_DEEP = "too-deep"
TOO_COMPLEX = "too-complex"
INTERNAL_ERROR = "internal-error"
IMPORT_BLOCKED = "import-blocked"
IMPORT_RELATIVE = "import-relative"
IMPORT_STAR = "import-star"
BUILTIN_BLOCKED = "builtin-blocked"
ATTRIBUTE_DUNDER = "attribute-dunder"
ATTRIBUTE_PRIVATE = "attribute-private"
ATTRIBUTE_MODULE_PIVOT = "attribute-module-pivot"
ATTRIBUTE_INTERNAL = "attribute-internal"
ATTRIBUTE_SUBPROCESS = "attribute-subprocess"
OS_ATTRIBUTE = "os-attribute"
MODULE_ATTRIBUTE_BLOCKED = "module-attribute-blocked"
MATCH_DUNDER = "match-dunder"
FORMAT_ATTRIBUTE = "format-attribute"
FORMAT_DYNAMIC = "format-dynamic"
NAME_NONASCII_BLOCKED = "name-nonascii-blocked"
ATTRIBUTE_NETWORK = "attribute-network"
MODULE_VALUE = "module-value"
MODULE_ATTRIBUTE_WRITE = "module-attribute-write"
DECORATOR_ONLY = "decorator-only"
CLASS_HOOK = "class-hook"
CLASS_METACLASS = "class-metaclass"
CLASS_BASE = "class-base"
CLASS_DYNAMIC = "class-dynamic"
ANNOTATION_DYNAMIC = "annotation-dynamic"
MATCH_POSITIONAL = "match-positional"
TOOL_NOT_AWAITED = "tool-not-awaited"

RULES = (
    SYNTAX_ERROR, CODE_TOO_LARGE, TOO_DEEP, TOO_COMPLEX, INTERNAL_ERROR, IMPORT_BLOCKED,
    IMPORT_RELATIVE, IMPORT_STAR, BUILTIN_BLOCKED, ATTRIBUTE_DUNDER, ATTRIBUTE_PRIVATE,
    ATTRIBUTE_MODULE_PIVOT, ATTRIBUTE_INTERNAL, ATTRIBUTE_SUBPROCESS, OS_ATTRIBUTE,
    MODULE_ATTRIBUTE_BLOCKED, MATCH_DUNDER, FORMAT_ATTRIBUTE, FORMAT_DYNAMIC,
    NAME_NONASCII_BLOCKED, ATTRIBUTE_NETWORK, MODULE_VALUE, MODULE_ATTRIBUTE_WRITE,
    DECORATOR_ONLY, CLASS_HOOK, CLASS_METACLASS, CLASS_BASE, CLASS_DYNAMIC, ANNOTATION_DYNAMIC,
    MATCH_POSITIONAL, TOOL_NOT_AWAITED,
)


class Violation:
    """One finding. `line` is 1-based (0: no location), `col` a 0-based UTF-8 byte offset like
    ast's col_offset."""

    __slots__ = ("line", "col", "rule", "message", "hint")

    def __init__(self, line, col, rule, message, hint):
        self.line = line
        self.col = col
        self.rule = rule
        self.message = message
        self.hint = hint

    @classmethod
    def from_dict(cls, d):
        return cls(d["line"], d["col"], d["rule"], d["message"], d["hint"])

    def to_dict(self):
        return {"line": self.line, "col": self.col, "rule": self.rule,
                "message": self.message, "hint": self.hint}

    def _key(self):
        return (self.line, self.col, self.rule, self.message, self.hint)

    def __eq__(self, other):
        return isinstance(other, Violation) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return "Violation(%d:%d %s: %s)" % (self.line, self.col, self.rule, self.message)


class Report:
    """ok is True exactly when there are no violations."""

    __slots__ = ("violations",)

    def __init__(self, violations=()):
        self.violations = list(violations)

    @property
    def ok(self):
        return not self.violations

    @classmethod
    def from_dict(cls, d):
        return cls(Violation.from_dict(v) for v in d["violations"])

    def to_dict(self):
        return {"ok": not self.violations, "violations": [v.to_dict() for v in self.violations]}

    def __repr__(self):
        return "Report(ok=%s, violations=%r)" % (self.ok, self.violations)
