"""Rule tool-not-awaited (validator/awaits.py): a tool call whose coroutine is used unawaited."""

import textwrap
import unittest

from validator import validate

TOOLS = {"tool_names": ["add", "fetch-page", "lookup"]}


def check(code, policy=TOOLS):
    return validate(textwrap.dedent(code), policy)


class RejectTest(unittest.TestCase):
    def assertUnawaited(self, code, line, name, policy=TOOLS):
        report = check(code, policy)
        self.assertFalse(report["ok"], code)
        hits = [v for v in report["violations"] if v["rule"] == "tool-not-awaited"]
        self.assertEqual([v["line"] for v in hits], [line], report)
        self.assertIn("%s(...) on line %d is not awaited" % (name, line), hits[0]["message"])
        self.assertIn("add await", hits[0]["message"])
        self.assertIn("add await", hits[0]["hint"])

    def test_result_used_as_value(self):
        # The check: MAF-style synchronous use of a tool.
        self.assertUnawaited("r = add(a=1, b=2)\nprint(r)\n", 1, "add")

    def test_bare_statement(self):
        self.assertUnawaited("x = 1\nadd(a=1, b=2)\n", 2, "add")

    def test_call_tool_always_checked(self):
        self.assertUnawaited("print(call_tool('add', a=1))\n", 1, "call_tool", policy=None)

    def test_inside_f_string_and_argument(self):
        self.assertUnawaited("print(f\"{lookup(key='k')}\")\n", 1, "lookup")

    def test_name_used_by_another_await_is_not_awaited_itself(self):
        self.assertUnawaited("r = add(a=1, b=2)\nawait call_tool('log', text=r)\n", 1, "add")

    def test_inside_async_function(self):
        self.assertUnawaited("""
            async def main():
                total = add(a=1, b=2)
                return total + 1
            print(await main())
            """, 3, "add")

    def test_list_never_awaited(self):
        self.assertUnawaited("coros = [lookup(key=k) for k in 'ab']\nprint(coros)\n", 1, "lookup")

    def test_calling_the_coroutine(self):
        self.assertUnawaited("f = add(a=1, b=2)\nx = f()\n", 1, "add")

    def test_a_line_continuation_before_the_parenthesis(self):
        self.assertUnawaited("r = add \\\n    (a=1, b=2)\nprint(r)\n", 1, "add")


class AcceptTest(unittest.TestCase):
    def assertOk(self, code, policy=TOOLS):
        self.assertEqual(check(code, policy), {"ok": True, "violations": []}, code)

    def test_awaited(self):
        self.assertOk("r = await add(a=1, b=2)\nprint(r, await call_tool('add', a=1, b=2))\n")

    def test_gather_of_comprehension(self):
        self.assertOk("""
            import asyncio
            rs = await asyncio.gather(*[add(a=i, b=1) for i in range(3)])
            """)

    def test_list_later_gathered(self):
        self.assertOk("""
            import asyncio
            coros = [lookup(key=k) for k in "abc"]
            print(await asyncio.gather(*coros))
            """)

    def test_create_task_and_task_group(self):
        self.assertOk("""
            import asyncio
            t = asyncio.create_task(add(a=1, b=2))
            async with asyncio.TaskGroup() as tg:
                u = tg.create_task(lookup(key="x"))
            print(await t, u.result())
            """)

    def test_wait_and_from_import(self):
        self.assertOk("""
            import asyncio
            from asyncio import gather
            done, _ = await asyncio.wait([asyncio.ensure_future(add(a=1, b=2))])
            print(await gather(lookup(key="a"), lookup(key="b")))
            """)

    def test_appended_then_awaited(self):
        self.assertOk("""
            pending = []
            for i in range(3):
                pending.append(add(a=i, b=i))
            for c in pending:
                print(await c)
            """)

    def test_assigned_then_awaited(self):
        self.assertOk("c = add(a=1, b=2)\nprint(await c)\n")

    def test_handed_to_the_caller(self):
        self.assertOk("""
            def later(k):
                return lookup(key=k)
            f = lambda: add(a=1, b=2)
            print(await later("a"), await f())
            """)

    def test_own_function_with_a_tool_name(self):
        self.assertOk("def add(a, b):\n    return a + b\nprint(add(a=1, b=2))\n")

    def test_name_not_a_tool(self):
        self.assertOk("print(len([1]))\n")
        # Without tool names only call_tool is a tool.
        self.assertOk("r = add(a=1, b=2)\nprint(r)\n", policy=None)

    def test_tool_names_that_are_not_identifiers_are_ignored(self):
        self.assertOk("print(await call_tool('fetch-page', n=1))\n")


class PolicyTest(unittest.TestCase):
    def test_tool_names_must_be_strings(self):
        with self.assertRaises(ValueError):
            validate("x = 1", {"tool_names": "add"})
        with self.assertRaises(ValueError):
            validate("x = 1", {"tool_names": [1]})


if __name__ == "__main__":
    unittest.main()
