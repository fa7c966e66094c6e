"""Ordinary agent-style programs that must pass with zero violations.

A false positive costs the agent a round trip: when one of these fails, fix the validator, not
the program. One generated test method per program.
"""

import textwrap
import unittest

from validator import validate

ACCEPT = {}


def program(name):
    def register(text):
        ACCEPT[name] = textwrap.dedent(text)
    return register


program("statistics_summary")("""
    import statistics

    samples = [12.5, 13.1, 11.8, 14.2, 12.9, 13.7]
    mean = statistics.mean(samples)
    stdev = statistics.stdev(samples)
    median = statistics.median(samples)
    outliers = [s for s in samples if abs(s - mean) > 2 * stdev]
    print(f"mean={mean:.2f} stdev={stdev:.3f} median={median}")
    print("outliers:", outliers or "none")
""")

program("json_roundtrip")("""
    import json

    raw = '{"users": [{"name": "ada", "age": 36}, {"name": "alan", "age": 41}]}'
    data = json.loads(raw)
    for user in data["users"]:
        user["adult"] = user["age"] >= 18
    encoded = json.dumps(data, indent=2, sort_keys=True, default=str)
    print(encoded)
    assert json.loads(encoded) == data
""")

program("regex_extraction")("""
    import re

    LOG = '''2024-01-02 ERROR disk full on /dev/sda1
    2024-01-02 INFO backup done
    2024-01-03 ERROR timeout talking to db-1'''
    pattern = re.compile(r"^(\\d{4}-\\d{2}-\\d{2}) (ERROR|INFO) (.*)$", re.MULTILINE)
    errors = [m.group(3) for m in pattern.finditer(LOG) if m.group(2) == "ERROR"]
    hosts = re.findall(r"db-\\d+", LOG)
    print(errors, hosts)
    print(re.sub(r"\\s+", " ", "a   b\\tc"))
""")

program("datetime_arithmetic")("""
    from datetime import date, datetime, timedelta, timezone

    start = datetime(2024, 3, 1, 9, 30, tzinfo=timezone.utc)
    deadlines = [start + timedelta(days=7 * i) for i in range(4)]
    for d in deadlines:
        print(d.isoformat(), d.strftime("%A"))
    age = (date(2024, 6, 1) - date(1990, 6, 15)).days // 365
    print("age", age, "now-ish", datetime.now(timezone.utc).year >= 2024)
""")

program("collections_usage")("""
    from collections import Counter, OrderedDict, defaultdict, deque, namedtuple, ChainMap

    words = "the quick brown fox jumps over the lazy dog the end".split()
    counts = Counter(words)
    print(counts.most_common(2))
    groups = defaultdict(list)
    for w in words:
        groups[len(w)].append(w)
    recent = deque(maxlen=3)
    for w in words:
        recent.append(w)
    Point = namedtuple("Point", "x y")
    p = Point(1, 2)._replace(y=5)
    print(p._asdict(), Point._fields, list(recent))
    od = OrderedDict(sorted(groups.items()))
    od.move_to_end(3)
    print(ChainMap({"a": 1}, {"a": 2, "b": 3})["b"])
""")

program("itertools_pipeline")("""
    import itertools
    from operator import itemgetter

    rows = [("a", 1), ("a", 2), ("b", 5), ("c", 1), ("c", 9)]
    for key, grp in itertools.groupby(sorted(rows, key=itemgetter(0)), key=itemgetter(0)):
        print(key, sum(v for _, v in grp))
    pairs = list(itertools.combinations(range(4), 2))
    flat = list(itertools.chain.from_iterable([[1, 2], [3], [4, 5]]))
    window = list(itertools.islice(itertools.count(10, 5), 4))
    print(pairs, flat, window, list(itertools.accumulate([1, 2, 3])))
""")

program("dataclasses_models")("""
    from dataclasses import asdict, dataclass, field, replace


    @dataclass(order=True)
    class Task:
        priority: int
        title: str = field(compare=False)
        tags: list[str] = field(default_factory=list, compare=False)

        def __post_init__(self):
            self.title = self.title.strip()


    tasks = sorted([Task(2, " write "), Task(1, "plan", ["p"]), Task(3, "ship")])
    done = replace(tasks[0], title="plan (done)")
    print([asdict(t) for t in tasks], done)
""")

program("class_with_dunder_methods")("""
    class Vector:
        '''A 2-D vector.'''

        def __init__(self, x, y):
            self.x = x
            self.y = y

        def __repr__(self):
            return f"Vector({self.x!r}, {self.y!r})"

        def __eq__(self, other):
            return isinstance(other, Vector) and (self.x, self.y) == (other.x, other.y)

        def __lt__(self, other):
            return abs(self) < abs(other)

        def __add__(self, other):
            return Vector(self.x + other.x, self.y + other.y)

        def __abs__(self):
            return (self.x ** 2 + self.y ** 2) ** 0.5

        def __hash__(self):
            return hash((self.x, self.y))


    v = Vector(1, 2) + Vector(3, 4)
    print(v, abs(v), sorted([v, Vector(0, 1)]), Vector.__doc__, type(v).__name__)
""")

program("inheritance_super")("""
    class Animal:
        def __init__(self, name):
            self.name = name

        def speak(self):
            raise NotImplementedError


    class Dog(Animal):
        def __init__(self, name, tricks=None):
            super().__init__(name)
            self.tricks = list(tricks or [])

        def speak(self):
            return f"{self.name} says woof"

        def __str__(self):
            return f"Dog<{self.name}>"


    d = Dog("rex", ["sit"])
    print(d.speak(), str(d), isinstance(d, Animal), Dog.__name__)
""")

program("properties_and_classmethods")("""
    class Temperature:
        def __init__(self, celsius=0.0):
            self._celsius = celsius

        @property
        def fahrenheit(self):
            return self._celsius * 9 / 5 + 32

        @fahrenheit.setter
        def fahrenheit(self, value):
            self._celsius = (value - 32) * 5 / 9

        @classmethod
        def from_fahrenheit(cls, value):
            t = cls()
            t.fahrenheit = value
            return t

        @staticmethod
        def describe():
            return "temperature in celsius"


    t = Temperature.from_fahrenheit(212)
    print(round(t._celsius), t.fahrenheit, Temperature.describe())
""")

program("file_io_with_open")("""
    lines = ["alpha", "beta", "gamma"]
    with open("out.txt", "w", encoding="utf-8") as f:
        for i, line in enumerate(lines, 1):
            f.write(f"{i}: {line}\\n")
    with open("out.txt", encoding="utf-8") as f:
        content = f.read()
    print(content.splitlines()[-1])
""")

program("pathlib_files")("""
    from pathlib import Path

    root = Path("data")
    root.mkdir(exist_ok=True)
    (root / "a.json").write_text('{"x": 1}')
    for path in sorted(root.glob("*.json")):
        print(path.name, path.stem, path.suffix, path.stat().st_size)
    report = Path("report.md")
    report.write_text("# Report\\n")
    print(report.read_text().strip(), report.exists())
""")

program("os_environ_and_path")("""
    import os
    import os.path

    api_base = os.environ.get("API_BASE", "http://localhost")
    debug = os.environ.get("DEBUG", "0") == "1"
    target = os.path.join("output", "result.csv")
    print(api_base, debug, os.path.basename(target), os.path.splitext(target)[1])
    print(os.path.exists(target), "HOME" in os.environ)
""")

program("os_alias_used_properly")("""
    import os as system_os
    from os import environ, path

    env = system_os.environ
    name = env.get("USER", "nobody")
    print(name, path.join("a", "b"), environ.get("LANG"), system_os.path.sep)
""")

program("async_gather_tools")("""
    import asyncio


    async def fetch_weather(city):
        result = await call_tool("weather", city=city)
        if "error" in result:
            return city, None
        return city, result["temp_c"]


    async def main():
        cities = ["Paris", "Oslo", "Lima"]
        results = await asyncio.gather(*(fetch_weather(c) for c in cities))
        for city, temp in results:
            print(f"{city:>6}: {temp if temp is not None else 'n/a'}")
        return dict(results)


    summary = await main()
    summary
""")

program("top_level_await_call_tool")("""
    total = await call_tool("add", a=1, b=2)
    doubled = await call_tool("multiply", a=total, b=2)
    print("total", total, "doubled", doubled)
""")

program("asyncio_tasks_and_timeouts")("""
    import asyncio


    async def worker(name, queue, results):
        while True:
            item = await queue.get()
            await asyncio.sleep(0)
            results.append((name, item * 2))
            queue.task_done()


    async def run():
        queue = asyncio.Queue()
        results = []
        for i in range(5):
            queue.put_nowait(i)
        tasks = [asyncio.create_task(worker(f"w{i}", queue, results)) for i in range(2)]
        await asyncio.wait_for(queue.join(), timeout=5)
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        sem = asyncio.Semaphore(2)
        async with sem:
            pass
        return sorted(results, key=lambda r: r[1])


    print(await run())
""")

program("error_handling_raise_from")("""
    class ConfigError(Exception):
        pass


    def parse_port(value):
        try:
            port = int(value)
        except ValueError as exc:
            raise ConfigError(f"invalid port {value!r}") from exc
        if not 0 < port < 65536:
            raise ConfigError("port out of range")
        return port


    for candidate in ["8080", "eighty", "70000"]:
        try:
            print(parse_port(candidate))
        except ConfigError as err:
            print("error:", err, "| args:", err.args)
""")

program("try_except_finally")("""
    import json

    attempts = 0
    result = None
    try:
        attempts += 1
        result = json.loads("{broken")
    except json.JSONDecodeError as e:
        print("bad json at", e.pos, e.msg)
    except (KeyError, TypeError):
        print("unexpected")
    else:
        print("parsed", result)
    finally:
        print("attempts", attempts)
""")

program("match_statements")("""
    from dataclasses import dataclass


    @dataclass
    class Point:
        x: int
        y: int


    def describe(shape):
        match shape:
            case Point(x=0, y=0):
                return "origin"
            case Point(x=0, y=y):
                return f"on the y axis at {y}"
            case {"type": "circle", "radius": r} if r > 0:
                return f"circle r={r}"
            case {"type": kind, **rest}:
                return f"{kind} with {sorted(rest)}"
            case [first, *others]:
                return f"list starting with {first} (+{len(others)})"
            case str() | bytes():
                return "text"
            case _:
                return "unknown"


    for s in [Point(0, 0), Point(0, 3), {"type": "circle", "radius": 2}, {"type": "sq", "w": 1}, [1, 2], "x", 3.5]:
        print(describe(s))
""")

program("fstrings_and_format_specs")("""
    name = "widget"
    price = 1234.5678
    qty = 42
    print(f"{name!r:>12} | {price:,.2f} | {qty:05d} | {qty / 7:.3e}")
    print(f"{'centered':^20}|{price:>{10}.1f}|{name.upper()!s}")
    width = 8
    print(f"{qty:{width}} {price=:.1f}")
""")

program("str_format_literal_templates")("""
    rows = [("apples", 3.5), ("pears", 12.25)]
    for name, value in rows:
        print("{}: {:.2f}".format(name, value))
    print("{name} has {count} items".format(name="cart", count=len(rows)))
    print("{0[0]} and {0[1]}".format(["first", "second"]))
    print("{point.real} + {point.imag}j".format(point=3 + 4j))
    values = {"user": "ada"}
    print("hello {user}".format_map(values))
    HEADER = "== {title} =="
    print(HEADER.format(title="Summary"))
    fmt = "{:>10}".format
    print(fmt("right"))
""")

program("decorators_functools")("""
    import functools
    import time


    def timed(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                print(f"{fn.__name__} took {time.perf_counter() - start:.6f}s")
        return wrapper


    @timed
    @functools.lru_cache(maxsize=None)
    def fib(n):
        return n if n < 2 else fib(n - 1) + fib(n - 2)


    print(fib(30))
    add3 = functools.partial(lambda a, b: a + b, 3)
    print(add3(4), functools.reduce(lambda a, b: a * b, range(1, 6)))
""")

program("decorator_with_arguments")("""
    def retry(times=3):
        def decorate(fn):
            def run(*args):
                last = None
                for attempt in range(times):
                    try:
                        return fn(*args)
                    except RuntimeError as exc:
                        last = exc
                        print("attempt", attempt + 1, "failed")
                raise last
            return run
        return decorate


    calls = {"n": 0}


    @retry(times=4)
    def flaky():
        calls["n"] += 1
        if calls["n"] < 3:
            raise RuntimeError("not yet")
        return "ok"


    print(flaky(), calls)
""")

program("lambdas_and_sorting")("""
    people = [
        {"name": "Ann", "age": 31, "city": "Oslo"},
        {"name": "Bob", "age": 25, "city": "Lima"},
        {"name": "Cid", "age": 31, "city": "Bonn"},
    ]
    by_age_then_name = sorted(people, key=lambda p: (-p["age"], p["name"]))
    names = list(map(lambda p: p["name"].lower(), by_age_then_name))
    adults = list(filter(lambda p: p["age"] >= 30, people))
    print(names, len(adults), max(people, key=lambda p: len(p["city"]))["city"])
""")

program("comprehensions")("""
    matrix = [[i * j for j in range(1, 5)] for i in range(1, 5)]
    transposed = [list(row) for row in zip(*matrix)]
    squares = {n: n * n for n in range(10) if n % 2}
    letters = {c for c in "mississippi"}
    total = sum(x for row in matrix for x in row if x > 4)
    print(transposed[0], squares, sorted(letters), total)
""")

program("generators_yield_from")("""
    def chunks(items, size):
        for i in range(0, len(items), size):
            yield items[i:i + size]


    def flatten(nested):
        for item in nested:
            if isinstance(item, list):
                yield from flatten(item)
            else:
                yield item


    def running_total():
        total = 0
        while True:
            value = yield total
            if value is None:
                return total
            total += value


    gen = running_total()
    next(gen)
    for v in (1, 2, 3):
        gen.send(v)
    print(list(chunks(list(range(7)), 3)), list(flatten([1, [2, [3, [4]]], 5])))
""")

program("walrus_operator")("""
    import re

    lines = ["id=1", "noise", "id=22", "id=x"]
    ids = [int(m.group(1)) for line in lines if (m := re.match(r"id=(\\d+)$", line))]
    data = list(range(20))
    if (n := len(data)) > 10:
        print(f"list is too long ({n} elements, expected <= 10)")
    while (chunk := data[:5]):
        data = data[5:]
        print(sum(chunk))
    print(ids)
""")

program("global_and_nonlocal")("""
    counter = 0


    def bump():
        global counter
        counter += 1
        return counter


    def make_accumulator():
        total = 0

        def add(x):
            nonlocal total
            total += x
            return total
        return add


    acc = make_accumulator()
    acc(5)
    bump()
    bump()
    print(counter, acc(10))
""")

program("del_and_assert")("""
    inventory = {"apples": 3, "pears": 0, "plums": 7}
    for fruit in [k for k, v in inventory.items() if v == 0]:
        del inventory[fruit]
    items = [1, 2, 3, 4]
    del items[1:3]
    assert items == [1, 4], items
    assert "pears" not in inventory, "pears should be gone"
    temp = "scratch"
    del temp
    print(inventory, items)
""")

program("enum_usage")("""
    from enum import Enum, IntEnum, auto


    class Color(Enum):
        RED = auto()
        GREEN = auto()
        BLUE = auto()

        def describe(self):
            return f"{self.name.lower()} ({self.value})"


    class Level(IntEnum):
        LOW = 1
        HIGH = 3


    print([c.describe() for c in Color], Color["RED"], Color(2), Level.HIGH > Level.LOW)
""")

program("typing_annotations")("""
    from __future__ import annotations

    from typing import Any, Callable, Iterable, Optional, TypedDict, TypeVar, Union

    T = TypeVar("T")


    class Row(TypedDict):
        id: int
        name: str


    def first(items: Iterable[T], pred: Callable[[T], bool]) -> Optional[T]:
        for item in items:
            if pred(item):
                return item
        return None


    def normalise(value: Union[int, str, None]) -> "str | None":
        return None if value is None else str(value)


    class Node:
        def __init__(self, value: int, parent: "Optional[Node]" = None) -> None:
            self.value = value
            self.parent = parent


    rows: list[Row] = [{"id": 1, "name": "a"}]
    meta: dict[str, Any] = {}
    print(first(rows, lambda r: r["id"] == 1), normalise(5), Node(1, Node(0)).parent.value)
""")

program("decimal_and_fractions")("""
    from decimal import ROUND_HALF_UP, Decimal, getcontext
    from fractions import Fraction

    getcontext().prec = 28
    prices = [Decimal("19.99"), Decimal("5.01"), Decimal("0.10")]
    total = sum(prices, Decimal("0"))
    vat = (total * Decimal("0.2")).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    ratio = Fraction(3, 4) + Fraction(1, 6)
    print(total, vat, ratio, float(ratio), ratio.limit_denominator(10))
""")

program("hashing_and_encoding")("""
    import base64
    import binascii
    import hashlib
    import hmac
    import zlib

    payload = "hello world".encode("utf-8")
    digest = hashlib.sha256(payload).hexdigest()
    signature = hmac.new(b"secret", payload, hashlib.sha256).hexdigest()
    b64 = base64.b64encode(payload).decode("ascii")
    packed = zlib.compress(payload * 10)
    print(digest[:16], signature[:16], b64, binascii.hexlify(payload[:4]), len(packed))
    print(base64.b64decode(b64) == payload, zlib.decompress(packed)[:5], zlib.crc32(payload))
""")

program("heapq_and_bisect")("""
    import bisect
    import heapq

    scores = [71, 93, 55, 88, 67, 99, 42]
    top3 = heapq.nlargest(3, scores)
    heap = []
    for s in scores:
        heapq.heappush(heap, (-s, f"player{s}"))
    best = heapq.heappop(heap)
    grades = [60, 70, 80, 90]
    letters = "FDCBA"
    print(top3, best, [letters[bisect.bisect(grades, s)] for s in scores])
    ordered = []
    for s in scores:
        bisect.insort(ordered, s)
    print(ordered)
""")

program("csv_with_stringio")("""
    import csv
    import io

    text = "name,qty,price\\nbolt,10,0.25\\nnut,200,0.05\\n"
    reader = csv.DictReader(io.StringIO(text))
    rows = [dict(r, total=int(r["qty"]) * float(r["price"])) for r in reader]
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=["name", "total"], extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    print(out.getvalue())
""")

program("textwrap_and_string")("""
    import string
    import textwrap

    paragraph = '''The quick brown fox jumps over the lazy dog. ''' * 4
    print(textwrap.fill(paragraph, width=40))
    print(textwrap.shorten(paragraph, width=30, placeholder="..."))
    print(textwrap.dedent('''
        indented
          more
    ''').strip())
    tmpl = string.Template("$who likes $what")
    print(tmpl.substitute(who="tim", what="kung pao"), string.ascii_lowercase[:5])
""")

program("zoneinfo_and_calendar")("""
    import calendar
    from datetime import datetime
    from zoneinfo import ZoneInfo

    meeting = datetime(2024, 7, 1, 15, 0, tzinfo=ZoneInfo("Europe/Paris"))
    for tz in ["America/New_York", "Asia/Tokyo", "UTC"]:
        local = meeting.astimezone(ZoneInfo(tz))
        print(f"{tz:20} {local:%Y-%m-%d %H:%M}")
    print(calendar.monthrange(2024, 2), calendar.isleap(2024), calendar.day_name[0])
""")

program("main_guard_and_doc")("""
    '''Small CLI-style program.'''


    def main():
        print("running", __name__)
        print((main.__doc__ or "no doc").strip())
        return 0


    if __name__ == "__main__":
        main()
    else:
        print(__doc__)
""")

program("abc_and_contextlib")("""
    import contextlib
    from abc import ABC, abstractmethod


    class Shape(ABC):
        @abstractmethod
        def area(self) -> float: ...


    class Square(Shape):
        def __init__(self, side):
            self.side = side

        def area(self):
            return self.side ** 2


    @contextlib.contextmanager
    def section(title):
        print(f"--- {title} ---")
        try:
            yield title
        finally:
            print(f"--- end {title} ---")


    with section("shapes") as t, contextlib.suppress(ZeroDivisionError):
        print(t, Square(3).area())
        1 / 0
""")

program("context_manager_class")("""
    class Timer:
        def __init__(self, label):
            self.label = label
            self.entered = False

        def __enter__(self):
            self.entered = True
            return self

        def __exit__(self, exc_type, exc, tb):
            print(f"{self.label}: exit ({exc_type.__name__ if exc_type else 'ok'})")
            return False


    with Timer("block") as t:
        print(t.entered)
""")

program("async_context_and_iterators")("""
    import asyncio


    class Connection:
        async def __aenter__(self):
            await asyncio.sleep(0)
            return self

        async def __aexit__(self, *exc):
            return False

        def __aiter__(self):
            self.n = 0
            return self

        async def __anext__(self):
            self.n += 1
            if self.n > 3:
                raise StopAsyncIteration
            return self.n


    async def consume():
        async with Connection() as conn:
            return [x async for x in conn]


    print(await consume())
""")

program("copy_pprint_random")("""
    import copy
    import pprint
    import random

    random.seed(42)
    config = {"layers": [{"size": random.randint(1, 9)} for _ in range(3)], "name": "net"}
    clone = copy.deepcopy(config)
    clone["layers"][0]["size"] = 100
    pprint.pprint(config, width=60)
    print(random.choice(["a", "b"]), random.sample(range(10), 3), clone != config)
    rng = random.Random(7)
    print(rng.random() < 1)
""")

program("math_and_cmath")("""
    import cmath
    import math

    angles = [0, math.pi / 6, math.pi / 4, math.pi / 2]
    table = [(round(math.degrees(a)), round(math.sin(a), 3)) for a in angles]
    roots = [cmath.sqrt(-4), cmath.exp(1j * math.pi)]
    print(table, roots, math.isclose(0.1 + 0.2, 0.3), math.gcd(48, 18), math.comb(5, 2))
    print(math.inf > 1e308, math.isnan(float("nan")), math.prod([1, 2, 3, 4]))
""")

program("difflib_unicodedata_uuid")("""
    import difflib
    import unicodedata
    import uuid

    old = ["apple", "banana", "cherry"]
    new = ["apple", "blueberry", "cherry", "date"]
    for line in difflib.unified_diff(old, new, lineterm=""):
        print(line)
    print(difflib.get_close_matches("appel", ["apple", "ape", "maple"]))
    print(unicodedata.normalize("NFKD", "café").encode("ascii", "ignore"), unicodedata.name("é"))
    print(len(str(uuid.uuid4())), uuid.UUID(int=0))
""")

program("array_numbers_operator")("""
    import array
    import numbers
    import operator

    values = array.array("d", [1.5, 2.5, 3.0])
    values.append(4.0)
    mixed = [1, 2.5, "x", 3j, None]
    nums = [v for v in mixed if isinstance(v, numbers.Number)]
    pairs = sorted([("b", 2), ("a", 1)], key=operator.itemgetter(1))
    print(sum(values), nums, pairs, operator.add(2, 3), operator.mul(4, 5))
""")

program("private_attributes_on_own_objects")("""
    class Cache:
        def __init__(self):
            self._store = {}
            self.__hits = 0

        def get(self, key, default=None):
            if key in self._store:
                self.__hits += 1
            return self._store.get(key, default)

        def put(self, key, value):
            self._store[key] = value

        @property
        def hits(self):
            return self.__hits


    c = Cache()
    c.put("a", 1)
    c.get("a")
    print(c.hits, c._store)
""")

program("parameters_named_like_builtins")("""
    from pathlib import Path


    def list_files(dir, pattern="*"):
        return sorted(p.name for p in Path(dir).glob(pattern))


    def clean(input):
        return input.strip().lower()


    def summary(vars):
        return ", ".join(f"{k}={v}" for k, v in vars.items())


    print(list_files("."), clean("  MiXeD "), summary({"a": 1}))
    print([dir for dir in ["a", "b"]])
""")

program("inventory_report")("""
    import json
    from collections import defaultdict
    from dataclasses import dataclass


    @dataclass
    class Item:
        sku: str
        warehouse: str
        qty: int
        unit_cost: float

        @property
        def value(self):
            return self.qty * self.unit_cost


    raw = await call_tool("list_inventory", warehouse="all")
    items = [Item(**r) for r in raw["items"]] if isinstance(raw, dict) else []
    per_wh = defaultdict(float)
    low_stock = []
    for item in items:
        per_wh[item.warehouse] += item.value
        if item.qty < 10:
            low_stock.append(item.sku)
    report = {
        "total_value": round(sum(per_wh.values()), 2),
        "by_warehouse": {k: round(v, 2) for k, v in sorted(per_wh.items())},
        "low_stock": sorted(low_stock),
    }
    if low_stock:
        await call_tool("notify", channel="ops", text=f"{len(low_stock)} SKUs low")
    print(json.dumps(report, indent=2))
    report
""")

program("text_statistics")("""
    import re
    import string
    from collections import Counter

    TEXT = '''It was the best of times, it was the worst of times, it was the age of
    wisdom, it was the age of foolishness, it was the epoch of belief.'''

    words = re.findall(r"[a-z']+", TEXT.lower())
    freq = Counter(w for w in words if w not in {"it", "was", "the", "of"})
    longest = max(words, key=len)
    punctuation = sum(1 for ch in TEXT if ch in string.punctuation)
    print(f"{len(words)} words, {len(set(words))} unique, longest={longest!r}")
    for word, n in freq.most_common(3):
        print(f"  {word:<12}{n:>3}")
    print("punctuation marks:", punctuation)
""")

program("tool_results_with_error_checks")("""
    import asyncio
    import time


    async def safe_call(name, **kwargs):
        try:
            result = await call_tool(name, **kwargs)
        except Exception as exc:
            return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        if isinstance(result, dict) and result.get("error"):
            return {"ok": False, "error": result["error"]}
        return {"ok": True, "value": result}


    started = time.monotonic()
    checks = await asyncio.gather(
        safe_call("search", query="python asyncio"),
        safe_call("fetch", url="https://example.org"),
    )
    failures = [c["error"] for c in checks if not c["ok"]]
    print(f"{len(checks) - len(failures)}/{len(checks)} ok in {time.monotonic() - started:.1f}s")
    for failure in failures:
        print(" -", failure)
""")

program("exception_groups")("""
    def validate_all(values):
        errors = []
        for v in values:
            if not isinstance(v, int):
                errors.append(TypeError(f"{v!r} is not an int"))
            elif v < 0:
                errors.append(ValueError(f"{v} is negative"))
        if errors:
            raise ExceptionGroup("invalid values", errors)


    try:
        validate_all([1, -2, "x"])
    except* TypeError as group:
        print("type errors:", [str(e) for e in group.exceptions])
    except* ValueError as group:
        print("value errors:", [str(e) for e in group.exceptions])
""")

program("long_string_literal")("s = '" + "x" * 60000 + "'\nprint(len(s))\n")

program("non_ascii_identifiers_and_text")("""
    π = 3.14159
    café = "crème brûlée"
    名前 = "テスト"
    print(f"{π:.2f} {café} {名前} — ✓")
""")

program("lru_cache_and_total_ordering")("""
    from functools import cached_property, lru_cache, total_ordering


    @total_ordering
    class Version:
        def __init__(self, text):
            self.text = text

        @cached_property
        def parts(self):
            return tuple(int(p) for p in self.text.split("."))

        def __eq__(self, other):
            return self.parts == other.parts

        def __lt__(self, other):
            return self.parts < other.parts


    @lru_cache(maxsize=128)
    def parse(text):
        return Version(text)


    versions = sorted(parse(v) for v in ["1.10.0", "1.2.3", "1.2.10"])
    print([v.text for v in versions], parse("1.0") <= parse("1.0"), parse.cache_info().hits)
""")

program("iterator_protocol")("""
    class Countdown:
        def __init__(self, start):
            self.current = start

        def __iter__(self):
            return self

        def __next__(self):
            if self.current <= 0:
                raise StopIteration
            self.current -= 1
            return self.current + 1

        def __len__(self):
            return max(self.current, 0)


    c = Countdown(3)
    print(len(c), list(c), iter(c).__next__ is not None)
""")


class AcceptTest(unittest.TestCase):
    pass


def _make(code):
    def test(self):
        report = validate(code)
        self.assertEqual(report, {"ok": True, "violations": []})
    return test


for _name, _code in ACCEPT.items():
    _test = _make(_code)
    _test.__name__ = "test_" + _name
    setattr(AcceptTest, _test.__name__, _test)


class AcceptCorpusTest(unittest.TestCase):
    def test_programs_compile(self):
        # Guards the corpus itself: a program with a syntax error would test nothing.
        import ast
        for name, code in ACCEPT.items():
            with self.subTest(name):
                compile(code, name, "exec", ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)

    def test_empty_and_blank_code(self):
        self.assertEqual(validate(""), {"ok": True, "violations": []})
        self.assertEqual(validate("\n\n# only a comment\n"), {"ok": True, "violations": []})


if __name__ == "__main__":
    unittest.main()
