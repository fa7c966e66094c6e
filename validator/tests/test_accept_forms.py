"""The accepted forms (validator/forms.py, README "Accepted forms"): each is accepted, and each
dangerous neighbour of it is rejected with the rule and a hint that names something that runs.

The run-time half (the same forms with the validator off) is tests/python/test_runner.py
GuardedFormsTest.
"""

import unittest

from validator import validate

ACCEPT = [
    ("getattr_literal", "class A:\n    x = 1\na = A()\nprint(getattr(a, 'x'))\n"),
    ("getattr_default", "r = {}\nv = getattr(r, 'status', 'unknown')\n"),
    ("hasattr_literal", "if hasattr(result, 'items'):\n    print(list(result.items()))\n"),
    ("getattr_on_module_public", "import math\nf = getattr(math, 'sqrt', None)\n"),
    ("vars_of_instance", "class C:\n    def __init__(self):\n        self.a = 1\n"
                         "print(vars(C()))\n"),
    ("dict_read", "class C:\n    pass\nc = C()\nc.a = 1\nprint(c.__dict__)\n"),
    ("dict_read_methods", "for k, v in obj.__dict__.items():\n    print(k, v)\n"
                          "x = obj.__dict__.get('a')\nn = len(obj.__dict__)\n"),
    ("dict_read_subscript", "v = obj.__dict__['a']\n"),
    ("json_of_vars", "import json\nprint(json.dumps(vars(obj)))\n"),
    ("import_sys_fields",
     "import sys\nprint(sys.version, sys.version_info.major, sys.platform, sys.maxsize,\n"
     "      sys.byteorder, sys.float_info.max, sys.int_info.bits_per_digit, sys.argv)\n"
     "sys.stdout.write('x\\n')\nsys.stdout.flush()\nsys.stderr.write('e\\n')\n"
     "print('warn', file=sys.stderr)\nprint(sys.getsizeof([]), sys.getrecursionlimit())\n"),
    ("import_sys_alias", "import sys as s\nprint(s.version)\n"),
    ("from_sys_import", "from sys import version, stdout\nstdout.write(version)\n"),
    ("sys_stream_alias", "import sys\nout = sys.stdout\nout.write('x')\n"),
    ("import_sys_in_function", "def f():\n    import sys\n    return sys.platform\n"),
    ("import_secrets",
     "import secrets\nprint(secrets.token_hex(8), secrets.token_bytes(4),\n"
     "      secrets.token_urlsafe(8), secrets.choice('abc'), secrets.randbelow(10),\n"
     "      secrets.compare_digest('a', 'a'))\n"),
    ("try_import_numpy",
     "try:\n    import numpy as np\nexcept ImportError:\n    np = None\n"),
    ("try_from_pandas",
     "try:\n    from pandas import DataFrame\nexcept (ImportError, ValueError):\n"
     "    DataFrame = None\n"),
    ("try_import_module_not_found",
     "try:\n    import yaml\n    HAVE = True\nexcept ModuleNotFoundError:\n    HAVE = False\n"),
    ("try_import_nested_if",
     "try:\n    if True:\n        import numpy\nexcept ImportError:\n    pass\n"),
    ("class_statement_and_dataclass",
     "from dataclasses import dataclass, asdict\nimport enum\n@dataclass\nclass P:\n"
     "    x: int\nclass Color(enum.Enum):\n    RED = 1\nprint(asdict(P(1)), Color.RED)\n"),
]

# (test name, code, expected rule, text the message must contain or None)
REJECT = [
    ("getattr_dunder_class", "getattr(x, '__class__')\n", "builtin-blocked", "__class__"),
    ("getattr_private", "getattr(x, '_private')\n", "builtin-blocked", "_private"),
    ("getattr_computed", "name = 'a'\ngetattr(x, name)\n", "builtin-blocked",
     "not a string literal"),
    ("getattr_concatenated", "getattr(x, '_' + '_class__')\n", "builtin-blocked",
     "not a string literal"),
    ("getattr_keyword_default", "getattr(x, 'a', default=None)\n", "builtin-blocked",
     "getattr"),
    ("getattr_starred", "getattr(*args)\n", "builtin-blocked", "getattr"),
    ("getattr_as_value", "g = getattr\ng(x, 'a')\n", "builtin-blocked", "getattr"),
    ("getattr_internal", "getattr(gen, 'gi_frame')\n", "attribute-internal", "gi_frame"),
    ("getattr_pivot", "import datetime\ngetattr(datetime, 'sys')\n",
     "attribute-module-pivot", "sys"),
    ("getattr_gadget", "import operator\ngetattr(operator, 'attrgetter')\n",
     "module-attribute-blocked", "attrgetter"),
    ("getattr_os", "import os\ngetattr(os, 'system')('id')\n", "os-attribute", "os.system"),
    ("getattr_module_private", "import random\ngetattr(random, 'Random')\n"
                               "getattr(random, '_os')\n", "builtin-blocked", "_os"),
    ("getattr_not_identifier", "getattr(x, 'a.b')\n", "builtin-blocked", "a.b"),
    ("hasattr_dunder_dict", "hasattr(x, '__dict__')\n", "builtin-blocked", "__dict__"),
    ("hasattr_computed", "hasattr(x, name)\n", "builtin-blocked", "not a string literal"),
    ("sys_modules", "import sys\nsys.modules['os']\n", "import-blocked", "sys.modules"),
    ("sys_getframe", "import sys\nsys._getframe()\n", "attribute-private", "_getframe"),
    ("sys_stdout_buffer", "import sys\nsys.stdout.buffer.write(b'x')\n", "import-blocked",
     "sys.stdout.buffer"),
    ("sys_stream_alias_buffer", "import sys\nout = sys.stderr\nout.buffer\n", "import-blocked",
     "sys.stderr.buffer"),
    ("sys_stdout_class", "import sys\nsys.stdout.__class__\n", "attribute-dunder", "__class__"),
    ("sys_type", "import sys\ntype(sys)\n", "module-value", "sys"),
    ("sys_as_value", "import sys\nm = [sys]\n", "module-value", "sys"),
    ("sys_exit", "import sys\nsys.exit(1)\n", "import-blocked", "sys.exit"),
    ("sys_path", "import sys\nsys.path.append('/tmp')\n", "import-blocked", "sys.path"),
    ("sys_dict", "import sys\nsys.__dict__\n", "module-value", "sys"),
    ("from_sys_import_modules", "from sys import modules\n", "import-blocked", "sys.modules"),
    ("from_sys_import_private", "from sys import _getframe\n", "import-blocked", "_getframe"),
    ("sys_submodule", "import sys.monitoring\n", "import-blocked", "sys"),
    ("sys_user_blocked", None, None, None),  # see test_user_block_of_sys_wins
    ("vars_without_argument", "v = vars()\n", "builtin-blocked", "vars"),
    ("vars_two_arguments", "v = vars(a, b)\n", "builtin-blocked", "vars"),
    ("vars_of_module", "import json\nvars(json)\n", "module-value", "json"),
    ("vars_of_environ", "import os\nvars(os.environ)\n", "builtin-blocked", "vars"),
    ("dict_subscript_store", "x.__dict__['a'] = 1\n", "attribute-dunder", "__dict__"),
    ("dict_subscript_augassign", "x.__dict__['a'] += 1\n", "attribute-dunder", "__dict__"),
    ("dict_subscript_del", "del x.__dict__['a']\n", "attribute-dunder", "__dict__"),
    ("dict_update", "x.__dict__.update({'a': 1})\n", "attribute-dunder", "__dict__"),
    ("dict_setdefault", "x.__dict__.setdefault('a', 1)\n", "attribute-dunder", "__dict__"),
    ("dict_assign", "x.__dict__ = {}\n", "attribute-dunder", "__dict__"),
    ("dict_augassign", "x.__dict__ |= {'a': 1}\n", "attribute-dunder", "__dict__"),
    ("dict_del", "del x.__dict__\n", "attribute-dunder", "__dict__"),
    ("dict_of_module", "import json\njson.__dict__\n", "module-value", "json"),
    ("dict_of_environ", "import os\nos.environ.__dict__\n", "attribute-dunder", "__dict__"),
    ("try_import_subprocess", "try:\n    import subprocess\nexcept ImportError:\n    pass\n",
     "import-blocked", "subprocess"),
    ("try_import_ctypes", "try:\n    import ctypes\nexcept ImportError:\n    pass\n",
     "import-blocked", "ctypes"),
    ("try_import_socket", "try:\n    import socket\nexcept ImportError:\n    pass\n",
     "import-blocked", "socket"),
    ("try_import_importlib", "try:\n    import importlib\nexcept ImportError:\n    pass\n",
     "import-blocked", "importlib"),
    ("try_from_os_import_system", "try:\n    from os import system\nexcept ImportError:\n"
                                  "    pass\n", "os-attribute", "os.system"),
    ("try_import_private", "try:\n    import _socket\nexcept ImportError:\n    pass\n",
     "import-blocked", "_socket"),
    ("try_import_blocked_submodule",
     "try:\n    import asyncio.subprocess\nexcept ImportError:\n    pass\n",
     "import-blocked", "subprocess"),
    ("try_import_stdlib_off_the_list",
     "try:\n    import pydoc\nexcept ImportError:\n    pass\n", "import-blocked", "pydoc"),
    ("try_import_runner_module",
     "try:\n    import runner_cold\nexcept ImportError:\n    pass\n", "import-blocked",
     "runner_cold"),
    ("try_import_validator",
     "try:\n    from validator import policy\nexcept ImportError:\n    pass\n",
     "import-blocked", "validator"),
    ("try_import_other_handler", "try:\n    import numpy\nexcept ValueError:\n    pass\n",
     "import-blocked", "numpy"),
    ("import_numpy_without_try", "import numpy\n", "import-blocked", "numpy"),
    ("try_import_in_handler", "try:\n    pass\nexcept ImportError:\n    import numpy\n",
     "import-blocked", "numpy"),
]


class AcceptFormsTest(unittest.TestCase):

    def test_user_block_of_sys_wins(self):
        report = validate("import sys\nprint(sys.version)\n", {"extra_blocked_imports": ["sys"]})
        self.assertFalse(report["ok"])
        self.assertEqual([v["rule"] for v in report["violations"]], ["import-blocked"])

    def test_a_policy_that_allows_sys_gets_the_real_module(self):
        # The runner then leaves `import sys` alone (the guard's patterns name sys).
        code = "import sys\nprint(sys.modules)\nfrom sys import path\n"
        self.assertTrue(validate(code, {"extra_allowed_imports": ["sys"]})["ok"])
        self.assertFalse(validate(code)["ok"])

    def test_unavailable_module_hint_names_the_try_fallback(self):
        (v,) = validate("import numpy\n")["violations"]
        self.assertIn("`except ImportError:`", v["hint"])

    def test_getattr_hint_names_the_literal_form(self):
        (v,) = validate("getattr(x, name)\n")["violations"]
        self.assertIn('getattr(obj, "name", default)', v["hint"])

    def test_vars_hint_names_asdict_and_to_dict(self):
        (v,) = validate("vars()\n")["violations"]
        self.assertIn("dataclasses.asdict", v["hint"])
        self.assertIn("to_dict()", v["hint"])

    def test_sys_hint_names_the_fields(self):
        (v,) = validate("import sys\nsys.executable\n")["violations"]
        self.assertIn("version_info", v["hint"])


class RuntimeTwinTest(unittest.TestCase):
    """The runner's guarded getattr refuses at least what the validator refuses by name: its
    list (resources/runner_curated.py _INTERNAL_NAMES) is read from the source, not imported."""

    def test_the_runners_refused_names_cover_the_validators(self):
        import ast
        import os
        from validator import policy
        path = os.path.join(os.path.dirname(__file__), "..", "..", "resources",
                            "runner_curated.py")
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
        names = None
        for node in tree.body:
            if (isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
                    and node.targets[0].id == "_INTERNAL_NAMES"):
                names = set(ast.literal_eval(node.value.args[0]))
        self.assertIsNotNone(names)
        wanted = set(policy.INTERNAL_ATTRIBUTES) | {
            p for p in policy.PIVOT_ATTRIBUTES_ANYWHERE if not p.startswith("_")}
        self.assertEqual(wanted - names, set())


class HintsNameAnAlternativeTest(unittest.TestCase):
    """Every refused builtin and module has a hint of its own that names something that runs
    (not the generic fallback text)."""

    def test_every_blocked_builtin_has_its_own_hint(self):
        from validator.policy import BUILTIN_HINTS, DEFAULT_BLOCKED_BUILTINS
        for name in DEFAULT_BLOCKED_BUILTINS:
            self.assertIn(name, BUILTIN_HINTS, name)
            report = validate("x = %s\n" % name)
            self.assertFalse(report["ok"], name)
            self.assertEqual(report["violations"][0]["hint"], BUILTIN_HINTS[name])

    def test_every_blocked_module_hint_names_what_to_use(self):
        from validator.policy import DEFAULT_BLOCKED_MODULES
        for name in DEFAULT_BLOCKED_MODULES:
            if name in ("sys", "os"):
                continue  # accepted: the view; os.environ and os.path
            report = validate("import %s\n" % name)
            self.assertFalse(report["ok"], name)
            hint = report["violations"][0]["hint"]
            # The allowed modules, or the host's tools, follow whatever the hint says first.
            self.assertTrue("allowed modules:" in hint or "call_tool" in hint, (name, hint))


def _accept(code):
    def test(self):
        report = validate(code)
        self.assertTrue(report["ok"], report["violations"])
    return test


def _reject(code, rule, text):
    def test(self):
        report = validate(code)
        self.assertFalse(report["ok"], "accepted: %r" % code)
        rules = [v["rule"] for v in report["violations"]]
        self.assertIn(rule, rules, report["violations"])
        if text is not None:
            messages = [v["message"] for v in report["violations"] if v["rule"] == rule]
            self.assertTrue(any(text in m for m in messages),
                            "no %s message mentions %r: %r" % (rule, text, messages))
        for v in report["violations"]:
            self.assertTrue(v["message"] and v["hint"], v)
    return test


for _name, _code in ACCEPT:
    setattr(AcceptFormsTest, "test_accepts_" + _name, _accept(_code))
for _name, _code, _rule, _text in REJECT:
    if _code is not None:
        setattr(AcceptFormsTest, "test_rejects_" + _name, _reject(_code, _rule, _text))
