"""Values of the user's code made into JSON and text that the host can take, in one place for
both backends: the local runner (runner_cold.py) imports this module; the hyperlight worker
(hyperlight_worker.py) sends its text into the guest ahead of hyperlight_guest.py, so that an
output value becomes the same JSON on both. Builtins only, no imports: it must run as it is in
the guest, whose standard library may be smaller.
"""

# Containers nested deeper than this become their repr in an output value.
MAX_OUTPUT_DEPTH = 100


# Text helpers ---------------------------------------------------------------------------------

def clean_str(s):
    """An exact str that is valid UTF-8 (lone surrogates become '?')."""
    if type(s) is not str:
        s = str.__str__(s)
    if s.isascii():
        return s
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        return s.encode("utf-8", "replace").decode("utf-8")


def safe_str(obj):
    try:
        s = str(obj)
        if not isinstance(s, str):
            raise TypeError
        return clean_str(s)
    except BaseException:
        return "<exception str() failed>"


def safe_repr(obj):
    try:
        s = repr(obj)
        if not isinstance(s, str):
            raise TypeError
        return clean_str(s)
    except BaseException:
        try:
            return "<unrepresentable %s object>" % clean_str(type(obj).__name__)
        except BaseException:
            return "<unrepresentable object>"


def truncate(s, limit):
    """The first ``limit`` UTF-8 bytes of s, and how many were cut."""
    data = s.encode("utf-8", "replace")
    if len(data) <= limit:
        return s
    return "%s... [truncated %d bytes]" % (
        data[:limit].decode("utf-8", "ignore"), len(data) - limit)


def truncate_middle(s, limit):
    """Head and tail of s (the end of a traceback matters most)."""
    data = s.encode("utf-8", "replace")
    if len(data) <= limit:
        return s
    head = limit * 3 // 4
    tail = data[len(data) - (limit - head):] if limit > head else b""
    return "%s\n... [truncated %d bytes] ...\n%s" % (
        data[:head].decode("utf-8", "ignore"), len(data) - limit, tail.decode("utf-8", "ignore"))


class OutputTooLarge(Exception):
    pass


def jsonable(value, size_limit):
    """value as JSON-native data: NaN/Inf -> None, tuples and sets (sorted if they can be) ->
    lists, non-str dict keys -> str(key), ints beyond 64 bits and everything else -> repr,
    containers deeper than MAX_OUTPUT_DEPTH -> repr, cycles -> "[...]" / "{...}".
    Raises OutputTooLarge as soon as the encoding is sure to exceed size_limit (the running
    count is a lower bound of the encoded size), so a huge value is not converted in full; the
    caller passes a few times the output limit so that an exact size can be reported for values
    that are only somewhat too large."""
    return _Conversion(size_limit).convert(value, 0)


class _Conversion:
    """One run of jsonable: the running size count and the containers being converted."""

    def __init__(self, size_limit):
        self.size = 0
        self.size_limit = size_limit
        self.active = set()

    def add(self, n):
        self.size += n
        if self.size > self.size_limit:
            raise OutputTooLarge(self.size)

    def as_repr(self, v):
        r = safe_repr(v)
        self.add(len(r) + 2)
        return r

    def convert(self, v, depth):
        t = type(v)
        if t is str:
            self.add(len(v) + 2)
            return clean_str(v)
        if v is None or v is True or v is False:
            self.add(4)
            return v
        if t is int:
            if -(1 << 63) <= v < (1 << 64):
                self.add(1)
                return v
            try:
                r = repr(v)
            except ValueError:  # more digits than sys.get_int_max_str_digits()
                r = "<int of %d bits>" % v.bit_length()
            self.add(len(r) + 2)
            return r
        if t is float:
            self.add(1)
            return v if v - v == 0.0 else None
        if isinstance(v, (list, tuple, dict, set, frozenset)):
            return self.container(v, depth)
        if isinstance(v, str):
            return self.convert(str.__str__(v), depth)
        if isinstance(v, int):
            return self.convert(int.__int__(v), depth)
        if isinstance(v, float):
            return self.convert(float.__float__(v), depth)
        return self.as_repr(v)

    def container(self, v, depth):
        if depth >= MAX_OUTPUT_DEPTH:
            return self.as_repr(v)
        key = id(v)
        if key in self.active:
            r = "{...}" if isinstance(v, dict) else "[...]"
            self.add(len(r) + 2)
            return r
        self.active.add(key)
        try:
            self.add(2)
            if isinstance(v, dict):
                out = {}
                for k, item in list(v.items()):
                    k = clean_str(k) if type(k) is str else safe_str(k)
                    self.add(len(k) + 4)
                    out[k] = self.convert(item, depth + 1)
                return out
            items = list(v)
            if isinstance(v, (set, frozenset)):
                try:
                    items = sorted(items)
                except BaseException:
                    pass
            out = []
            for item in items:
                self.add(1)
                out.append(self.convert(item, depth + 1))
            return out
        finally:
            self.active.discard(key)


# Tool arguments and results: integers must fit in 64 signed bits on both backends (JSON parsers
# on the way, the host's and the Hyperlight SDK's, turn larger ones into floats silently).
INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1
_DIGITS_TO_ZERO = str.maketrans("123456789", "000000000")


def may_hold_big_int(json_text):
    """False when the JSON text cannot hold an integer beyond int64 (no run of 19 digits): the
    cheap test before big_int_path walks the value."""
    return "0" * 19 in json_text.translate(_DIGITS_TO_ZERO)


def big_int_path(value, max_items=1 << 22):
    """Where in value (JSON-like data) the first int outside int64 is, as "kwargs['a'][2]"-style
    text relative to the value; None when there is none. Iterative: no recursion limit."""
    stack = [(value, "")]
    seen = 0
    while stack:
        v, path = stack.pop()
        seen += 1
        if seen > max_items:
            return None
        t = type(v)
        if t is bool or v is None or t is str or t is float:
            continue
        if isinstance(v, int):
            if not INT64_MIN <= v <= INT64_MAX:
                return path
        elif isinstance(v, dict):
            for k, item in v.items():
                stack.append((item, "%s[%s]" % (path, safe_repr(k))))
        elif isinstance(v, (list, tuple)):
            for i, item in enumerate(v):
                stack.append((item, "%s[%d]" % (path, i)))
    return None


def big_int_message(what, path):
    """The ToolError message for an integer beyond int64 found at path of `what`."""
    return ("%s%s is an integer outside the signed 64-bit range (%d..%d); pass it as a string"
            % (what, " at " + path if path else "", INT64_MIN, INT64_MAX))


def clean_json(value):
    """A copy of JSON-serialisable data with lone surrogates in its strings replaced."""
    if isinstance(value, str):
        return clean_str(value)
    if isinstance(value, dict):
        return {clean_str(k) if isinstance(k, str) else k: clean_json(v)
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean_json(v) for v in value]
    return value

