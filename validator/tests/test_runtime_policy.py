"""runtime_import_patterns: the runtime guard's import patterns decide exactly as the validator."""

import unittest

from validator.policy import compiled
from validator.runtime_policy import (blocked_builtin_names, pattern_allows, pattern_refuses,
                                      runtime_import_patterns)

# Names around every kind of entry: exact, submodules of exact entries, blocked defaults,
# wildcards and what lies below them, private parts, subprocess spellings.
NAMES = (
    "math", "json", "json.decoder", "json.tool", "os", "os.path", "collections",
    "collections.abc", "asyncio", "asyncio.subprocess", "asyncio.events", "sys", "socket",
    "subprocess", "ctypes", "ctypes.util", "xml", "xml.etree", "xml.etree.ElementTree",
    "xml._private", "xml.dom.minidom", "concurrent", "concurrent.futures",
    "concurrent.futures.thread", "threading", "importlib", "importlib.util", "email",
    "email.mime.text", "numpy", "numpy.linalg", "numpy._core", "pkg", "pkg.sub", "pkg.sub.deep",
    "pkg.sub.subprocess", "pkg.SubProcess", "__future__", "typing", "dataclasses", "enum",
    "multiprocessing", "multiprocessing.pool", "urllib", "urllib.parse", "http.client",
)

POLICIES = (
    None,
    {"allowed_imports": ["math"]},
    {"extra_allowed_imports": ["xml"]},
    {"extra_allowed_imports": ["xml.*"]},
    {"extra_allowed_imports": ["xml.etree"]},
    {"extra_blocked_imports": ["json"]},
    {"extra_blocked_imports": ["json.decoder"]},
    {"extra_allowed_imports": ["threading"]},
    {"extra_allowed_imports": ["asyncio.*"]},
    {"extra_allowed_imports": ["concurrent.*"]},
    {"extra_allowed_imports": ["concurrent.futures.*"]},
    {"extra_allowed_imports": ["pkg.*"], "extra_blocked_imports": ["pkg.sub"]},
    {"extra_allowed_imports": ["pkg.sub.*"], "extra_blocked_imports": ["pkg"]},
    {"extra_allowed_imports": ["numpy.*", "urllib.*", "email.*", "multiprocessing.*"]},
    {"allowed_imports": ["os", "ctypes", "ctypes.util", "importlib.*"]},
    {"allowed_imports": ["subprocess", "pkg.*"]},
)


class RuntimeImportPatternsTest(unittest.TestCase):
    def test_patterns_decide_every_name_as_the_validator_does(self):
        for policy in POLICIES:
            cp = compiled(policy)
            patterns = runtime_import_patterns(policy)
            for name in NAMES:
                with self.subTest(policy=policy, name=name):
                    self.assertEqual(pattern_allows(patterns, name),
                                     cp.import_allowed(name) is None, patterns)

    def test_default_patterns_name_the_default_list(self):
        patterns = runtime_import_patterns(None)
        self.assertIn("math", patterns)
        self.assertIn("os", patterns)  # allowed exactly although it is also a blocked default
        self.assertIn("__future__", patterns)
        self.assertNotIn("sys", patterns)
        self.assertFalse(any(p.endswith(".*") for p in patterns))
        # Every blocked default is a "!" pattern: the guard refuses those (PermissionError) and
        # reports any other module as not available (ModuleNotFoundError).
        self.assertIn("!sys", patterns)
        self.assertIn("!ctypes", patterns)
        self.assertTrue(pattern_refuses(patterns, "sys"))
        self.assertTrue(pattern_refuses(patterns, "ctypes.util"))
        self.assertTrue(pattern_refuses(patterns, "asyncio.subprocess"))
        self.assertFalse(pattern_refuses(patterns, "numpy"))
        self.assertFalse(pattern_refuses(patterns, "pandas.core"))

    def test_user_blocks_become_deny_patterns_and_drop_the_wildcards_below_them(self):
        patterns = runtime_import_patterns({"extra_allowed_imports": ["pkg.sub.*"],
                                            "extra_blocked_imports": ["pkg"]})
        self.assertIn("!pkg", patterns)
        self.assertNotIn("pkg.sub.*", patterns)

    def test_cached_per_policy_and_callers_cannot_change_the_cache(self):
        first = runtime_import_patterns({"extra_allowed_imports": ["xml.*"]})
        first.append("sys")
        self.assertNotIn("sys", runtime_import_patterns({"extra_allowed_imports": ["xml.*"]}))

    def test_a_malformed_policy_is_refused(self):
        with self.assertRaises(ValueError):
            runtime_import_patterns({"no_such_key": 1})


class BlockedBuiltinNamesTest(unittest.TestCase):
    """What the model's description lists as blocked: the policy's builtins, sorted."""

    def test_defaults(self):
        names = blocked_builtin_names()
        self.assertEqual(names, sorted(names))
        for name in ("eval", "exec", "getattr", "__import__", "globals"):
            self.assertIn(name, names)
        self.assertNotIn("print", names)

    def test_a_policy_list_replaces_the_defaults(self):
        self.assertEqual(blocked_builtin_names({"blocked_builtins": ["open", "eval"]}),
                         ["eval", "open"])


if __name__ == "__main__":
    unittest.main()
