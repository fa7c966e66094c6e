"""Snippets the validator must reject, each with the rule it must report.

One generated test method per snippet, so a regression names the snippet.
"""

import unittest

from validator import validate

# (test name, code, expected rule, text the message of that rule must contain or None)
REJECT = [
    # --- process spawning -------------------------------------------------------------------
    ("os_system", "import os\nos.system('id')\n", "os-attribute", "os.system"),
    ("os_popen", "import os\nout = os.popen('ls').read()\n", "os-attribute", "os.popen"),
    ("os_fork", "import os\npid = os.fork()\n", "os-attribute", "os.fork"),
    ("os_execv", "import os\nos.execv('/bin/sh', ['sh'])\n", "os-attribute", "os.execv"),
    ("os_spawnl", "import os\nos.spawnl(0, '/bin/ls', 'ls')\n", "os-attribute", "os.spawnl"),
    ("os_kill", "import os\nos.kill(1, 9)\n", "os-attribute", "os.kill"),
    ("os_posix_spawn", "import os\nos.posix_spawn('/bin/ls', ['ls'], {})\n", "os-attribute",
     "os.posix_spawn"),
    ("os_system_without_import", "os.system('id')\n", "os-attribute", "os.system"),
    ("subprocess_import", "import subprocess\nsubprocess.run(['ls'])\n", "import-blocked",
     "subprocess"),
    ("subprocess_from_import", "from subprocess import run\nrun(['ls'])\n", "import-blocked",
     "subprocess"),
    ("asyncio_create_subprocess_exec",
     "import asyncio\nproc = await asyncio.create_subprocess_exec('ls')\n",
     "attribute-subprocess", "create_subprocess_exec"),
    ("asyncio_create_subprocess_shell",
     "import asyncio\nproc = await asyncio.create_subprocess_shell('ls')\n",
     "module-attribute-blocked", "asyncio.create_subprocess_shell"),
    ("asyncio_from_import_subprocess_shell",
     "from asyncio import create_subprocess_shell\n", "module-attribute-blocked", None),
    ("asyncio_subprocess_module", "import asyncio.subprocess\n", "import-blocked", None),
    ("loop_subprocess_exec",
     "import asyncio\nloop = asyncio.get_running_loop()\nawait loop.subprocess_exec(p, 'ls')\n",
     "attribute-subprocess", "subprocess_exec"),
    ("pty_spawn", "import pty\npty.spawn('/bin/sh')\n", "import-blocked", "pty"),
    ("multiprocessing", "import multiprocessing\nmultiprocessing.Process(target=f).start()\n",
     "import-blocked", "multiprocessing"),
    ("name_containing_subprocess", "run_subprocess('ls')\n", "attribute-subprocess", None),

    # --- dynamic import -------------------------------------------------------------------------
    ("dunder_import", "m = __import__('os')\n", "builtin-blocked", "__import__"),
    ("importlib_import", "import importlib\nimportlib.import_module('os')\n",
     "import-blocked", "importlib"),
    ("importlib_from_import", "from importlib import import_module\n", "import-blocked",
     "importlib"),
    ("getattr_import_module",
     "import json\nimp = getattr(json.decoder, 'importlib')\nimp.import_module('os')\n",
     "attribute-module-pivot", "importlib"),
    ("builtins_dunder_import", "__builtins__.__import__('os')\n", "builtin-blocked",
     "__builtins__"),
    ("loader_load_module", "__loader__.load_module('os')\n", "builtin-blocked", "__loader__"),
    ("spec_loader", "spec = __spec__\n", "builtin-blocked", "__spec__"),

    # --- module pivots ---------------------------------------------------------------------------
    ("datetime_sys", "import datetime\ndatetime.sys.modules['os']\n",
     "attribute-module-pivot", "sys"),
    ("enum_bltns", "import enum\nenum.bltns.eval('1')\n", "attribute-module-pivot", "bltns"),
    ("dataclasses_builtins", "import dataclasses\nb = dataclasses.builtins\n",
     "attribute-module-pivot", "builtins"),
    ("uuid_os", "import uuid\nuuid.os.system('id')\n", "attribute-module-pivot", None),
    ("random_private_os", "import random\nrandom._os.system('id')\n", "attribute-private",
     "random._os"),
    ("collections_private_sys", "import collections\nm = collections._sys.modules\n",
     "attribute-private", "collections._sys"),
    ("typing_sys", "import typing\ntyping.sys.modules\n", "attribute-module-pivot", None),
    ("asyncio_socket_chain", "import asyncio\ns = asyncio.base_events.socket.socket()\n",
     "attribute-module-pivot", "socket"),
    ("dataclasses_inspect", "import dataclasses\ndataclasses.inspect.currentframe()\n",
     "attribute-module-pivot", "inspect"),
    ("pathlib_os", "import pathlib\npathlib.os.system('id')\n", "attribute-module-pivot", None),
    ("os_path_os", "import os.path\nos.path.os.system('id')\n", "attribute-module-pivot", None),
    ("from_os_import_sys", "from os import sys\n", "import-blocked", "sys"),
    ("module_alias_then_pivot",
     "import asyncio\nev = asyncio.base_events\nev.socket.socket()\n",
     "attribute-module-pivot", "socket"),
    ("pivot_on_any_object", "x.subprocess.run(['ls'])\n", "attribute-module-pivot", None),

    # --- builtins escapes ------------------------------------------------------------------------
    ("eval_as_value", "f = eval\nf('1')\n", "builtin-blocked", "eval"),
    ("eval_in_list", "fs = [eval]\nfs[0]('1')\n", "builtin-blocked", "eval"),
    ("exec_in_dict", "x = {'e': exec}\n", "builtin-blocked", "exec"),
    ("getattr_call", "getattr(x, y)\n", "builtin-blocked", "getattr"),
    ("builtins_subscript", "__builtins__['eval']('1')\n", "builtin-blocked", "__builtins__"),
    ("vars_call", "v = vars()\n", "builtin-blocked", "vars"),
    ("globals_call", "g = globals()\n", "builtin-blocked", "globals"),
    ("locals_call", "l = locals()\n", "builtin-blocked", "locals"),
    ("dir_call", "print(dir())\n", "builtin-blocked", "dir"),
    ("compile_default_arg", "def f(g=compile):\n    return g\n", "builtin-blocked", "compile"),
    ("eval_decorator", "@eval\ndef h():\n    pass\n", "builtin-blocked", "eval"),
    ("setattr_call", "setattr(obj, 'x', 1)\n", "builtin-blocked", "setattr"),
    ("hasattr_call", "if hasattr(obj, x):\n    pass\n", "builtin-blocked", "hasattr"),
    ("breakpoint_call", "breakpoint()\n", "builtin-blocked", "breakpoint"),
    ("input_call", "name = input('name? ')\n", "builtin-blocked", "input"),
    ("memoryview_call", "m = memoryview(b'abc')\n", "builtin-blocked", "memoryview"),
    ("exec_keyword_value", "run(fn=exec)\n", "builtin-blocked", "exec"),
    ("eval_lambda_default", "g = lambda e=eval: e('1')\n", "builtin-blocked", "eval"),
    ("exit_call", "exit(1)\n", "builtin-blocked", "exit"),
    ("class_body_rebinding",
     "def f(eval):\n    class K:\n        if False:\n            eval = 0\n"
     "        x = eval('1')\n", "builtin-blocked", "eval"),
    ("comprehension_first_iter", "xs = [dir for dir in dir()]\n", "builtin-blocked", "dir"),
    ("global_declared_in_function",
     "def f(vars):\n    def g():\n        global vars\n        return vars()\n",
     "builtin-blocked", "vars"),
    ("string_annotation_import",
     "def f(x: \"__import__('os').system('id')\"):\n    pass\n", "builtin-blocked",
     "string annotation"),

    # --- dunder introspection --------------------------------------------------------------------
    ("subclasses_walk", "().__class__.__bases__[0].__subclasses__()\n", "attribute-dunder",
     "__subclasses__"),
    ("function_globals", "def f():\n    pass\ng = f.__globals__\n", "attribute-dunder",
     "__globals__"),
    ("object_dict", "x.__dict__['a'] = 1\n", "attribute-dunder", "__dict__"),
    ("type_mro", "m = type(x).__mro__\n", "attribute-dunder", "__mro__"),
    ("reduce", "r = obj.__reduce__()\n", "attribute-dunder", "__reduce__"),
    ("getattribute", "x.__getattribute__('y')\n", "attribute-dunder", "__getattribute__"),
    ("function_code", "c = f.__code__\n", "attribute-dunder", "__code__"),
    ("closure", "cells = (lambda: 0).__closure__\n", "attribute-dunder", "__closure__"),
    ("class_name_via_class", "n = self.__class__.__name__\n", "attribute-dunder",
     "__class__"),
    ("dunder_assignment", "obj.__class__ = Other\n", "attribute-dunder", "__class__"),

    # --- frame walks ---------------------------------------------------------------------------
    ("generator_frame_back",
     "def gen():\n    yield 1\ng = gen()\nf = g.gi_frame.f_back\n", "attribute-internal",
     "gi_frame"),
    ("traceback_frame_globals",
     "try:\n    1 / 0\nexcept Exception as e:\n    tb = e.__traceback__\n"
     "    g = tb.tb_frame.f_globals\n", "attribute-internal", "tb_frame"),
    ("coroutine_frame", "async def c():\n    pass\nco = c()\nfr = co.cr_frame\n",
     "attribute-internal", "cr_frame"),
    ("code_bytes", "b = f.__code__.co_code\n", "attribute-internal", "co_code"),
    ("mro_method", "classes = type(x).mro()\n", "attribute-internal", "mro"),
    ("task_stack_globals",
     "import asyncio\nframe = asyncio.current_task().get_stack()[0]\ng = frame.f_globals\n",
     "attribute-internal", "f_globals"),
    ("async_generator_frame", "agen = ag()\nfr = agen.ag_frame\n", "attribute-internal",
     "ag_frame"),

    # --- format strings --------------------------------------------------------------------------
    ("format_class", "s = '{0.__class__}'.format(x)\n", "format-attribute", "__class__"),
    ("format_kw_globals", "s = '{x.__globals__}'.format(x=f)\n", "format-attribute",
     "__globals__"),
    ("format_private_key", "s = '{0[_x]}'.format(d)\n", "format-attribute", "[_x]"),
    ("format_init_globals", "s = '{0.__init__.__globals__}'.format(o)\n", "format-attribute",
     "__globals__"),
    ("format_map_dict", "s = '{a.__dict__}'.format_map(d)\n", "format-attribute",
     "__dict__"),
    ("format_nested_spec", "s = '{0:{1._secret}}'.format(1, o)\n", "format-attribute",
     "_secret"),
    ("format_frame_field", "s = '{0.gi_frame}'.format(g)\n", "format-attribute", "gi_frame"),
    ("format_dynamic_template", "t = make_template()\ns = t.format(x)\n", "format-dynamic",
     None),
    ("format_map_dynamic", "s = template.format_map(values)\n", "format-dynamic", None),
    ("format_concatenated_template", "s = ('{0.' + '__class__}').format(x)\n",
     "format-dynamic", None),
    ("format_unbound_literal", "s = str.format('{0.__class__}', x)\n", "format-attribute",
     "__class__"),
    ("format_unbound_dynamic", "s = str.format(t, x)\n", "format-dynamic", None),
    ("format_unbound_as_value", "fmt = str.format\n", "format-dynamic", None),
    ("format_constant_name", "T = '{0.__class__}'\ns = T.format(1)\n", "format-attribute",
     "__class__"),
    ("format_reassigned_name", "T = '{}'\nT = T + x\ns = T.format(1)\n", "format-dynamic",
     None),
    ("string_formatter", "import string\nstring.Formatter().get_field('0.__class__', [1], {})\n",
     "module-attribute-blocked", "string.Formatter"),

    # --- match patterns --------------------------------------------------------------------------
    ("match_class_dunder",
     "match x:\n    case object(__class__=c):\n        pass\n", "match-dunder", "__class__"),
    ("match_len_dunder",
     "match x:\n    case str(__len__=l):\n        pass\n", "match-dunder", "__len__"),
    ("match_mapping_dunder",
     "match x:\n    case {'__class__': c}:\n        pass\n", "match-dunder", "__class__"),
    ("match_internal",
     "match g:\n    case object(gi_frame=f):\n        pass\n", "match-dunder", "gi_frame"),

    # --- non-ASCII identifiers -------------------------------------------------------------------
    ("fullwidth_eval", "ｅｖａｌ('1')\n", "name-nonascii-blocked", "ｅｖａｌ"),
    ("math_bold_eval", "𝐞𝐯𝐚𝐥('1')\n", "name-nonascii-blocked", "𝐞𝐯𝐚𝐥"),
    ("math_italic_exec", "𝑒𝑥𝑒𝑐('1')\n", "name-nonascii-blocked", "exec"),
    ("modifier_letter_eval", "ᵉval('1')\n", "name-nonascii-blocked", "eval"),
    ("fullwidth_dunder_attribute", "c = x.__ｃｌａｓｓ__\n", "name-nonascii-blocked",
     "__class__"),
    ("fullwidth_getattr_in_fstring", "s = f\"{ｇｅｔａｔｔｒ(x, 'y')}\"\n",
     "name-nonascii-blocked", "getattr"),

    # --- os alias tracking -----------------------------------------------------------------------
    ("os_import_as", "import os as o\no.system('id')\n", "os-attribute", "os.system"),
    ("from_os_import_system", "from os import system\nsystem('id')\n", "os-attribute",
     "os.system"),
    ("os_assigned", "import os\np = os\np.kill(1, 9)\n", "os-attribute", "os.kill"),
    ("os_tuple_unpacking", "import os\na, b = os, 1\na.fork()\n", "os-attribute", "os.fork"),
    ("os_annotated", "import os\nz: object = os\nz.popen('id')\n", "os-attribute", "os.popen"),
    ("os_walrus", "import os\n(w := os).system('id')\n", "os-attribute", None),
    ("os_walrus_alias", "import os\nif (w := os):\n    w.system('id')\n", "os-attribute",
     "os.system"),
    ("os_path_import_binds_os", "import os.path\nos.remove('/etc/passwd')\n", "os-attribute",
     "os.remove"),
    ("os_in_container", "import os\n[os][0].system('id')\n", "os-attribute", "value"),
    ("os_default_argument", "import os\ndef f(m=os):\n    m.system('id')\n", "os-attribute",
     "value"),
    ("os_alias_chain", "import os\nx = os\ny = x\ny.system('id')\n", "os-attribute",
     "os.system"),
    ("from_os_import_getcwd", "from os import getcwd\n", "os-attribute", "os.getcwd"),
    ("os_getenv", "import os\nhome = os.getenv('HOME')\n", "os-attribute", "os.getenv"),

    # --- imports --------------------------------------------------------------------------------
    ("relative_import", "from . import helpers\n", "import-relative", None),
    ("relative_import_module", "from .mod import thing\n", "import-relative", None),
    ("star_import", "from json import *\n", "import-star", None),
    ("star_import_math", "from math import *\n", "import-star", None),
    ("import_sys", "import sys\nprint(sys.modules)\n", "import-blocked", "sys.modules"),
    ("import_socket", "import socket\n", "import-blocked", "socket"),
    ("import_ctypes", "import ctypes\n", "import-blocked", "ctypes"),
    ("import_pickle", "import pickle\n", "import-blocked", "pickle"),
    ("import_builtins", "import builtins\n", "import-blocked", "builtins"),
    ("import_not_listed_package", "import xml.etree.ElementTree as ET\n", "import-blocked",
     "xml"),
    ("import_unlisted_submodule", "import json.tool\n", "import-blocked", "json.tool"),
    ("import_private_submodule", "import zoneinfo._common\n", "import-blocked", None),
    ("operator_attrgetter", "import operator\nget = operator.attrgetter('__class__')\n",
     "module-attribute-blocked", "operator.attrgetter"),
    ("operator_methodcaller_alias", "import operator as op\nm = op.methodcaller('x')\n",
     "module-attribute-blocked", "operator.methodcaller"),
    ("from_operator_attrgetter", "from operator import attrgetter\n",
     "module-attribute-blocked", "attrgetter"),
    ("typing_get_type_hints", "import typing\nhints = typing.get_type_hints(f)\n",
     "module-attribute-blocked", "get_type_hints"),

    # --- denial of service ------------------------------------------------------------------------
    ("nested_parentheses_250", "x = " + "(" * 250 + "1" + ")" * 250 + "\n", "syntax-error",
     "parentheses"),
    ("nested_lists_100", "x = " + "[" * 100 + "]" * 100 + "\n", "too-deep", "100"),
    ("binop_chain_150", "x = " + "+".join(["1"] * 150) + "\n", "too-deep", None),
    ("binop_chain_10000", "x = " + "+".join(["1"] * 10000) + "\n", "too-complex", None),
    ("attribute_chain_150", "x = a" + ".b" * 150 + "\n", "too-deep", None),
    ("call_chain_150", "x = f" + "()" * 150 + "\n", "too-deep", None),
    ("nested_blocks_120", "".join("    " * i + "if x:\n" for i in range(120))
     + "    " * 120 + "pass\n", "syntax-error", None),
    ("oversize_source", "x = 1\n" * 11000 + "# " + "y" * 10 + "\n", "code-too-large",
     "65536"),
    ("oversize_multibyte", "s = '" + "é" * 33000 + "'\n", "code-too-large", None),

    # --- code that does not compile -------------------------------------------------------------
    ("null_byte", "x = 1\ny = 2\x00\n", "syntax-error", "null"),
    ("unterminated_string", "s = 'abc\n", "syntax-error", None),
    ("lone_surrogate", "s = '\ud800'\n", "syntax-error", None),
]


class RejectTest(unittest.TestCase):
    pass


def _make(code, rule, text):
    def test(self):
        report = validate(code)
        self.assertFalse(report["ok"], "accepted: %r" % code[:200])
        rules = [v["rule"] for v in report["violations"]]
        self.assertIn(rule, rules, report["violations"])
        if text is not None:
            messages = [v["message"] for v in report["violations"] if v["rule"] == rule]
            self.assertTrue(any(text in m for m in messages),
                            "no %s message mentions %r: %r" % (rule, text, messages))
        for v in report["violations"]:
            self.assertTrue(v["message"] and v["hint"], v)
    return test


for _name, _code, _rule, _text in REJECT:
    _test = _make(_code, _rule, _text)
    _test.__name__ = "test_" + _name
    assert not hasattr(RejectTest, _test.__name__), _name
    setattr(RejectTest, _test.__name__, _test)


class RejectDetailsTest(unittest.TestCase):
    def test_os_system_location_and_text(self):
        report = validate("import os\nos.system('id')\n")
        self.assertEqual(report["violations"], [{
            "line": 2, "col": 3, "rule": "os-attribute",
            "message": "call to os.system is not allowed",
            "hint": report["violations"][0]["hint"]}])
        self.assertIn("os.environ", report["violations"][0]["hint"])

    def test_syntax_error_location(self):
        report = validate("x = 1\ny = (2 +\n")
        (v,) = report["violations"]
        self.assertEqual((v["line"], v["col"], v["rule"]), (2, 4, "syntax-error"))
        self.assertIn("never closed", v["message"])

    def test_null_byte_location(self):
        (v,) = validate("x = 1\nyy = 2\x00\n")["violations"]
        self.assertEqual((v["line"], v["col"], v["rule"]), (2, 6, "syntax-error"))

    def test_every_violation_is_reported(self):
        code = "import socket\nimport os\nos.system('a')\nf = eval\nx.__class__\n"
        rules = [v["rule"] for v in validate(code)["violations"]]
        self.assertEqual(rules, ["import-blocked", "os-attribute", "builtin-blocked",
                                 "attribute-dunder"])

    def test_sorted_and_deduplicated(self):
        code = "eval(1); eval(2)\nimport socket\nexec('x')\n"
        violations = validate(code)["violations"]
        keys = [(v["line"], v["col"], v["rule"]) for v in violations]
        self.assertEqual(keys, sorted(keys))
        self.assertEqual(len(keys), len(set(keys)))
        self.assertEqual(len(violations), 4)

    def test_attribute_column_points_at_the_name(self):
        (v,) = validate("value = obj.inner.__class__\n")["violations"]
        self.assertEqual((v["line"], v["col"]), (1, 18))

    def test_column_is_utf8_bytes(self):
        (v,) = validate("s = 'é'; x.__class__\n")["violations"]
        self.assertEqual(v["col"], 12)  # 11 characters, 12 bytes

    def test_parenthesis_nesting(self):
        # Grouping parentheses create no nodes: 200 levels is just an empty tuple and
        # harmless; the 201st is refused by CPython's own parser.
        self.assertEqual(validate("(" * 200 + ")" * 200), {"ok": True, "violations": []})
        (v,) = validate("(" * 201 + ")" * 201)["violations"]
        self.assertEqual(v["rule"], "syntax-error")
        self.assertIn("too many nested parentheses", v["message"])

    def test_deep_binop_chain_never_raises(self):
        # CPython's AST construction itself hits the recursion limit here: too-complex.
        for n in (10_000, 30_000):
            (v,) = validate("x = " + "+".join(["1"] * n))["violations"]
            self.assertEqual(v["rule"], "too-complex")

    def test_too_deep_names_the_limit(self):
        (v,) = validate("x = " + "[" * 100 + "]" * 100)["violations"]
        self.assertEqual(v["rule"], "too-deep")
        self.assertEqual(v["line"], 1)

    def test_nonascii_report_keeps_the_normalised_rule_too(self):
        rules = {v["rule"] for v in validate("ｅｖａｌ('1')")["violations"]}
        self.assertEqual(rules, {"builtin-blocked", "name-nonascii-blocked"})


if __name__ == "__main__":
    unittest.main()
