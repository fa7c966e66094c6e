"""Tests of resources/codeact_protocol.py, the child side of the protocol: every frame it builds
carries exactly the fields its TABLE gives that message, its codec matches the json package, and
malformed host messages are refused with a message that says what is wrong. (Its TABLE against
the host's, src/protocol/protocol.hpp, is tests/unit/protocol/protocol_test.cpp.)

Run from the repository root:
    /usr/bin/python3.11 -m unittest discover -s tests/python -t tests/python -q
"""

import json
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
RESOURCES = os.path.join(os.path.dirname(os.path.dirname(HERE)), "resources")
sys.dont_write_bytecode = True
sys.path.insert(0, RESOURCES)
try:
    import codeact_protocol as p
finally:
    sys.path.remove(RESOURCES)


class BuiltFramesMatchTheTableTest(unittest.TestCase):
    def check(self, text, expected_type):
        frame = json.loads(text)
        self.assertEqual(frame["type"], expected_type)
        channel, sender, required, optional = p.TABLE[expected_type]
        self.assertEqual(sender, "child")
        keys = set(frame) - {"type"}
        self.assertLessEqual(set(required), keys, text)
        self.assertLessEqual(keys, set(required) | set(optional), text)
        self.assertTrue(text.isascii())
        return frame

    def test_bridge_frames(self):
        self.check(p.ready_frame((3, 11), 42), "ready")
        self.check(p.worker_ready_frame(), "ready")
        self.check(p.COMPLETE_NO_OUTPUT, "complete")
        complete = self.check(p.complete_frame(p.encode([1, "\u00e9"])), "complete")
        self.assertEqual(complete["output"], [1, "\u00e9"])
        self.check(p.error_frame("ValueError", "m\n", "tb"), "error")
        self.check(p.limit_frame("too big"), "limit")
        self.check(p.guard_error_frame("codeact guard: x"), "guard_error")
        self.assertEqual(self.check(p.tool_call_frame(3, p.encode("add"), p.encode({"a": 1})),
                                    "tool_call")["kwargs"], {"a": 1})
        self.check(p.unavailable_frame("no /dev/kvm"), "unavailable")
        self.assertIs(self.check(p.configured_frame(False), "configured")["reused"], False)

    def test_every_message_is_in_the_table_once(self):
        for name, (channel, sender, required, optional) in p.TABLE.items():
            self.assertIn(channel, ("bridge", "fork_server"), name)
            self.assertIn(sender, ("host", "child"), name)
            self.assertFalse(set(required) & set(optional), name)


class CodecTest(unittest.TestCase):
    def test_encode_matches_the_json_package(self):
        value = {"s": "\u00e9\ud83d\ude00\n", "l": [1, 2.5, None, True], "n": {"k": -3}}
        expected = json.dumps(value, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
        self.assertEqual(p.encode(value), expected)
        with self.assertRaises(ValueError):
            p.encode(float("nan"))
        with self.assertRaises(TypeError):
            p.encode({1, 2})

    def test_decode_takes_exactly_one_value(self):
        self.assertEqual(p.decode(' {"a":[1,2]}\n'), {"a": [1, 2]})
        with self.assertRaises(ValueError):
            p.decode('{"a":1} {"b":2}')
        with self.assertRaises(ValueError):
            p.decode('{"a":')


class HostMessagesTest(unittest.TestCase):
    def error(self, fn, *args):
        with self.assertRaises(p.ProtocolError) as cm:
            fn(*args)
        return str(cm.exception)

    def test_malformed_frames_are_refused_by_name(self):
        self.assertIn("malformed frame from host: Expecting",
                      self.error(p.parse_host_frame, b'{"a":'))
        self.assertEqual(self.error(p.parse_host_frame, b"[1]"),
                         "malformed frame from host: not a JSON object")
        self.assertEqual(self.error(p.tool_answer, {"type": "tool_result", "id": "1", "ok": True}),
                         "malformed tool_result from host: needs an integer id and a boolean ok")
        self.assertEqual(self.error(p.request_limit, {"max_tool_calls": -1}, "max_tool_calls"),
                         "request field 'max_tool_calls' must be a non-negative integer")
        self.assertEqual(self.error(p.request_code_and_tools, {"code": 1}),
                         "request field 'code' must be a string")
        self.assertEqual(self.error(p.request_code_and_tools, {"code": "", "tools": "add"}),
                         "request field 'tools' must be a list of names")

    def test_a_frame_without_a_required_field(self):
        configure = {"type": "configure", "tools": []}
        self.assertEqual(self.error(p.check_required, configure, "configure"),
                         "malformed configure frame from host: 'fingerprint' is missing")
        p.check_required({"type": "request", "code": ""}, "request")

    def test_well_formed_frames(self):
        self.assertTrue(p.is_tool_result({"id": 1, "ok": True}))
        self.assertFalse(p.is_tool_result({"type": "note", "id": 1}))
        self.assertEqual(p.tool_answer({"type": "tool_result", "id": 2, "ok": False,
                                        "error_type": "E", "message": "m"}), (2, (False, "E", "m")))
        self.assertEqual(p.request_limit({}, "max_frame_bytes"), 1 << 20)
        self.assertEqual(p.request_code_and_tools({"code": "x"}), ("x", []))



class ResourcesLayoutTest(unittest.TestCase):
    """The child side stays in modules a reader can take in (none over 700 lines), each a real
    file that Python compiles as it is: no module carries another's code in a string."""

    def test_every_module_is_short_and_compiles(self):
        names = sorted(n for n in os.listdir(RESOURCES) if n.endswith(".py"))
        self.assertIn("runner_cold.py", names)
        for name in names:
            with open(os.path.join(RESOURCES, name), encoding="utf-8") as f:
                text = f.read()
            self.assertLessEqual(text.count("\n"), 700, name)
            compile(text, name, "exec")
            self.assertNotIn("'''", text, name)


if __name__ == "__main__":
    unittest.main()
