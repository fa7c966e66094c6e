"""Custom policies: lists replace the defaults, extra_* adjust them, bad policies are refused."""

import unittest

import validator
from validator import DEFAULT_POLICY, Policy, validate


def rules(code, policy=None):
    return [v["rule"] for v in validate(code, policy)["violations"]]


class ImportListTest(unittest.TestCase):
    def test_allowed_imports_replaces_the_default_list(self):
        policy = {"allowed_imports": ["math"]}
        self.assertEqual(rules("import math\nprint(math.pi)\n", policy), [])
        self.assertEqual(rules("import json\n", policy), ["import-blocked"])
        self.assertEqual(rules("import os\n", policy), ["import-blocked"])
        hint = validate("import json\n", policy)["violations"][0]["hint"]
        self.assertIn("allowed modules: math;", hint)

    def test_extra_allowed_package_allows_exactly_that_name(self):
        policy = {"extra_allowed_imports": ["xml"]}
        self.assertEqual(rules("import xml\n", policy), [])
        self.assertEqual(rules("import json\n", policy), [])  # defaults still in force
        self.assertEqual(rules("import xml.etree\n", policy), ["import-blocked"])

    def test_wildcard_allows_submodules(self):
        policy = {"extra_allowed_imports": ["xml.*"]}
        self.assertEqual(rules("import xml.etree.ElementTree as ET\n", policy), [])
        self.assertEqual(rules("from xml.dom import minidom\n", policy), [])
        self.assertEqual(rules("import xml._private\n", policy), ["import-blocked"])

    def test_exact_submodule_entry(self):
        policy = {"extra_allowed_imports": ["xml.etree"]}
        self.assertEqual(rules("from xml.etree import ElementTree\n", policy), [])
        self.assertEqual(rules("import xml.dom\n", policy), ["import-blocked"])

    def test_extra_blocked_imports_rejects_a_default(self):
        policy = {"extra_blocked_imports": ["json"]}
        self.assertEqual(rules("import json\n", policy), ["import-blocked"])
        self.assertEqual(rules("import json.decoder\n", policy), ["import-blocked"])
        self.assertEqual(rules("from json import loads\n", policy), ["import-blocked"])
        message = validate("import json\n", policy)["violations"][0]["message"]
        self.assertIn("block list", message)
        self.assertEqual(rules("import math\n", policy), [])

    def test_blocked_wins_over_allowed(self):
        policy = {"extra_allowed_imports": ["xml"], "extra_blocked_imports": ["xml"]}
        self.assertEqual(rules("import xml\n", policy), ["import-blocked"])
        policy = {"allowed_imports": ["json"], "extra_blocked_imports": ["json"]}
        self.assertEqual(rules("import json\n", policy), ["import-blocked"])

    def test_naming_a_default_blocked_module_exactly_allows_it(self):
        policy = {"extra_allowed_imports": ["threading"]}
        self.assertEqual(rules("import threading\n", policy), [])

    def test_wildcard_above_a_blocked_module_does_not_allow_it(self):
        policy = {"extra_allowed_imports": ["asyncio.*"]}
        self.assertEqual(rules("import asyncio.events\n", policy), [])
        self.assertEqual(rules("import asyncio.subprocess\n", policy), ["import-blocked"])
        policy = {"extra_allowed_imports": ["concurrent.*"]}
        self.assertEqual(rules("import concurrent.futures\n", policy), [])

    def test_subprocess_is_never_importable(self):
        policy = {"extra_allowed_imports": ["subprocess"]}
        self.assertIn("import-blocked", rules("import subprocess\n", policy))

    def test_future_imports_are_always_allowed(self):
        self.assertEqual(rules("from __future__ import annotations\n",
                               {"allowed_imports": []}), [])


class BuiltinAndDunderListTest(unittest.TestCase):
    def test_blocked_builtins_replaces_the_default_list(self):
        policy = {"blocked_builtins": ["print"]}
        self.assertEqual(rules("print('hi')\n", policy), ["builtin-blocked"])
        # Replacing means replacing: eval is no longer on the list in force.
        self.assertEqual(rules("x = eval('1 + 1')\n", policy), [])
        # The names that hand out the builtins themselves stay blocked whatever the list.
        self.assertEqual(rules("b = __builtins__\n", policy), ["builtin-blocked"])

    def test_empty_builtin_list(self):
        self.assertEqual(rules("getattr(x, 'y')\n", {"blocked_builtins": []}), [])

    def test_allowed_dunder_attributes_replaces_the_default_list(self):
        policy = {"allowed_dunder_attributes": ["__class__"]}
        self.assertEqual(rules("c = x.__class__\n", policy), [])
        self.assertEqual(rules("n = f.__name__\n", policy), ["attribute-dunder"])


class OtherKeysTest(unittest.TestCase):
    def test_allow_dynamic_format(self):
        code = "t = load()\nprint(t.format(x))\n"
        self.assertEqual(rules(code), ["format-dynamic"])
        self.assertEqual(rules(code, {"allow_dynamic_format": True}), [])
        # A literal template is still read field by field.
        self.assertEqual(rules("'{0.__class__}'.format(x)\n", {"allow_dynamic_format": True}),
                         ["format-attribute"])

    def test_max_code_bytes(self):
        self.assertEqual(rules("x = 12345\n", {"max_code_bytes": 5}), ["code-too-large"])
        self.assertEqual(rules("x = 1\n", {"max_code_bytes": 6}), [])
        # Measured in UTF-8 bytes: 'é' is two.
        self.assertEqual(rules("'éé'", {"max_code_bytes": 5}), ["code-too-large"])
        self.assertEqual(rules("'éé'", {"max_code_bytes": 6}), [])

    def test_max_ast_depth(self):
        code = "x = [[[1]]]\n"
        self.assertEqual(rules(code, {"max_ast_depth": 6}), [])
        self.assertEqual(rules(code, {"max_ast_depth": 5}), ["too-deep"])
        self.assertEqual(rules("x = " + "[" * 150 + "]" * 150, {"max_ast_depth": 200}), [])

    def test_validation_timeout_ms_is_accepted(self):
        self.assertEqual(rules("x = 1\n", {"validation_timeout_ms": 0}), [])
        self.assertEqual(rules("x = 1\n", {"validation_timeout_ms": 5000}), [])

    def test_none_and_empty_dict_are_the_defaults(self):
        code = "import os\nos.system('x')\n"
        self.assertEqual(validate(code, None), validate(code, {}))
        self.assertEqual(validate(code, None), validate(code, DEFAULT_POLICY))
        self.assertEqual(validate(code, None), validate(code, Policy()))


class BadPolicyTest(unittest.TestCase):
    def assertRefused(self, policy, text):
        with self.assertRaises(ValueError) as ctx:
            validate("x = 1\n", policy)
        self.assertIn(text, str(ctx.exception))

    def test_unknown_key(self):
        self.assertRefused({"allowed_import": ["math"]}, "allowed_import")
        self.assertRefused({"allowed_import": ["math"]}, "known:")

    def test_wrong_types(self):
        self.assertRefused({"allowed_imports": "math"}, "allowed_imports")
        self.assertRefused({"extra_blocked_imports": [1]}, "extra_blocked_imports")
        self.assertRefused({"blocked_builtins": [""]}, "blocked_builtins")
        self.assertRefused({"allow_dynamic_format": 1}, "allow_dynamic_format")
        self.assertRefused({"max_code_bytes": True}, "max_code_bytes")
        self.assertRefused({"max_code_bytes": 0}, "max_code_bytes")
        self.assertRefused({"max_ast_depth": 0}, "max_ast_depth")
        self.assertRefused({"max_ast_depth": 1.5}, "max_ast_depth")
        self.assertRefused({"validation_timeout_ms": -1}, "validation_timeout_ms")
        self.assertRefused({"allowed_imports": [["math"]]}, "allowed_imports")

    def test_not_a_dict(self):
        self.assertRefused(["math"], "dict")

    def test_cached_entry_does_not_hide_a_type_error(self):
        validate("x = 1\n", {"allow_dynamic_format": True})
        self.assertRefused({"allow_dynamic_format": 1}, "allow_dynamic_format")

    def test_code_of_the_wrong_type(self):
        with self.assertRaises(TypeError):
            validate(None)


class DefaultsTest(unittest.TestCase):
    def test_default_policy_spells_out_the_defaults(self):
        self.assertEqual(set(DEFAULT_POLICY), set(validator.POLICY_KEYS))
        self.assertIn("pathlib", DEFAULT_POLICY["allowed_imports"])
        self.assertIn("eval", DEFAULT_POLICY["blocked_builtins"])
        self.assertNotIn("open", DEFAULT_POLICY["blocked_builtins"])
        self.assertIn("__init__", DEFAULT_POLICY["allowed_dunder_attributes"])
        self.assertEqual(DEFAULT_POLICY["max_code_bytes"], 65536)
        self.assertEqual(DEFAULT_POLICY["max_ast_depth"], 100)
        self.assertIs(DEFAULT_POLICY["allow_dynamic_format"], False)

    def test_mutating_default_policy_changes_nothing(self):
        copy = dict(DEFAULT_POLICY)
        try:
            DEFAULT_POLICY["max_code_bytes"] = 1
            self.assertEqual(rules("x = 1\n"), [])
        finally:
            DEFAULT_POLICY.clear()
            DEFAULT_POLICY.update(copy)

    def test_policy_round_trip(self):
        p = Policy.from_dict({"extra_allowed_imports": ["xml"], "max_ast_depth": 50})
        self.assertEqual(Policy.from_dict(p.to_dict()), Policy.from_dict(p.to_dict()))
        self.assertEqual(p.to_dict()["extra_allowed_imports"], ["xml"])
        with self.assertRaises(AttributeError):
            p.max_ast_depth = 3


if __name__ == "__main__":
    unittest.main()
