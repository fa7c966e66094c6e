"""Details of the issue-12 rules: where they point, what they leave alone, how they meet the
policy, and the module facts they rest on."""

import unittest

from validator import modules, validate


def rules(code, policy=None):
    return sorted({v["rule"] for v in validate(code, policy)["violations"]})


def only(code, rule, policy=None):
    found = [v for v in validate(code, policy)["violations"] if v["rule"] == rule]
    assert len(found) == 1, validate(code, policy)["violations"]
    return found[0]


class LocationTest(unittest.TestCase):
    def test_class_hook_points_at_the_def(self):
        v = only("class M:\n    x = 1\n    def __instancecheck__(cls, o):\n        return 1\n",
                 "class-hook")
        self.assertEqual((v["line"], v["col"]), (3, 4))
        self.assertIn("hook", v["message"])
        self.assertIn("__init__", v["hint"])

    def test_network_points_at_the_attribute_name(self):
        v = only("info = await loop.getaddrinfo('h', 80)\n", "attribute-network")
        self.assertEqual((v["line"], v["col"]), (1, 18))
        self.assertIn("there is no network", v["hint"])
        self.assertIn("tools", v["hint"])

    def test_network_hint_names_the_egress_tools_when_the_run_has_targets(self):
        tools = {"network_tools": ["http_get", "http_post", "http_request"]}
        v = only("info = await loop.getaddrinfo('h', 80)\n", "attribute-network", tools)
        self.assertNotIn("there is no network", v["hint"])
        self.assertIn("`await http_get(url)`", v["hint"])
        self.assertIn("http_request(method, url", v["hint"])

    def test_network_module_hint_follows_the_targets(self):
        for module in ("socket", "urllib.request", "http.client", "ssl"):
            code = "import %s\n" % module
            without = only(code, "import-blocked")
            self.assertIn("there is no network", without["hint"], module)
            self.assertNotIn("http_get", without["hint"], module)
            with_tools = only(code, "import-blocked", {"network_tools": ["http_get", "http_post"]})
            self.assertNotIn("there is no network", with_tools["hint"], module)
            self.assertIn("`await http_get(url)` or `await http_post(url, body)`",
                          with_tools["hint"], module)

    def test_module_value_points_at_the_module_name(self):
        v = only("import uuid\nitems = [1, uuid]\n", "module-value")
        self.assertEqual((v["line"], v["col"]), (2, 12))
        self.assertIn("uuid.name", v["message"])

    def test_positional_pattern_points_at_the_pattern(self):
        v = only("match o:\n    case Unknown(a):\n        pass\n", "match-positional")
        self.assertEqual((v["line"], v["col"]), (2, 9))
        self.assertIn("keyword patterns", v["hint"])

    def test_decorator_only_points_at_the_callable(self):
        v = only("import functools\nx = functools.wraps(f, updated=())\n", "decorator-only")
        self.assertEqual((v["line"], v["col"]), (2, 14))

    def test_annotation_points_at_the_dynamic_part(self):
        v = only("def f(x: list[make()]):\n    pass\n", "annotation-dynamic")
        self.assertEqual((v["line"], v["col"]), (1, 14))


class LeftAloneTest(unittest.TestCase):
    """Decisions of issue 12 that keep ordinary code working."""

    def test_match_args_definition_alone_is_fine(self):
        # Only a positional pattern reads __match_args__; defining it is not the gadget.
        self.assertEqual(rules("class P:\n    __match_args__ = ('x', '__class__')\n"), [])

    def test_wraps_as_plain_decorator(self):
        code = ("import functools\n\ndef deco(fn):\n    @functools.wraps(fn)\n"
                "    def inner(*a, **k):\n        return fn(*a, **k)\n    return inner\n")
        self.assertEqual(rules(code), [])

    def test_dataclass_string_default_is_data(self):
        # dataclasses pass defaults to the generated __init__ as values (`_dflt_x`), never as
        # source; only field names are pasted, and they are identifiers of a class statement.
        code = ("from dataclasses import dataclass\n@dataclass\nclass C:\n"
                "    code: str = \"__import__('os').system('id')\"\n")
        self.assertEqual(rules(code), [])

    def test_format_map_with_literal_template_and_public_field(self):
        self.assertEqual(rules("s = '{0.real}'.format_map({'0': 3})\n"), [])

    def test_parameter_named_like_a_module(self):
        self.assertEqual(rules("import time\ndef wait(time):\n    return time * 2\n"), [])

    def test_safe_metaclasses(self):
        self.assertEqual(rules("import abc\nclass B(metaclass=abc.ABCMeta):\n    pass\n"), [])
        self.assertEqual(rules("from enum import EnumMeta\nclass E(metaclass=EnumMeta):\n"
                               "    pass\n"), [])

    def test_module_alias_and_public_use(self):
        self.assertEqual(rules("import json\nj = json\nprint(j.dumps({}))\n"), [])

    def test_environ_mapping_api(self):
        code = ("import os\nv = os.environ.get('A')\nos.environ['B'] = '1'\n"
                "print('C' in os.environ, len(os.environ), list(os.environ.items())[:1])\n")
        self.assertEqual(rules(code), [])


class PolicyInterplayTest(unittest.TestCase):
    def test_allowed_package_submodules_are_modules(self):
        policy = {"extra_allowed_imports": ["xml.*"]}
        self.assertEqual(rules("import xml.etree.ElementTree as ET\nET.fromstring('<a/>')\n",
                               policy), [])
        self.assertEqual(rules("from xml import etree\nf(etree)\n", policy), ["module-value"])

    def test_dynamic_format_policy_keeps_the_class_rules(self):
        policy = {"allow_dynamic_format": True}
        self.assertEqual(rules("t = make()\nt.format_map(d)\n", policy), [])
        self.assertEqual(rules("class M(type):\n    pass\n", policy), ["class-metaclass"])

    def test_nonascii_spelling_of_network_name(self):
        self.assertIn("name-nonascii-blocked", rules("loop.ｇｅｔａｄｄｒｉｎｆｏ('h', 1)\n"))


class ModuleFactsTest(unittest.TestCase):
    def test_package_submodules_are_listed_without_importing(self):
        import sys
        self.assertIn("base_events", modules.submodules("asyncio"))
        self.assertIn("decoder", modules.submodules("json"))
        self.assertEqual(modules.submodules("math"), frozenset())
        self.assertEqual(modules.submodules("no_such_package_here"), frozenset())
        self.assertNotIn("no_such_package_here", sys.modules)

    def test_discover_goes_below_the_top(self):
        found = modules.discover(["xml"])
        self.assertIn("xml.etree", found)
        self.assertIn("xml.etree.ElementTree", found)


if __name__ == "__main__":
    unittest.main()
