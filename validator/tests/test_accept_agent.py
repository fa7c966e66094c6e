"""More ordinary agent programs that must pass with zero violations (issue 12).

The shapes a model writes when it drives tools: async fan-out over call_tool, dataclasses and
typing, class patterns on dataclasses (which read the generated __match_args__), decorators
built with functools.wraps, stdlib data work. They guard the class, module, annotation and
decorator rules against false positives. When one fails, fix the validator, not the program.
"""

import textwrap
import unittest

from validator import validate

ACCEPT = {}


def program(name):
    def register(text):
        assert name not in ACCEPT, name
        ACCEPT[name] = textwrap.dedent(text)
    return register


# --- async tool fan-out ----------------------------------------------------------------------

program("fanout_coroutines_in_list_later_gathered")("""
    import asyncio

    coros = [call_tool("lookup", key=k) for k in ("a", "b", "c")]
    values = await asyncio.gather(*coros)
    print(values)
""")

program("fanout_create_task_then_await")("""
    import asyncio

    tasks = {name: asyncio.create_task(call_tool("stat", name=name)) for name in ("x", "y")}
    for name, task in tasks.items():
        print(name, await task)
""")

program("fanout_appended_then_awaited_in_loop")("""
    pending = []
    for page in range(3):
        pending.append(call_tool("fetch_page", page=page))
    for coro in pending:
        print(await coro)
""")

program("fanout_wait_and_as_completed")("""
    import asyncio

    jobs = [asyncio.create_task(call_tool("job", n=n)) for n in range(3)]
    done, _ = await asyncio.wait(jobs, timeout=30)
    for next_done in asyncio.as_completed([call_tool("job", n=9)]):
        print(await next_done)
    print(len(done))
""")

program("fanout_task_group")("""
    import asyncio

    async with asyncio.TaskGroup() as group:
        first = group.create_task(call_tool("left"))
        second = group.create_task(call_tool("right"))
    print(first.result(), second.result())
""")

program("call_tool_returned_by_helper")("""
    import asyncio


    def fetch(path):
        return call_tool("read", path=path)

    text = await fetch("a.txt")
    print(await asyncio.wait_for(fetch("b.txt"), timeout=5) if text else None)
""")

program("gather_call_tool_fanout")("""
    import asyncio

    urls = ["https://a.example/1", "https://a.example/2", "https://b.example/3"]


    async def fetch(url):
        try:
            page = await call_tool("http_get", url=url)
        except ToolError as e:
            return url, f"error: {e}"
        return url, len(page.get("body", ""))


    results = await asyncio.gather(*(fetch(u) for u in urls))
    for url, size in results:
        print(f"{url:<28} {size}")
""")

program("gather_return_exceptions")("""
    import asyncio


    async def lookup(symbol: str) -> dict:
        quote = await call_tool("quote", symbol=symbol)
        if quote is None:
            raise ValueError(f"no quote for {symbol}")
        return {"symbol": symbol, "price": float(quote["price"])}


    symbols = ["ACME", "INIT", "NOPE"]
    outcomes = await asyncio.gather(*[lookup(s) for s in symbols], return_exceptions=True)
    ok = [o for o in outcomes if isinstance(o, dict)]
    failed = [(s, str(o)) for s, o in zip(symbols, outcomes) if isinstance(o, Exception)]
    print("ok:", ok)
    print("failed:", failed)
""")

program("create_task_and_wait")("""
    import asyncio


    async def summarize(doc_id: int) -> str:
        text = await call_tool("read_document", id=doc_id)
        return text[:80]


    async def main():
        tasks = {asyncio.create_task(summarize(i), name=f"doc-{i}"): i for i in range(1, 6)}
        done, pending = await asyncio.wait(tasks, timeout=30)
        for task in pending:
            task.cancel()
        summaries = {tasks[t]: t.result() for t in done if not t.exception()}
        return dict(sorted(summaries.items()))


    print(await main())
""")

program("wait_first_completed")("""
    import asyncio


    async def probe(region):
        latency = await call_tool("ping_region", region=region)
        return region, latency


    pending = {asyncio.create_task(probe(r)) for r in ("eu", "us", "ap")}
    first = None
    while pending and first is None:
        done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            if task.exception() is None:
                first = task.result()
                break
    for task in pending:
        task.cancel()
    print("fastest region:", first)
""")

program("semaphore_bounded_fanout")("""
    import asyncio

    limit = asyncio.Semaphore(4)
    results = []


    async def process(item):
        async with limit:
            out = await call_tool("classify", text=item)
            results.append((item, out["label"]))


    items = [f"ticket {n}" for n in range(12)]
    await asyncio.gather(*(process(i) for i in items))
    by_label = {}
    for item, label in results:
        by_label.setdefault(label, []).append(item)
    print({k: len(v) for k, v in by_label.items()})
""")

program("timeout_with_wait_for")("""
    import asyncio


    async def slow_tool():
        return await call_tool("long_running_job", seconds=5)


    try:
        result = await asyncio.wait_for(slow_tool(), timeout=2.5)
    except asyncio.TimeoutError:
        result = None
        print("job timed out; continuing with partial data")
    print("result:", result)
""")

program("asyncio_queue_pipeline")("""
    import asyncio


    async def producer(queue: asyncio.Queue, pages: int) -> None:
        for page in range(1, pages + 1):
            batch = await call_tool("list_orders", page=page)
            for order in batch:
                await queue.put(order)
        await queue.put(None)


    async def consumer(queue: asyncio.Queue) -> float:
        total = 0.0
        while (order := await queue.get()) is not None:
            total += order["amount"]
        return total


    q = asyncio.Queue(maxsize=50)
    _, revenue = await asyncio.gather(producer(q, 3), consumer(q))
    print(f"revenue: {revenue:,.2f}")
""")

program("asyncio_run_main")("""
    import asyncio
    import json


    async def main() -> None:
        raw = await call_tool("get_config")
        config = json.loads(raw) if isinstance(raw, str) else raw
        print(json.dumps(config, indent=2, sort_keys=True))


    if __name__ == "__main__":
        asyncio.run(main())
""")

program("tool_retry_with_backoff")("""
    import asyncio
    import random


    async def call_with_retry(name, attempts=4, **kwargs):
        delay = 0.1
        for attempt in range(1, attempts + 1):
            try:
                return await call_tool(name, **kwargs)
            except ToolError as e:
                if attempt == attempts:
                    raise
                print(f"attempt {attempt} failed ({e}); retrying in {delay:.2f}s")
                await asyncio.sleep(delay + random.uniform(0, 0.05))
                delay *= 2


    data = await call_with_retry("fetch_report", report_id=42)
    print(type(data).__name__)
""")

program("task_group_collect")("""
    import asyncio


    async def word_count(path: str) -> tuple[str, int]:
        text = await call_tool("read_file", path=path)
        return path, len(text.split())


    paths = ["/work/a.txt", "/work/b.txt"]
    async with asyncio.TaskGroup() as tg:
        tasks = [tg.create_task(word_count(p)) for p in paths]
    counts = dict(t.result() for t in tasks)
    print(counts, sum(counts.values()))
""")

# --- dataclasses -----------------------------------------------------------------------------

program("dataclass_default_factory")("""
    from dataclasses import dataclass, field, asdict


    @dataclass
    class Conversation:
        user: str
        messages: list[str] = field(default_factory=list)
        metadata: dict[str, str] = field(default_factory=dict)

        def add(self, text: str) -> None:
            self.messages.append(text.strip())


    conv = Conversation("ada")
    conv.add("  hello ")
    conv.add("how are you?")
    conv.metadata["channel"] = "chat"
    print(asdict(conv))
""")

program("dataclass_frozen_order")("""
    from dataclasses import dataclass


    @dataclass(frozen=True, order=True)
    class Version:
        major: int
        minor: int = 0
        patch: int = 0

        @classmethod
        def parse(cls, text: str) -> "Version":
            parts = [int(p) for p in text.split(".")]
            return cls(*parts)

        def __str__(self) -> str:
            return f"{self.major}.{self.minor}.{self.patch}"


    versions = sorted(Version.parse(v) for v in ["1.2.3", "1.10.0", "0.9", "1.2"])
    print([str(v) for v in versions], max(versions))
""")

program("dataclass_post_init_validation")("""
    from dataclasses import dataclass, field
    from datetime import date


    @dataclass
    class Booking:
        guest: str
        check_in: date
        check_out: date
        nights: int = field(init=False)

        def __post_init__(self):
            if self.check_out <= self.check_in:
                raise ValueError("check_out must be after check_in")
            self.nights = (self.check_out - self.check_in).days


    b = Booking("Ann", date(2024, 5, 1), date(2024, 5, 4))
    print(b.nights, b)
    try:
        Booking("Bob", date(2024, 5, 4), date(2024, 5, 1))
    except ValueError as e:
        print("rejected:", e)
""")

program("dataclass_inheritance_replace")("""
    import dataclasses


    @dataclasses.dataclass
    class Item:
        sku: str
        price: float


    @dataclasses.dataclass
    class DiscountedItem(Item):
        discount: float = 0.1

        @property
        def final_price(self) -> float:
            return round(self.price * (1 - self.discount), 2)


    item = DiscountedItem("A-1", 20.0)
    cheaper = dataclasses.replace(item, discount=0.25)
    print(item.final_price, cheaper.final_price, dataclasses.fields(cheaper)[0].name)
    print(dataclasses.astuple(cheaper), dataclasses.is_dataclass(cheaper))
""")

program("dataclass_kw_only_slots")("""
    from dataclasses import KW_ONLY, dataclass


    @dataclass(slots=True)
    class Request:
        method: str
        path: str
        _: KW_ONLY
        timeout: float = 10.0
        retries: int = 2


    r = Request("GET", "/status", timeout=3.5)
    print(r, r.retries)
""")

# --- typing ------------------------------------------------------------------------------------

program("typing_optional_generics")("""
    from typing import Any, Iterable, Optional, TypeVar

    T = TypeVar("T")


    def first(items: Iterable[T], default: Optional[T] = None) -> Optional[T]:
        for item in items:
            return item
        return default


    def merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = dict(a)
        out.update(b)
        return out


    print(first([3, 4]), first([], default=0), merge({"a": 1}, {"b": [1, 2]}))
""")

program("typing_typeddict_literal")("""
    from typing import Literal, TypedDict


    class Event(TypedDict, total=False):
        kind: Literal["click", "view", "purchase"]
        user_id: int
        amount: float


    def revenue(events: list[Event]) -> float:
        return sum(e.get("amount", 0.0) for e in events if e["kind"] == "purchase")


    events: list[Event] = [
        {"kind": "view", "user_id": 1},
        {"kind": "purchase", "user_id": 1, "amount": 9.99},
        {"kind": "purchase", "user_id": 2, "amount": 25.0},
    ]
    print(f"{revenue(events):.2f}")
""")

program("typing_namedtuple_class")("""
    from typing import NamedTuple


    class Coordinate(NamedTuple):
        lat: float
        lon: float
        label: str = ""

        def rounded(self, digits: int = 2) -> "Coordinate":
            return self._replace(lat=round(self.lat, digits), lon=round(self.lon, digits))


    places = [Coordinate(48.8566, 2.3522, "Paris"), Coordinate(59.9139, 10.7522, "Oslo")]
    for p in places:
        print(p.label, p.rounded(1), p._asdict()["lat"])
""")

program("typing_protocol_generic_class")("""
    from typing import Generic, Protocol, TypeVar

    T = TypeVar("T")


    class SupportsScore(Protocol):
        def score(self) -> float: ...


    class Stack(Generic[T]):
        def __init__(self) -> None:
            self._items: list[T] = []

        def push(self, item: T) -> None:
            self._items.append(item)

        def pop(self) -> T:
            return self._items.pop()

        def __len__(self) -> int:
            return len(self._items)


    class Answer:
        def __init__(self, text: str):
            self.text = text

        def score(self) -> float:
            return len(self.text) / 10


    def best(candidates: list[SupportsScore]) -> SupportsScore:
        return max(candidates, key=lambda c: c.score())


    s: Stack[int] = Stack()
    s.push(1)
    s.push(2)
    print(s.pop(), len(s), best([Answer("short"), Answer("a longer answer")]).text)
""")

program("typing_callable_union_alias")("""
    from __future__ import annotations

    from collections.abc import Awaitable, Callable

    Handler = Callable[[dict], Awaitable[dict | None]]
    Number = int | float


    def scale(values: list[Number], factor: Number = 2) -> list[Number]:
        return [v * factor for v in values]


    async def echo(payload: dict) -> dict | None:
        return payload or None


    handlers: dict[str, Handler] = {"echo": echo}
    print(scale([1, 2.5]), await handlers["echo"]({"x": 1}))
""")

# --- match ----------------------------------------------------------------------------------

program("match_dataclass_positional")("""
    from dataclasses import dataclass


    @dataclass
    class Point:
        x: float
        y: float


    @dataclass
    class Circle:
        center: Point
        radius: float


    @dataclass
    class Rect:
        corner: Point
        width: float
        height: float


    def area(shape) -> float:
        match shape:
            case Circle(Point(x, y), r) if r > 0:
                return 3.14159 * r * r
            case Rect(_, w, h):
                return w * h
            case Point():
                return 0.0
            case _:
                raise TypeError(f"not a shape: {shape!r}")


    print([area(s) for s in (Circle(Point(0, 0), 2), Rect(Point(1, 1), 3, 4), Point(5, 5))])
""")

program("match_tool_results")("""
    async def handle(command: str):
        result = await call_tool("run_query", sql=command)
        match result:
            case {"status": "ok", "rows": [first, *rest]}:
                return f"first row {first}, {len(rest)} more"
            case {"status": "ok", "rows": []}:
                return "no rows"
            case {"status": "error", "message": str(msg)}:
                return f"query failed: {msg}"
            case [*items] if all(isinstance(i, int) for i in items):
                return sum(items)
            case str() | bytes() as raw:
                return f"raw answer: {raw[:20]!r}"
            case _:
                return "unexpected"


    print(await handle("select 1"))
""")

program("match_namedtuple_and_enum")("""
    from collections import namedtuple
    from enum import Enum

    Move = namedtuple("Move", "direction steps")


    class Direction(Enum):
        NORTH = "n"
        SOUTH = "s"
        EAST = "e"
        WEST = "w"


    def apply(pos, move):
        x, y = pos
        match move:
            case Move(Direction.NORTH, n):
                return x, y + n
            case Move(Direction.SOUTH, n):
                return x, y - n
            case Move(direction=Direction.EAST, steps=n):
                return x + n, y
            case Move(d, n):
                return x - n, y


    pos = (0, 0)
    for m in [Move(Direction.NORTH, 3), Move(Direction.EAST, 2), Move(Direction.WEST, 1)]:
        pos = apply(pos, m)
    print(pos)
""")

program("match_literal_match_args_class")("""
    class Token:
        __match_args__ = ("kind", "value")

        def __init__(self, kind: str, value: str):
            self.kind = kind
            self.value = value

        def __repr__(self):
            return f"Token({self.kind!r}, {self.value!r})"


    def evaluate(tokens):
        stack = []
        for tok in tokens:
            match tok:
                case Token("num", v):
                    stack.append(float(v))
                case Token("op", "+"):
                    b, a = stack.pop(), stack.pop()
                    stack.append(a + b)
                case Token("op", "*"):
                    b, a = stack.pop(), stack.pop()
                    stack.append(a * b)
                case Token(kind, _):
                    raise ValueError(f"unknown token kind {kind}")
        return stack[-1]


    print(evaluate([Token("num", "2"), Token("num", "3"), Token("op", "+"), Token("num", "4"),
                    Token("op", "*")]))
""")

program("match_builtin_self_patterns")("""
    def normalize(value):
        match value:
            case bool(b):
                return "yes" if b else "no"
            case int(n) | float(n):
                return f"{n:.1f}"
            case str(s) if s.isdigit():
                return f"{int(s):.1f}"
            case list(items) | tuple(items):
                return [normalize(i) for i in items]
            case dict(mapping):
                return {k: normalize(v) for k, v in mapping.items()}
            case None:
                return "null"
            case _:
                return repr(value)


    print(normalize([1, "2", 3.5, True, {"k": (None, "x")}]))
""")

# --- classes ---------------------------------------------------------------------------------

program("class_properties_static_class_methods")("""
    class Temperature:
        ABSOLUTE_ZERO = -273.15

        def __init__(self, celsius: float):
            self.celsius = celsius

        @property
        def celsius(self) -> float:
            return self._celsius

        @celsius.setter
        def celsius(self, value: float) -> None:
            if value < self.ABSOLUTE_ZERO:
                raise ValueError("below absolute zero")
            self._celsius = value

        @property
        def fahrenheit(self) -> float:
            return self._celsius * 9 / 5 + 32

        @staticmethod
        def c_to_k(c: float) -> float:
            return c - Temperature.ABSOLUTE_ZERO

        @classmethod
        def from_kelvin(cls, k: float) -> "Temperature":
            return cls(k + cls.ABSOLUTE_ZERO)


    t = Temperature.from_kelvin(300)
    print(round(t.celsius, 2), round(t.fahrenheit, 1), Temperature.c_to_k(0))
""")

program("class_comparison_dunders")("""
    import functools


    @functools.total_ordering
    class Money:
        __slots__ = ("cents", "currency")

        def __init__(self, amount: str, currency: str = "EUR"):
            self.cents = round(float(amount) * 100)
            self.currency = currency

        def __repr__(self):
            return f"Money('{self.cents / 100:.2f}', {self.currency!r})"

        def __eq__(self, other):
            if not isinstance(other, Money):
                return NotImplemented
            return (self.cents, self.currency) == (other.cents, other.currency)

        def __lt__(self, other):
            if self.currency != other.currency:
                raise ValueError("currency mismatch")
            return self.cents < other.cents

        def __hash__(self):
            return hash((self.cents, self.currency))

        def __add__(self, other):
            return Money(str((self.cents + other.cents) / 100), self.currency)


    prices = [Money("3.50"), Money("1.25"), Money("10")]
    print(sorted(prices), sum(prices[1:], prices[0]), Money("2") >= Money("1.99"))
""")

program("enum_with_methods")("""
    import enum


    class Status(enum.Enum):
        PENDING = "pending"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

        @property
        def finished(self) -> bool:
            return self in (Status.DONE, Status.FAILED)


    class Priority(enum.IntEnum):
        LOW = 1
        HIGH = 2
        URGENT = 3


    jobs = [("backup", Status("done"), Priority.LOW), ("deploy", Status.RUNNING, Priority.URGENT)]
    for name, status, prio in sorted(jobs, key=lambda j: -j[2]):
        print(f"{name:<8} {status.value:<8} finished={status.finished} prio={prio.name}")
    print([s.name for s in Status], Status["FAILED"].value)
""")

program("abc_abstract_methods")("""
    from abc import ABC, abstractmethod


    class Exporter(ABC):
        def __init__(self, rows):
            self.rows = rows

        @abstractmethod
        def render(self) -> str:
            raise NotImplementedError

        def export(self, path: str) -> int:
            text = self.render()
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            return len(text)


    class CsvExporter(Exporter):
        def render(self) -> str:
            return "\\n".join(",".join(map(str, r)) for r in self.rows)


    class MarkdownExporter(Exporter):
        def render(self) -> str:
            lines = ["| " + " | ".join(map(str, r)) + " |" for r in self.rows]
            return "\\n".join(lines)


    rows = [("a", 1), ("b", 2)]
    for exporter in (CsvExporter(rows), MarkdownExporter(rows)):
        print(type(exporter).__name__, exporter.export("/tmp/out.txt"))
    try:
        Exporter(rows)
    except TypeError as e:
        print("abstract:", e)
""")

program("custom_exception_hierarchy")("""
    class AgentError(Exception):
        pass


    class RateLimited(AgentError):
        def __init__(self, retry_after: float):
            super().__init__(f"rate limited, retry after {retry_after}s")
            self.retry_after = retry_after


    async def guarded(name, **kwargs):
        try:
            return await call_tool(name, **kwargs)
        except ToolError as e:
            if "rate" in str(e).lower():
                raise RateLimited(1.5) from e
            raise AgentError(f"{name} failed: {e}") from e


    try:
        print(await guarded("search", q="python"))
    except RateLimited as e:
        print("wait", e.retry_after)
    except AgentError as e:
        print("error:", e)
""")

program("context_manager_class_and_contextlib")("""
    import contextlib
    import time


    class Timer:
        def __enter__(self):
            self.start = time.perf_counter()
            return self

        def __exit__(self, exc_type, exc, tb):
            self.elapsed = time.perf_counter() - self.start
            return False


    @contextlib.contextmanager
    def section(title: str):
        print(f"== {title} ==")
        try:
            yield title.upper()
        finally:
            print(f"== end {title} ==")


    with Timer() as t, section("report") as heading:
        total = sum(i * i for i in range(10_000))
        print(heading, total)
    print(f"took {t.elapsed:.4f}s")
    with contextlib.suppress(KeyError):
        {}["missing"]
""")

# --- functools -------------------------------------------------------------------------------

program("wraps_decorator_timing")("""
    import functools
    import time


    def timed(label=None):
        def decorate(fn):
            @functools.wraps(fn)
            async def wrapper(*args, **kwargs):
                start = time.perf_counter()
                try:
                    return await fn(*args, **kwargs)
                finally:
                    print(f"{label or fn.__name__}: {time.perf_counter() - start:.3f}s")
            return wrapper
        return decorate


    @timed()
    async def weather(city: str) -> dict:
        return await call_tool("weather", city=city)


    print(weather.__name__, weather.__doc__)
    print(await weather("Oslo"))
""")

program("wraps_from_import_cache")("""
    from functools import lru_cache, partial, reduce, wraps


    def logged(fn):
        @wraps(fn)
        def inner(*args):
            result = fn(*args)
            print(f"{fn.__name__}{args} -> {result}")
            return result
        return inner


    @logged
    @lru_cache(maxsize=128)
    def binomial(n: int, k: int) -> int:
        if k in (0, n):
            return 1
        return binomial(n - 1, k - 1) + binomial(n - 1, k)


    print(binomial(6, 3), binomial.__name__)
    power_of_two = partial(pow, 2)
    print([power_of_two(i) for i in range(6)], reduce(lambda a, b: a * b, range(1, 7), 1))
""")

program("functools_cached_property_cmp_to_key")("""
    import functools


    class Dataset:
        def __init__(self, rows):
            self.rows = rows

        @functools.cached_property
        def stats(self):
            values = [r["value"] for r in self.rows]
            return {"n": len(values), "mean": sum(values) / len(values)}


    def by_priority(a, b):
        return (a["prio"] > b["prio"]) - (a["prio"] < b["prio"])


    ds = Dataset([{"value": 3, "prio": 2}, {"value": 5, "prio": 1}])
    print(ds.stats, ds.stats is ds.stats)
    print(sorted(ds.rows, key=functools.cmp_to_key(by_priority)))
""")

# --- data work ----------------------------------------------------------------------------------

program("csv_report_from_tool")("""
    import csv
    import io
    from collections import defaultdict

    raw = await call_tool("export_sales_csv", month="2024-05")
    reader = csv.DictReader(io.StringIO(raw))
    totals = defaultdict(float)
    for row in reader:
        totals[row["region"]] += float(row["amount"])
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["region", "total"])
    for region, total in sorted(totals.items(), key=lambda kv: -kv[1]):
        writer.writerow([region, f"{total:.2f}"])
    print(out.getvalue())
""")

program("json_nested_transform")("""
    import json

    payload = json.loads(await call_tool("get_issues", repo="acme/app"))
    issues = [
        {
            "id": issue["number"],
            "title": issue["title"].strip(),
            "labels": sorted(label["name"] for label in issue.get("labels", [])),
            "assignee": (issue.get("assignee") or {}).get("login", "unassigned"),
        }
        for issue in payload
        if issue.get("state") == "open"
    ]
    print(json.dumps(issues[:5], indent=2, ensure_ascii=False))
""")

program("regex_log_parsing")("""
    import re
    from collections import Counter

    LINE = re.compile(
        r"(?P<ip>\\d+\\.\\d+\\.\\d+\\.\\d+) - - \\[(?P<ts>[^\\]]+)\\] "
        r'"(?P<method>[A-Z]+) (?P<path>\\S+) HTTP/[\\d.]+" (?P<status>\\d{3})'
    )
    log = await call_tool("tail_log", lines=500)
    statuses = Counter()
    paths = Counter()
    for line in log.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        statuses[m["status"]] += 1
        if m.group("status").startswith("5"):
            paths[m.group("path")] += 1
    print(statuses.most_common(), paths.most_common(3))
""")

program("datetime_scheduling")("""
    from datetime import datetime, time, timedelta, timezone
    from zoneinfo import ZoneInfo

    tz = ZoneInfo("Europe/Oslo")
    now = datetime(2024, 3, 29, 16, 45, tzinfo=tz)
    opening, closing = time(9, 0), time(17, 0)


    def next_slots(start: datetime, count: int, step: timedelta = timedelta(minutes=30)):
        slot = start
        while count:
            slot += step
            if opening <= slot.time() < closing and slot.weekday() < 5:
                yield slot
                count -= 1


    for s in next_slots(now, 4):
        print(s.isoformat(), s.astimezone(timezone.utc).strftime("%H:%M UTC"))
""")

program("statistics_decimal_fractions")("""
    import statistics
    from decimal import ROUND_HALF_UP, Decimal, getcontext
    from fractions import Fraction

    getcontext().prec = 28
    latencies = [120, 135, 98, 210, 143, 99, 101]
    print("mean", statistics.fmean(latencies), "median", statistics.median(latencies))
    print("quantiles", statistics.quantiles(latencies, n=4))
    price = Decimal("19.995").quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    vat = (price * Decimal("0.25")).quantize(Decimal("0.01"))
    print(price, vat, price + vat)
    share = Fraction(3, 8) + Fraction(1, 8)
    print(share, float(share), share.limit_denominator(3))
""")

program("collections_deque_counter_chainmap")("""
    from collections import ChainMap, Counter, OrderedDict, deque

    defaults = {"retries": 3, "timeout": 10, "verbose": False}
    overrides = {"timeout": 30}
    settings = ChainMap(overrides, defaults)
    window = deque(maxlen=3)
    seen = Counter()
    for value in [5, 3, 5, 8, 5, 3, 1]:
        window.append(value)
        seen[value] += 1
    lru = OrderedDict()
    for key in "abcab":
        lru[key] = lru.get(key, 0) + 1
        lru.move_to_end(key)
    print(dict(settings), list(window), seen.most_common(2), list(lru))
""")

program("itertools_heapq_bisect")("""
    import bisect
    import heapq
    import itertools

    scores = {"ann": 91, "bob": 78, "cid": 85, "dee": 97, "eve": 66}
    top3 = heapq.nlargest(3, scores.items(), key=lambda kv: kv[1])
    grades = "FDCBA"
    cutoffs = [60, 70, 80, 90]
    graded = {name: grades[bisect.bisect(cutoffs, s)] for name, s in scores.items()}
    pairs = list(itertools.combinations(sorted(scores), 2))[:4]
    batches = [list(itertools.islice(range(7), i, i + 3)) for i in range(0, 7, 3)]
    chunks = [list(g) for _, g in itertools.groupby(sorted(graded.values()))]
    merged = list(heapq.merge([1, 4, 9], [2, 3, 10]))
    print(top3, graded, pairs, chunks, merged, batches)
""")

program("textwrap_string_templates")("""
    import string
    import textwrap

    body = await call_tool("get_article", id=7)
    summary = textwrap.shorten(body, width=120, placeholder=" [...]")
    wrapped = textwrap.fill(summary, width=40)
    letter = string.Template("Dear $name,\\n\\n$text\\n\\n-- $sender")
    print(letter.substitute(name="Ada", text=textwrap.indent(wrapped, "  "), sender="bot"))
    print(string.capwords("the quick brown fox"), string.ascii_lowercase[:5])
""")

program("fstring_format_specs")("""
    rows = [("widget", 4, 3.5), ("gadget", 12, 12.25), ("doohickey", 1, 199.0)]
    width = max(len(name) for name, _, _ in rows)
    print(f"{'item':<{width}} | {'qty':>4} | {'price':>10}")
    print("-" * (width + 20))
    for name, qty, price in rows:
        print(f"{name:<{width}} | {qty:>4d} | {price:>10.2f}")
    total = sum(q * p for _, q, p in rows)
    print(f"{'total':<{width}} | {'':>4} | {total:>10,.2f}")
    print(f"{total!r} {name!s:^12} {qty:#06x} {0.25:.0%} {total=:.1f}")
""")

program("comprehensions_and_generators")("""
    def chunked(seq, size):
        for i in range(0, len(seq), size):
            yield seq[i:i + size]


    def running_mean(values):
        total = 0.0
        for n, v in enumerate(values, 1):
            total += v
            yield total / n


    data = list(range(1, 21))
    evens = [x for x in data if x % 2 == 0]
    squares = {x: x * x for x in evens}
    lookup = {v: k for k, v in squares.items()}
    pairs = [(a, b) for a in range(3) for b in range(a, 3)]
    print(list(chunked(evens, 4)), list(running_mean([2, 4, 6]))[-1], lookup[64], pairs)
    print(any(x > 19 for x in data), all(x > 0 for x in data), max((len(str(x)), x) for x in data))
""")

program("hashing_base64_uuid")("""
    import base64
    import hashlib
    import hmac
    import uuid

    payload = b'{"event": "deploy", "id": 17}'
    digest = hashlib.sha256(payload).hexdigest()
    signature = hmac.new(b"secret-key", payload, hashlib.sha256).hexdigest()
    token = base64.urlsafe_b64encode(payload).decode().rstrip("=")
    request_id = uuid.uuid4()
    version = uuid.UUID(str(request_id)).version
    print(digest[:16], signature[:16], token, request_id.hex[:8], version)
""")

program("copy_pprint_difflib")("""
    import copy
    import difflib
    import pprint

    config = {"name": "svc", "replicas": 2, "env": {"LOG": "info"}, "ports": [80, 443]}
    staged = copy.deepcopy(config)
    staged["replicas"] = 3
    staged["env"]["LOG"] = "debug"
    pprint.pprint(staged, width=60, sort_dicts=True)
    before = pprint.pformat(config).splitlines()
    after = pprint.pformat(staged).splitlines()
    for line in difflib.unified_diff(before, after, "live", "staged", lineterm=""):
        print(line)
""")

# --- files and environment ---------------------------------------------------------------------

program("pathlib_write_and_read")("""
    import json
    from pathlib import Path

    out_dir = Path("/work/output")
    out_dir.mkdir(parents=True, exist_ok=True)
    report = {"ok": 12, "failed": 1}
    target = out_dir / "report.json"
    target.write_text(json.dumps(report, indent=2), encoding="utf-8")
    Path("/work/x").write_text("hello\\n")
    loaded = json.loads(target.read_text(encoding="utf-8"))
    print(loaded == report, target.name, target.suffix, sorted(p.name for p in out_dir.iterdir()))
""")

program("os_environ_config")("""
    import os
    import os.path

    api_base = os.environ.get("API_BASE", "https://api.example.com")
    timeout = float(os.environ.get("TIMEOUT", "10"))
    debug = os.environ.get("DEBUG", "").lower() in {"1", "true", "yes"}
    keys = sorted(k for k in os.environ.keys() if k.startswith("APP_"))
    snapshot = os.environ.copy()
    os.environ.setdefault("APP_MODE", "batch")
    os.environ["APP_RUN"] = "1"
    out = os.path.join("/work", "runs", f"run-{len(keys)}.log")
    print(api_base, timeout, debug, keys, os.path.dirname(out), "HOME" in os.environ)
    print(len(snapshot) >= 0, os.environ.pop("APP_RUN"), os.path.splitext(out))
""")

program("os_environ_aliases")("""
    from os import environ
    import os as operating_system

    env = operating_system.environ
    user = environ.get("USER", "agent")
    home = env.get("HOME", "/tmp")
    for key, value in sorted(environ.items())[:3]:
        print(key, len(value))
    print(user, home, dict(env) is not env)
""")

program("file_processing_with_open")("""
    from pathlib import Path

    src = Path("/work/input.txt")
    if not src.exists():
        src.write_text("alpha,1\\nbeta,2\\n\\ngamma,3\\n")
    totals = {}
    with open(src, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            name, _, value = line.partition(",")
            totals[name] = totals.get(name, 0) + int(value)
    with open("/work/totals.txt", "w", encoding="utf-8") as out:
        for name, value in totals.items():
            out.write(f"{name}\\t{value}\\n")
    print(totals)
""")

# --- whole agent tasks ----------------------------------------------------------------------------

program("research_agent_summary")("""
    import asyncio
    from dataclasses import dataclass, field


    @dataclass
    class Source:
        url: str
        title: str
        snippets: list[str] = field(default_factory=list)

        def score(self, terms: set[str]) -> int:
            text = " ".join(self.snippets).lower()
            return sum(text.count(t) for t in terms)


    async def gather_sources(query: str, limit: int = 5) -> list[Source]:
        hits = await call_tool("web_search", query=query, limit=limit)
        pages = await asyncio.gather(*(call_tool("fetch_page", url=h["url"]) for h in hits),
                                     return_exceptions=True)
        sources = []
        for hit, page in zip(hits, pages):
            if isinstance(page, Exception):
                continue
            paragraphs = [p for p in page.split("\\n\\n") if len(p) > 40]
            sources.append(Source(hit["url"], hit.get("title", "?"), paragraphs[:3]))
        return sources


    terms = {"python", "sandbox"}
    ranked = sorted(await gather_sources("python sandbox"), key=lambda s: -s.score(terms))
    for s in ranked[:3]:
        print(f"- {s.title} ({s.url}) score={s.score(terms)}")
""")

program("ticket_triage_agent")("""
    from collections import Counter
    from dataclasses import dataclass
    from enum import Enum


    class Severity(Enum):
        LOW = 1
        MEDIUM = 2
        HIGH = 3


    @dataclass(frozen=True)
    class Ticket:
        id: int
        title: str
        severity: Severity


    def triage(t: Ticket) -> str:
        match t:
            case Ticket(severity=Severity.HIGH):
                return "page on-call"
            case Ticket(_, title, Severity.MEDIUM) if "login" in title.lower():
                return "auth team"
            case Ticket(_, _, Severity.MEDIUM):
                return "next sprint"
            case _:
                return "backlog"


    raw = await call_tool("list_tickets", status="new")
    tickets = [Ticket(r["id"], r["title"], Severity[r["severity"].upper()]) for r in raw]
    routing = {t.id: triage(t) for t in tickets}
    print(Counter(routing.values()))
""")

program("inventory_reconciliation")("""
    import asyncio
    import json
    from decimal import Decimal
    from typing import Optional


    async def stock(sku: str) -> Optional[int]:
        try:
            return (await call_tool("warehouse_stock", sku=sku))["on_hand"]
        except ToolError:
            return None


    ledger = json.loads(await call_tool("ledger_export"))
    skus = sorted({row["sku"] for row in ledger})
    counts = dict(zip(skus, await asyncio.gather(*(stock(s) for s in skus))))
    mismatches = []
    for row in ledger:
        expected, actual = row["qty"], counts.get(row["sku"])
        if actual is not None and actual != expected:
            value = Decimal(str(row["unit_cost"])) * (actual - expected)
            mismatches.append((row["sku"], expected, actual, value))
    for sku, exp, act, value in mismatches:
        print(f"{sku}: ledger {exp} vs warehouse {act} ({value:+.2f})")
    print(f"{len(mismatches)} mismatches across {len(skus)} SKUs")
""")

program("markdown_report_builder")("""
    from datetime import date
    from statistics import mean


    class Report:
        def __init__(self, title: str):
            self.title = title
            self.sections: list[tuple[str, list[str]]] = []

        def section(self, heading: str, lines: list[str]) -> "Report":
            self.sections.append((heading, lines))
            return self

        def render(self) -> str:
            out = [f"# {self.title}", f"_generated {date(2024, 6, 1):%d %b %Y}_", ""]
            for heading, lines in self.sections:
                out.append(f"## {heading}")
                out.extend(f"- {line}" for line in lines)
                out.append("")
            return "\\n".join(out)


    metrics = {"p50": [110, 95, 130], "errors": [0, 2, 1]}
    r = Report("Weekly service report")
    r.section("Latency", [f"{k}: {mean(v):.1f} ms" for k, v in metrics.items() if k == "p50"])
    r.section("Errors", [f"total: {sum(metrics['errors'])}"])
    print(r.render())
""")

program("graph_shortest_path")("""
    import heapq
    from collections import defaultdict

    edges = await call_tool("list_routes")
    graph = defaultdict(list)
    for e in edges:
        graph[e["from"]].append((e["to"], e["cost"]))
        graph[e["to"]].append((e["from"], e["cost"]))


    def dijkstra(start: str, goal: str) -> tuple[float, list[str]]:
        queue = [(0.0, start, [start])]
        seen = set()
        while queue:
            cost, node, path = heapq.heappop(queue)
            if node == goal:
                return cost, path
            if node in seen:
                continue
            seen.add(node)
            for nxt, w in graph[node]:
                if nxt not in seen:
                    heapq.heappush(queue, (cost + w, nxt, path + [nxt]))
        return float("inf"), []


    print(dijkstra("A", "F"))
""")

program("generator_pipeline_with_yield_from")("""
    import itertools
    import json


    def read_records(lines):
        for line in lines:
            line = line.strip()
            if line and not line.startswith("#"):
                yield json.loads(line)


    def flatten(records):
        for rec in records:
            children = rec.pop("children", [])
            yield rec
            yield from flatten(children)


    text = await call_tool("read_file", path="/work/tree.jsonl")
    flat = list(flatten(read_records(text.splitlines())))
    for depth, group in itertools.groupby(sorted(flat, key=lambda r: r.get("depth", 0)),
                                          key=lambda r: r.get("depth", 0)):
        print(depth, [r["name"] for r in group])
""")

program("class_registry_with_decorator")("""
    HANDLERS = {}


    def handles(kind: str):
        def register(cls):
            HANDLERS[kind] = cls
            return cls
        return register


    class Handler:
        def __init__(self, payload: dict):
            self.payload = payload

        def run(self) -> str:
            raise NotImplementedError


    @handles("email")
    class EmailHandler(Handler):
        def run(self) -> str:
            return f"mail to {self.payload['to']}"


    @handles("sms")
    class SmsHandler(Handler):
        def run(self) -> str:
            return f"sms to {self.payload['number']}"


    for job in [{"kind": "email", "to": "a@b.c"}, {"kind": "sms", "number": "555"}]:
        print(HANDLERS[job["kind"]](job).run())
""")

program("walrus_and_nonlocal_counters")("""
    import re


    def make_counter():
        count = 0

        def bump(step=1):
            nonlocal count
            count += step
            return count
        return bump


    counter = make_counter()
    lines = ["id=17 ok", "garbage", "id=23 failed", "id=5 ok"]
    ids = [int(m.group(1)) for line in lines if (m := re.search(r"id=(\\d+)", line))]
    for line in lines:
        if (status := line.rsplit(" ", 1)[-1]) in {"ok", "failed"}:
            counter()
    print(ids, counter(0), status)
""")

program("type_introspection_plain")("""
    from dataclasses import dataclass


    @dataclass
    class Job:
        name: str
        attempts: int = 0


    values = [1, "two", 3.0, Job("x"), None, [1], {"k": 1}]
    kinds = [type(v).__name__ for v in values]
    print(kinds)
    print(isinstance(values[3], Job), type(values[0]) is int, Job.__name__, Job.__doc__ is not None)
    clone = type(values[3])("y", 2)
    print(clone)
""")

program("async_generators_and_iterators")("""
    import asyncio


    async def paginate(tool: str, **params):
        page = 1
        while True:
            batch = await call_tool(tool, page=page, **params)
            if not batch:
                return
            for item in batch:
                yield item
            page += 1


    class Countdown:
        def __init__(self, n):
            self.n = n

        def __aiter__(self):
            return self

        async def __anext__(self):
            if self.n <= 0:
                raise StopAsyncIteration
            self.n -= 1
            await asyncio.sleep(0)
            return self.n


    users = [u async for u in paginate("list_users", active=True)]
    print(len(users), [n async for n in Countdown(3)])
""")


class AcceptAgentTest(unittest.TestCase):
    pass


def _make(code):
    def test(self):
        report = validate(code)
        self.assertEqual(report, {"ok": True, "violations": []})
    return test


for _name, _code in ACCEPT.items():
    _test = _make(_code)
    _test.__name__ = "test_" + _name
    setattr(AcceptAgentTest, _test.__name__, _test)


class AcceptAgentCorpusTest(unittest.TestCase):
    def test_programs_compile(self):
        import ast
        for name, code in ACCEPT.items():
            with self.subTest(name):
                compile(code, name, "exec", ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)

    def test_corpus_size(self):
        self.assertGreaterEqual(len(ACCEPT), 50)


if __name__ == "__main__":
    unittest.main()
