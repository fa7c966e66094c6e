"""The protocol between the codeact host and its Python children, child side.

The host's definition is src/protocol/protocol.hpp; TABLE below is its copy, and
tests/unit/protocol/protocol_test.cpp fails when the two disagree. Every frame a child sends is built by
a function of this module, and every frame it receives is checked by one; the runner
(runner.py), the fork server's zygote (runner_zygote.py) and the hyperlight worker
(hyperlight_worker.py) use nothing else. Stdlib only, and cheap to import: a cold child imports
it before its ready frame.

Bridge: newline-delimited compact JSON, ASCII only (so a frame never holds a raw newline), on
the bridge fds (CODEACT_BRIDGE_FDS, "3,4" by default); never on stdout or stderr.

  host  -> child {"type":"guard","exec":[path,...],"read":[path,...],"write":[path,...],
                  "tmp":path,"bridge_fds":[3,4],"max_threads":N,"imports":[pattern,...]}
                                                         (only to a pooled or forked child with
                                                          CODEACT_GUARD, before its ready frame;
                                                          "imports" when the host knows them)
  child -> host  {"type":"ready","python":[3,11],"pid":N}     (a session's runner adds
                 "session":true: after each terminal frame it reads the next request on the same
                 bridge, its globals kept, until the host closes the bridge; runner_session.py)
  host  -> child {"type":"request","code":str,"tools":[str,...],"max_output_bytes":N,
                  "max_frame_bytes":N,"max_tool_calls":N,   (limits optional: REQUEST_DEFAULTS)
                  "guard":{<the fields of the guard frame>,"imports":[pattern,...]},  (optional)
                  or "guard":"armed": the guard frame's fields, imports included, are the run's
                  "validate":{<a validator policy: validator/policy.py's keys>},     (optional)
                  "await_verdict":true}                                                (optional)
  host  -> child {"type":"verdict","ok":true}   after a request with "await_verdict": the host
                 prepares the run and validates its code while the child compiles it, and the
                 child runs none of it before this frame (runner.py's _run); a rejected run's
                 child is killed instead
  child -> host  {"type":"validated","ok":true} or {"type":"validated","ok":false,
                 "violations":[{"line","col","rule","message","hint"},...],
                 "violations_dropped":N?}, then exit 1: the first frame after a request with
                 "validate", whose code the child validated before running any of it
                 (runner_verdict.py); the guard's "imports" are then the child's own
  child -> host  {"type":"guard_error","message":str}    then exit 1, instead of the ready frame
                 (arming ahead failed) or of anything else after the request (arming failed)
  child -> host  {"type":"tool_call","id":N,"name":str,"kwargs":{...}}     (ids 1, 2, 3 ... per run)
  host  -> child {"type":"tool_result","id":N,"ok":true,"result":<json>}
                 {"type":"tool_result","id":N,"ok":false,"error_type":str,"message":str}
                 (a frame with an "id" and no "type" is taken as a tool_result too)
  child -> host  exactly one terminal frame, sent after sys.stdout and sys.stderr are flushed:
                 {"type":"complete","output_present":bool,"output":<json or null>,"note":str?}
                 {"type":"error","error_type":str,"message":str,"traceback":str}
                 {"type":"limit","limit":"output","message":str}
  launcher -> host {"type":"setup_error","step":str,"errno":N,"message":str}   (the namespaces
                 level's launcher, when the sandbox could not be set up; before any ready frame)

The hyperlight worker speaks the same run frames, and before each run:

  worker -> host  {"type":"ready"} or {"type":"unavailable","message":str}      (its first frame)
  host -> worker  {"type":"configure","fingerprint":str,"tools":[str],"input_dir":str|null,
                   "output_dir":str,"network":[{"target":str,"methods":[str]|null}],
                   "environment":{str:str},"cpu_time_s":N,"heap_size":str,"stack_size":str,
                   "max_file_size_bytes":N}      (network targets are URLs: common/egress_target.hpp)
  worker -> host  {"type":"configured","reused":bool} or {"type":"unavailable","message":str}

Host frames of unknown type are ignored; a malformed one raises ProtocolError, whose text the
receiver reports. Frame sizes count the trailing newline.

Fork server: one compact JSON object per SOCK_SEQPACKET datagram on the zygote's fd 3 (read and
written in C++ on both sides: src/protocol/fork_messages.hpp, src/protocol/zygote_messages.hpp).

  zygote -> host  {"type":"zygote_ready","pid":N} once everything is loaded
  host -> zygote  {"type":"fork","token":str,"uid":N,"workdir_bytes":N,"workdir":str} with the
                  child's five fds (SCM_RIGHTS); uid -1: the child keeps the zygote's uid;
                  workdir_bytes 0: no private tmpfs; a namespaces zygote's child also has
                  "tmp_bytes":N,"cgroup_fds":N (that many cgroup.procs fds after the five)
  zygote -> host  {"type":"forked","pid":N} or {"type":"fork_failed","message":str}
  host -> zygote  {"type":"kill","pid":N}: SIGKILL the child's group if it is not reaped yet
  zygote -> host  {"type":"exited","pid":N,"status":N,"cpu_us":N} when a child was reaped
"""

import _json

# -------------------------------------------------------------------------------------------------
# The table (src/protocol/protocol.hpp): message type -> channel, sender, required and optional
# fields. A receiver refuses a message without a required field.

TABLE = {
    "guard": ("bridge", "host", ("exec", "read", "write", "bridge_fds"),
              ("tmp", "max_threads", "imports")),
    "request": ("bridge", "host", ("code",),
                ("tools", "max_output_bytes", "max_frame_bytes", "max_tool_calls", "guard",
                 "validate", "await_verdict")),
    "tool_result": ("bridge", "host", ("id", "ok"), ("result", "error_type", "message")),
    "configure": ("bridge", "host", ("fingerprint", "tools", "input_dir", "output_dir", "network",
                                     "environment", "cpu_time_s", "heap_size", "stack_size",
                                     "max_file_size_bytes"), ()),
    "verdict": ("bridge", "host", ("ok",), ()),
    "ready": ("bridge", "child", (), ("python", "pid", "session")),
    "setup_error": ("bridge", "child", ("message",), ("step", "errno")),
    "guard_error": ("bridge", "child", ("message",), ()),
    "validated": ("bridge", "child", ("ok",), ("violations", "violations_dropped")),
    "tool_call": ("bridge", "child", ("id", "name"), ("kwargs",)),
    "complete": ("bridge", "child", ("output_present",), ("output", "note")),
    "error": ("bridge", "child", ("error_type", "message"), ("traceback",)),
    "limit": ("bridge", "child", ("message",), ("limit",)),
    "configured": ("bridge", "child", ("reused",), ()),
    "unavailable": ("bridge", "child", ("message",), ()),
    "fork": ("fork_server", "host", ("token", "uid", "workdir_bytes", "workdir"),
             ("tmp_bytes", "cgroup_fds")),
    "kill": ("fork_server", "host", ("pid",), ()),
    "zygote_ready": ("fork_server", "child", ("pid",), ()),
    "forked": ("fork_server", "child", ("pid",), ()),
    "fork_failed": ("fork_server", "child", ("message",), ()),
    "exited": ("fork_server", "child", ("pid", "status", "cpu_us"), ()),
}
# A request without these fields gets their defaults: the limit table's rows marked
# in_child_request (src/limits/limit_table.cpp) declare them, and the agreement test
# (tests/unit/protocol/protocol_test.cpp) holds this copy to those rows.
REQUEST_DEFAULTS = {"max_output_bytes": 1 << 20, "max_frame_bytes": 1 << 20, "max_tool_calls": 256}
BRIDGE_FDS = (3, 4)
# The system part of the runtime guard: the guard frame's fields, which the request's "guard"
# field repeats with "imports".
GUARD_SYSTEM_FIELDS = ("exec", "read", "write", "tmp", "bridge_fds", "max_threads")
# The request's "guard" when the guard frame sent ahead, with its "imports", is the run's spec.
GUARD_AS_ARMED = "armed"


def table_json():
    """TABLE in the form of the host's ProtocolTableJson(), for the agreement test."""
    messages = {name: {"channel": c, "sender": s, "required": list(r), "optional": list(o)}
                for name, (c, s, r, o) in TABLE.items()}
    return {"messages": messages, "request_defaults": dict(REQUEST_DEFAULTS),
            "bridge_fds": list(BRIDGE_FDS), "guard_as_armed": GUARD_AS_ARMED}


class ProtocolError(Exception):
    """A malformed message from the host; str(e) says what is wrong with it."""


# -------------------------------------------------------------------------------------------------
# JSON through the C accelerator directly: the json package imports re, which costs a cold child
# more than all the rest of its hot path. encode() matches json.dumps(obj, ensure_ascii=True,
# separators=(",", ":"), allow_nan=False).

def _json_default(obj):
    raise TypeError("Object of type %s is not JSON serializable" % type(obj).__name__)


def encode(obj, _make=_json.make_encoder, _esc=_json.encode_basestring_ascii):
    """Compact ASCII JSON text of obj; TypeError or ValueError when it is not JSON data."""
    # A fresh encoder per call: after an error the C encoder keeps stale circular-check markers.
    return "".join(_make({}, _json_default, _esc, None, ":", ",", False, False, False)(obj, 0))


class _ScanContext:
    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = float


_scan = _json.make_scanner(_ScanContext())


def decode(text):
    """json.loads of one value; raises ValueError unless text is exactly one JSON value."""
    text = text.strip(" \t\n\r")
    try:
        value, end = _scan(text, 0)
        if end == len(text):
            return value
    except Exception:
        pass
    import json  # malformed: let the json package say why (the C scanner needs it for that)
    return json.loads(text)


# -------------------------------------------------------------------------------------------------
# Bridge frames from the host


def parse_host_frame(line):
    """The JSON object of one frame line (bytes, without its newline)."""
    return _decode_object(line, "frame from host")


def _decode_object(data, what):
    """The JSON object `data` (UTF-8 bytes) holds; ProtocolError naming `what` otherwise."""
    try:
        msg = decode(data.decode("utf-8"))
    except ValueError as e:
        raise ProtocolError("malformed %s: %s" % (what, e)) from None
    if type(msg) is not dict:
        raise ProtocolError("malformed %s: not a JSON object" % what)
    return msg


def check_required(msg, kind):
    """Raises ProtocolError unless msg, a host frame of type kind, has the fields TABLE requires."""
    for key in TABLE[kind][2]:
        if key not in msg:
            raise ProtocolError("malformed %s frame from host: %r is missing" % (kind, key))


def is_tool_result(msg):
    """Whether msg answers a tool call (a frame with an "id" and no "type" counts too)."""
    kind = msg.get("type")
    return kind == "tool_result" or (kind is None and "id" in msg)


def tool_answer(msg):
    """(id, (True, result)) or (id, (False, error_type, message)) of a tool_result frame."""
    call_id = msg.get("id")
    ok = msg.get("ok")
    if type(call_id) is not int or type(ok) is not bool:
        raise ProtocolError("malformed tool_result from host: needs an integer id and a boolean ok")
    if ok:
        return call_id, (True, msg.get("result"))
    return call_id, (False, msg.get("error_type"), msg.get("message"))


def request_limit(req, key):
    """A limit of the request: its non-negative integer, or REQUEST_DEFAULTS' when absent."""
    value = req.get(key)
    if value is None:
        return REQUEST_DEFAULTS[key]
    if type(value) is not int or value < 0:
        raise ProtocolError("request field %r must be a non-negative integer" % key)
    return value


def request_code_and_tools(req):
    """(code, tool names) of a request frame."""
    code = req.get("code")
    if type(code) is not str:
        raise ProtocolError("request field 'code' must be a string")
    tools = req.get("tools")
    if tools is None:
        tools = []
    if type(tools) is not list:
        raise ProtocolError("request field 'tools' must be a list of names")
    return code, tools


def guard_system_part(spec):
    """The fields of a guard spec that the OS layers are armed with (not "imports")."""
    return {k: spec.get(k) for k in GUARD_SYSTEM_FIELDS}


# -------------------------------------------------------------------------------------------------
# Bridge frames to the host: text without its newline. Arguments named *_json are JSON text
# already (the caller measured it); the others are encoded here.

COMPLETE_NO_OUTPUT = '{"type":"complete","output_present":false,"output":null}'


def ready_frame(version, pid):
    return '{"type":"ready","python":[%d,%d],"pid":%d}' % (version[0], version[1], pid)


def session_ready_frame(version, pid):
    return '{"type":"ready","python":[%d,%d],"pid":%d,"session":true}' % (
        version[0], version[1], pid)


def complete_frame(output_json):
    return '{"type":"complete","output_present":true,"output":%s}' % output_json


def error_frame(error_type, message, traceback):
    return '{"type":"error","error_type":%s,"message":%s,"traceback":%s}' % (
        encode(error_type), encode(message), encode(traceback))


def limit_frame(message):
    return '{"type":"limit","limit":"output","message":%s}' % encode(message)


def guard_error_frame(message):
    return '{"type":"guard_error","message":%s}' % encode(message)


VALIDATED_OK = '{"type":"validated","ok":true}'


def rejected_frame(violations_json, dropped):
    """The verdict of a rejection; violations_json is the JSON text of a non-empty list."""
    return '{"type":"validated","ok":false,"violations":%s%s}' % (
        violations_json, ',"violations_dropped":%d' % dropped if dropped else "")


def tool_call_frame(call_id, name_json, kwargs_json):
    return '{"type":"tool_call","id":%d,"name":%s,"kwargs":%s}' % (call_id, name_json, kwargs_json)


def worker_ready_frame():
    return '{"type":"ready"}'


def unavailable_frame(message):
    return '{"type":"unavailable","message":%s}' % encode(message)


def configured_frame(reused):
    return '{"type":"configured","reused":%s}' % ("true" if reused else "false")
