"""The contract the C++ host relies on: signature, plain types, rule ids, exports."""

import unittest

import validator
from validator import RULES, Report, Violation, validate, validate_report


class ApiTest(unittest.TestCase):
    def test_exports(self):
        for name in ("validate", "Policy", "Violation", "Report", "DEFAULT_POLICY"):
            self.assertTrue(hasattr(validator, name), name)

    def test_result_uses_plain_types_only(self):
        report = validate("import sys\nx = eval\ny.__dict__\n")
        self.assertIs(type(report), dict)
        self.assertIs(type(report["ok"]), bool)
        self.assertIs(type(report["violations"]), list)
        for v in report["violations"]:
            self.assertIs(type(v), dict)
            self.assertEqual([type(v[k]) for k in ("line", "col", "rule", "message", "hint")],
                             [int, int, str, str, str])

    def test_policy_is_optional_and_positional(self):
        self.assertEqual(validate("x = 1"), validate("x = 1", None))
        self.assertEqual(validate("x = 1", {}), validate(code="x = 1", policy={}))

    def test_rule_ids_are_stable(self):
        self.assertEqual(RULES, (
            "syntax-error", "code-too-large", "too-deep", "too-complex", "internal-error",
            "import-blocked", "import-relative", "import-star", "builtin-blocked",
            "attribute-dunder", "attribute-private", "attribute-module-pivot",
            "attribute-internal", "attribute-subprocess", "os-attribute",
            "module-attribute-blocked", "match-dunder", "format-attribute", "format-dynamic",
            "name-nonascii-blocked", "attribute-network", "module-value",
            "module-attribute-write", "decorator-only", "class-hook", "class-metaclass",
            "class-base", "class-dynamic", "annotation-dynamic", "match-positional",
            "tool-not-awaited"))

    def test_report_objects(self):
        report = validate_report("x = eval")
        self.assertIsInstance(report, Report)
        self.assertFalse(report.ok)
        (v,) = report.violations
        self.assertIsInstance(v, Violation)
        self.assertEqual((v.line, v.col, v.rule), (1, 4, "builtin-blocked"))
        self.assertEqual(Report.from_dict(report.to_dict()).to_dict(), report.to_dict())
        self.assertTrue(validate_report("x = 1").ok)

    def test_importing_is_light(self):
        import subprocess
        import sys
        code = ("import sys, validator; heavy = {'tokenize', 'dataclasses', 'inspect', "
                "'typing', 'unicodedata', 'json', 're', 'ast', 'contextlib', 'enum'} & set(sys.modules); "
                "print(sorted(heavy))")
        out = subprocess.run([sys.executable, "-I", "-c", "import sys; sys.path.insert(0, %r); "
                              % validator.__path__[0].rsplit("/", 1)[0] + code],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(out.stdout.strip(), "[]", out.stderr)


if __name__ == "__main__":
    unittest.main()
