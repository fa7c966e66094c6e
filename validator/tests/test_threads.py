"""The same reports from 8 threads validating concurrently (shared policy cache)."""

import random
import threading
import unittest

from validator import validate
from validator.tests.test_accept import ACCEPT
from validator.tests.test_reject import REJECT

POLICIES = [None, {"allowed_imports": ["math", "json"]}, {"allow_dynamic_format": True},
            {"blocked_builtins": ["print"], "extra_blocked_imports": ["re"]}]


class ThreadSafetyTest(unittest.TestCase):
    def test_eight_threads_agree_with_a_single_thread(self):
        codes = [code for _, code, _, _ in REJECT] + list(ACCEPT.values())
        codes = [c for c in codes if len(c) < 20000]  # keep the run short
        jobs = [(i, code, policy) for i, code in enumerate(codes) for policy in POLICIES]
        expected = {(i, repr(p)): validate(code, p) for i, code, p in jobs}
        results = [None] * 8
        errors = []
        start = threading.Barrier(8)

        def worker(slot):
            try:
                start.wait()
                mine = {}
                order = list(jobs)
                random.Random(slot).shuffle(order)  # each thread its own order
                for _ in range(2):
                    for i, code, p in order:
                        mine[(i, repr(p))] = validate(code, p)
                results[slot] = mine
            except BaseException as e:  # surfaced below, with the thread's slot
                errors.append((slot, e))

        threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
            self.assertFalse(t.is_alive(), "a validating thread hung")
        self.assertEqual(errors, [])
        for slot, mine in enumerate(results):
            self.assertEqual(mine, expected, "thread %d disagrees" % slot)


if __name__ == "__main__":
    unittest.main()
