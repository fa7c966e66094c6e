"""validate() never raises and never crashes, whatever the code."""

import random
import sys
import unittest
from unittest import mock

import validator.checker as checker
from validator import RULES, validate

SEED_PROGRAM = '''
import asyncio, json
from dataclasses import dataclass

@dataclass
class Job:
    name: str
    retries: int = 3

async def run(job: Job) -> dict:
    result = await call_tool("run_job", name=job.name)
    match result:
        case {"status": "ok", "value": v}:
            return {"job": job.name, "value": v}
        case _:
            raise RuntimeError(f"{job.name!r} failed: {result}")

jobs = [Job(n) for n in ("a", "b")]
out = await asyncio.gather(*(run(j) for j in jobs), return_exceptions=True)
print(json.dumps([str(o) for o in out]), "{}".format(len(out)))
'''

_POOL = list("()[]{}:;,.'\"\\#@=+-*/%<>!&|^~ \t\n\r\x00\x0c") + [
    "é", "ｅ", "𝐞", "\ud800", "\u200b", "lambda", "await", "yield", "async", "match", "case",
    "f'", "{", "'''", "eval", "__class__", "os.", "import ", "\\N{", "0x", "1e", "*" * 5]


def assert_well_formed(test, report):
    test.assertIsInstance(report, dict)
    test.assertEqual(set(report), {"ok", "violations"})
    test.assertIs(report["ok"], not report["violations"])
    for v in report["violations"]:
        test.assertEqual(set(v), {"line", "col", "rule", "message", "hint"})
        test.assertIs(type(v["line"]), int)
        test.assertIs(type(v["col"]), int)
        test.assertGreaterEqual(v["line"], 0)
        test.assertGreaterEqual(v["col"], 0)
        test.assertIn(v["rule"], RULES)
        test.assertIs(type(v["message"]), str)
        test.assertIs(type(v["hint"]), str)


class NeverRaisesTest(unittest.TestCase):
    def test_seed_program_passes(self):
        self.assertEqual(validate(SEED_PROGRAM), {"ok": True, "violations": []})

    def test_random_bytes_as_text(self):
        rng = random.Random(1234)
        for _ in range(200):
            data = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 400)))
            for text in (data.decode("latin-1"), data.decode("utf-8", "replace"),
                         data.decode("utf-8", "surrogateescape")):
                assert_well_formed(self, validate(text))
            assert_well_formed(self, validate(data))  # bytes are accepted as UTF-8

    def test_mutations_of_a_valid_program(self):
        rng = random.Random(42)
        rejected = 0
        for _ in range(100):
            text = list(SEED_PROGRAM)
            for _ in range(rng.randrange(1, 8)):
                pos = rng.randrange(len(text))
                action = rng.randrange(3)
                if action == 0:
                    del text[pos]
                elif action == 1:
                    text.insert(pos, rng.choice(_POOL))
                else:
                    text[pos] = rng.choice(_POOL)
            report = validate("".join(text))
            assert_well_formed(self, report)
            rejected += not report["ok"]
        self.assertGreater(rejected, 10)  # the mutations really broke things

    def test_specific_hostile_inputs(self):
        cases = [
            "\x00", "x = 1\x00", "'unterminated", '"""never closed', "f'{", "f'{x!z}'",
            "\ud800", "x = '\udcff'", "\\", "(" * 1000, ")" * 1000, "[" * 5000, "{" * 300,
            "if 1:\n" + " " * 10000 + "pass", "\t" * 2000 + "x", "\ufeffx = 1", "x = 1\r\ny = 2",
            "lambda: " * 300 + "0", "not " * 3000 + "x", "-" * 5000 + "1", "a" + "[0]" * 3000,
            "x" * 70000, "1" * 5000, "0x" + "f" * 5000, "'" + "\\N{LATIN SMALL LETTER A}" * 100 + "'",
            "async def f():\n" + "    await x\n" * 100, "match x:\n case " + "[" * 300,
            "@" * 100 + "x\ndef f(): pass", "def f(" + "a, " * 300 + "): pass",
            "x = " + "f'{" * 10 + "1" + "}'" * 10, "𝐞𝐯𝐚𝐥" * 1000, "import " + "a." * 3000 + "b",
            "'{0." + "a." * 2000 + "b}'.format(x)", "'{:{:{:{}}}}'.format(1, 2, 3, 4)",
            "x: '" + "List[" * 200 + "int" + "]" * 200 + "' = 1",
            "def f(x: \"'\\\"eval\\\"'\"): pass",
        ]
        for code in cases:
            with self.subTest(code=code[:40]):
                assert_well_formed(self, validate(code))

    def test_empty_string_is_ok(self):
        self.assertEqual(validate(""), {"ok": True, "violations": []})

    def test_recursion_limit_is_left_alone(self):
        before = sys.getrecursionlimit()
        validate("x = " + "+".join(["1"] * 20000))
        self.assertEqual(sys.getrecursionlimit(), before)

    def test_unexpected_exception_is_internal_error(self):
        with mock.patch.object(checker.Checker, "check", side_effect=KeyError("boom")):
            (v,) = validate("x = 1")["violations"]
        self.assertEqual(v["rule"], "internal-error")
        self.assertIn("KeyError", v["message"])

    def test_memory_error_while_parsing_is_too_complex(self):
        with mock.patch.object(checker, "compile", create=True, side_effect=MemoryError):
            (v,) = validate("x = 1")["violations"]
        self.assertEqual(v["rule"], "too-complex")

    def test_recursion_error_while_walking_is_too_complex(self):
        with mock.patch.object(checker.Checker, "check", side_effect=RecursionError):
            (v,) = validate("x = 1")["violations"]
        self.assertEqual(v["rule"], "too-complex")

    def test_slow_validation_hits_the_time_limit(self):
        code = "x = [" + ", ".join("a.b" for _ in range(5000)) + "]"
        with mock.patch.object(checker.time, "perf_counter", side_effect=[0.0] + [100.0] * 50):
            (v,) = validate(code, {"validation_timeout_ms": 1000})["violations"]
        self.assertEqual(v["rule"], "too-complex")
        self.assertIn("1000 ms", v["message"])


if __name__ == "__main__":
    unittest.main()
