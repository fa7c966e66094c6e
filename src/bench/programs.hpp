// Programs the benchmarks run: realistic agent code, not toy snippets.
#pragma once

namespace codeact::bench {

// 50 lines of ordinary agent code: imports, a dataclass, comprehensions, f-strings, tool calls.
inline constexpr const char* kFiftyLineProgram = R"py(import json
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta


@dataclass
class Order:
    id: int
    customer: str
    amount: float
    placed: datetime
    tags: list = field(default_factory=list)

    def __repr__(self):
        return f"Order({self.id}, {self.customer!r}, {self.amount:.2f})"


def load(rows):
    start = datetime(2026, 1, 1)
    return [Order(i, r["c"], float(r["a"]), start + timedelta(days=i), r.get("t", [])) for i, r in enumerate(rows)]


rows = await call_tool("fetch_orders", limit=100)
orders = load(rows)
by_customer = defaultdict(list)
for order in orders:
    by_customer[order.customer].append(order.amount)

summary = {}
for customer, amounts in sorted(by_customer.items()):
    summary[customer] = {
        "count": len(amounts),
        "total": round(sum(amounts), 2),
        "mean": round(statistics.mean(amounts), 2),
    }

tags = Counter(tag for order in orders for tag in order.tags)
try:
    top = max(summary, key=lambda c: summary[c]["total"])
except ValueError as exc:
    raise RuntimeError("no orders") from exc

late = [o for o in orders if o.placed > datetime(2026, 3, 1)]
print(json.dumps(summary, indent=2))
print(f"top customer: {top}; late orders: {len(late)}")
print("common tags:", ", ".join(t for t, _ in tags.most_common(3)))
await call_tool("save_report", name="orders", body=json.dumps(summary))
{"top": top, "late": len(late)}
)py";

// The fork floor: the child interpreter, loaded as a fork server loads it (the runner and
// everything it preloads, then frozen), forking children that each run print(1) and exit. No
// sandbox, guard, bridge, validation or host: what one run per fork costs on this machine, at
// best. argv: the runner's directory, forkers, forks per forker. Prints forks per second.
inline constexpr const char* kForkFloorProgram = R"py(import gc
import posix
import sys
import time

sys.path.append(sys.argv[1])
import runner

for name in runner._PRELOAD:
    runner._preload(name)
gc.collect()
gc.freeze()
forkers, per_forker = int(sys.argv[2]), int(sys.argv[3])
code = compile("print(1)", "<code>", "exec")
null = posix.open("/dev/null", posix.O_WRONLY)
start = time.perf_counter()
pids = []
for _ in range(forkers):
    pid = posix.fork()
    if pid == 0:
        for _ in range(per_forker):
            child = posix.fork()
            if child == 0:
                posix.dup2(null, 1)
                exec(code, {"__builtins__": __builtins__})
                sys.stdout.flush()
                posix._exit(0)
            if posix.waitpid(child, 0)[1] != 0:
                posix._exit(1)
        posix._exit(0)
    pids.append(pid)
failed = sum(posix.waitpid(pid, 0)[1] != 0 for pid in pids)
print(forkers * per_forker / (time.perf_counter() - start) if not failed else 0)
)py";

}  // namespace codeact::bench
