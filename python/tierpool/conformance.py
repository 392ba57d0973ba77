# SPDX-FileCopyrightText: 2026 tierpool contributors
# SPDX-License-Identifier: Apache-2.0
"""The eviction policy conformance suite, in Python: the properties the C++ suite
(tests/conformance/policy_conformance.hpp) checks, for any policy a Pool can use.

    import tierpool.conformance as conf
    conf.check_policy(MyPolicy)            # raises AssertionError naming each failed check
    conf.check_policy("lru")               # a built-in, through the same harness

A :class:`Driver` keeps a model of the tier (id -> bytes, pinned) and checks every
proposal against the contract: no pinned or unknown victim, no duplicate, the proposal's
bytes are the sum of its victims', a coverable request is covered, every evictable
tensor is proposed when the request cannot be covered, nothing is proposed for 0 bytes.
Requests carry the tick of the last event, so the same state and request must give the
same answer. Nothing here depends on a particular order of victims.

Two ways to drive a Python policy:

- through the adapter (default): a :class:`tierpool.PolicyDriver`, the same C++ adapter
  a Pool uses. The adapter refuses a bad answer and falls back to lru, so the driver also
  checks after every event that the policy did not fail (and re-raises its error);
- ``direct=True``: the policy's methods are called from Python with plain view objects,
  without the adapter's filtering, so the policy itself must ignore unknown ids and
  repeated pins (the C++ contract).
"""

from __future__ import annotations

import random
from types import SimpleNamespace

from ._tierpool import NO_NEXT_USE, PolicyDriver

__all__ = ["CHECKS", "Driver", "check_policy"]

SIZE_MAX = (1 << 64) - 1


def _add_sat(a, b):
    return min(SIZE_MAX, a + b)


class Driver:
    """Drives one policy with events and checks each proposal against a model of the tier.

    ``policy``: a spec ("lru") or a Python policy class (a factory). ``forecasts``: every
    view carries a next-use forecast (for policies that need one, such as "belady").
    """

    def __init__(self, policy, *, direct=False, forecasts=False):
        self.direct = direct
        self.forecasts = forecasts
        self.model = {}  # id -> [bytes, pinned, accesses]
        self.now = 0
        self.last_bytes = 0
        if direct:
            if isinstance(policy, str):
                raise TypeError("direct=True drives a Python policy (a class), not a spec")
            self.policy = policy()
            self.driver = None
        else:
            self.driver = PolicyDriver(policy)
            self.policy = self.driver.python_object

    # ---- events ----

    @staticmethod
    def forecast(id, accesses, now):
        """A deterministic tick after `now`, or NO_NEXT_USE for every seventh (id, accesses)."""
        h = ((id * 0x9E3779B97F4A7C15) ^ (accesses * 0xC2B2AE3D27D4EB4F)) & SIZE_MAX
        if h % 7 == 0:
            return NO_NEXT_USE
        return now + 1 + (h >> 32) % 1000

    def _fields(self, id, write=False):
        s = self.model.get(id)
        if s is None:
            return dict(id=id, bytes=0, tier=0, last_access=self.now, access_count=1, pinned=False,
                        write_access=write, next_use=self.forecast(id, 1, self.now) if self.forecasts else None)
        return dict(id=id, bytes=s[0], tier=0, last_access=self.now, access_count=s[2], pinned=s[1],
                    write_access=write, next_use=self.forecast(id, s[2], self.now) if self.forecasts else None)

    def _view(self, fields):
        return SimpleNamespace(transfer_cost=0, recompute_cost=None, **fields)

    def _after(self):
        if self.driver is not None:
            assert self.driver.validate(), "validate() failed after an event"
            if self.driver.failed:
                try:
                    self.driver.check()  # raises the policy's error (PolicyError)
                except Exception as e:
                    raise AssertionError(f"the Python policy failed: {e}") from e
                raise AssertionError("the Python policy failed (its tier would fall back to lru)")

    def insert(self, id, bytes, pinned=False):
        self.now += 1
        self.model[id] = [bytes, pinned, 1]
        f = self._fields(id)
        if self.direct:
            self.policy.on_insert(self._view(f))
        else:
            self.driver.on_insert(**f)
        self._after()

    def access(self, id, write=False):
        self.now += 1
        if id in self.model:
            self.model[id][2] += 1
        f = self._fields(id, write)
        if self.direct:
            self.policy.on_access(self._view(f))
        else:
            self.driver.on_access(**f)
        self._after()

    def erase(self, id):
        self.model.pop(id, None)
        (self.policy.on_erase if self.direct else self.driver.on_erase)(id)
        self._after()

    def pin(self, id):
        if id in self.model:
            self.model[id][1] = True
        (self.policy.on_pin if self.direct else self.driver.on_pin)(id)
        self._after()

    def unpin(self, id):
        if id in self.model:
            self.model[id][1] = False
        (self.policy.on_unpin if self.direct else self.driver.on_unpin)(id)
        self._after()

    def evictable_bytes(self):
        total = 0
        for b, pinned, _ in self.model.values():
            if not pinned:
                total = _add_sat(total, b)
        return total

    def propose(self, need):
        """Ask for `need` bytes; check the answer; return the victims."""
        if self.direct:
            req = SimpleNamespace(tier=0, from_=0, bytes_needed=need, contiguous_bytes=0, now=self.now, incoming=0)
            victims = self.policy.propose(req)
            assert isinstance(victims, (list, tuple)), f"propose returned {victims!r}, not a list"
            victims = list(victims)
            reported = None
        else:
            victims, reported = self.driver.propose(need, now=self.now)
        self._after()
        seen = set()
        total = 0
        for v in victims:
            assert isinstance(v, int) and not isinstance(v, bool), f"victim {v!r} is not an int"
            assert v in self.model, f"proposed tensor {v}, which is not resident"
            assert not self.model[v][1], f"proposed pinned tensor {v}"
            assert v not in seen, f"proposed tensor {v} twice"
            seen.add(v)
            total = _add_sat(total, self.model[v][0])
        if reported is not None:
            assert reported == total, f"the proposal's bytes ({reported}) are not the sum of its victims' ({total})"
        self.last_bytes = total
        if need == 0:
            assert not victims, "proposed victims for a request of 0 bytes"
            return victims
        evictable = self.evictable_bytes()
        if evictable >= need:
            assert total >= need, f"the proposal ({total} bytes) does not cover a coverable request of {need}"
        else:
            unpinned = {i for i, s in self.model.items() if not s[1]}
            missing = sorted(unpinned - seen)
            assert not missing, f"the request of {need} cannot be covered, yet evictable tensors {missing} were not proposed"
        return victims


# ---- the checks (one function per C++ TYPED_TEST_P) ----


def has_a_name(make):
    d = make()
    if d.driver is not None:
        assert d.driver.name, "the policy has no name"


def empty_tier_proposes_nothing(make):
    d = make()
    assert d.propose(1) == []
    assert d.propose(SIZE_MAX) == []
    assert d.propose(0) == []


def zero_bytes_needed_proposes_nothing(make):
    d = make()
    for i in range(1, 5):
        d.insert(i, 100)
    assert d.propose(0) == []


def never_proposes_pinned(make):
    d = make()
    for i in range(1, 11):
        d.insert(i, 64)
    d.pin(1)  # the coldest
    d.pin(2)
    d.pin(7)
    d.access(7)
    d.insert(11, 64, pinned=True)  # inserted pinned
    for need in (1, 64, 300, 10_000):
        v = d.propose(need)
        for i in (1, 2, 7, 11):
            assert i not in v, f"pinned {i} proposed"
    d.unpin(1)
    assert d.propose(10_000).count(1) == 1, "an unpinned tensor is evictable again"


def all_pinned_proposes_nothing(make):
    d = make()
    for i in range(1, 6):
        d.insert(i, 10, i % 2 == 0)
    for i in (1, 3, 5):
        d.pin(i)
    assert d.propose(1) == []
    assert d.propose(1000) == []


def pin_and_unpin_are_idempotent(make):
    d = make()
    d.insert(1, 10)
    d.insert(2, 10)
    d.pin(1)
    d.pin(1)
    assert d.propose(100) == [2]
    d.unpin(1)
    d.unpin(1)
    d.unpin(2)  # not pinned: no-op
    assert len(d.propose(100)) == 2


def proposes_enough_bytes(make):
    d = make()
    for i, s in enumerate((1, 4096, 100, 1 << 20, 7, 64, 3 << 10, 512), start=1):
        d.insert(i, s)
    d.access(3)
    d.access(5, write=True)
    total = d.evictable_bytes()
    for need in (1, 8, 4096, 5000, total - 1, total):
        d.propose(need)
        assert d.last_bytes >= need


def proposes_all_evictable_when_short(make):
    d = make()
    for i in range(1, 7):
        d.insert(i, 100)
    d.pin(4)
    v = d.propose(10_000)  # more than the tier holds
    assert len(v) == 5
    assert d.last_bytes == 500


def tensor_larger_than_tier(make):
    d = make()
    huge = SIZE_MAX - 10
    d.insert(1, 100)
    d.insert(2, huge)  # larger than any tier
    d.insert(3, 100)
    d.insert(4, huge)  # the sum overflows size_t
    d.propose(SIZE_MAX)
    assert d.last_bytes == SIZE_MAX, "bytes saturate"
    some = d.propose(1000)
    assert d.last_bytes >= 1000 and some
    d.erase(2)
    d.erase(4)
    assert len(d.propose(SIZE_MAX)) == 2
    assert d.last_bytes == 200


def erase_unknown_is_noop(make):
    a, b = make(), make()
    for d in (a, b):
        for i in range(1, 6):
            d.insert(i, 10 * i)
        d.access(2)
    a.erase(99)  # never inserted
    a.erase(3)
    b.erase(3)
    a.erase(3)  # erased twice
    a.pin(98)  # the other hooks ignore unknown ids too
    a.unpin(98)
    a.access(97)
    assert a.propose(25) == b.propose(25)
    assert a.propose(1000) == b.propose(1000)


def erase_removes_from_proposals(make):
    d = make()
    for i in range(1, 5):
        d.insert(i, 10)
    d.erase(1)
    d.erase(3)
    v = d.propose(1000)
    assert len(v) == 2 and 1 not in v and 3 not in v
    d.erase(2)
    d.erase(4)
    assert d.propose(1) == []


def reinsert_after_erase(make):
    d = make()
    d.insert(1, 10)
    d.insert(2, 10)
    d.pin(1)
    d.erase(1)
    d.insert(1, 30)  # same id, new size, not pinned any more
    v = d.propose(1000)
    assert len(v) == 2 and v.count(1) == 1
    assert d.last_bytes == 40


def propose_changes_no_state(make):
    d = make()
    for i in range(1, 9):
        d.insert(i, 16 * i)
    d.access(1)
    first = d.propose(100)
    assert d.propose(100) == first
    assert d.propose(100) == first


def deterministic_under_replay(make):
    def run(d):
        rng = random.Random(20260101)
        live = []
        log = []
        next_id = 1
        for _ in range(1500):
            r = rng.getrandbits(64)
            pick = live[(r >> 8) % len(live)] if live else 0
            k = r % 8
            if k in (0, 1):
                live.append(next_id)
                d.insert(next_id, 1 + (r >> 20) % 4096, (r >> 40) % 16 == 0)
                next_id += 1
            elif k in (2, 3):
                if pick:
                    d.access(pick, (r >> 50) % 2 == 0)
            elif k == 4:
                if pick:
                    d.erase(pick)
                    live.remove(pick)
            elif k == 5:
                if pick:
                    d.pin(pick)
            elif k == 6:
                if pick:
                    d.unpin(pick)
            else:
                log.append(d.propose((r >> 16) % 20_000))
        return log

    la, lb = run(make()), run(make())
    assert la and la == lb


#: Every check, in the C++ suite's order: (name, function taking a driver factory).
CHECKS = [
    (f.__name__, f)
    for f in (
        has_a_name,
        empty_tier_proposes_nothing,
        zero_bytes_needed_proposes_nothing,
        never_proposes_pinned,
        all_pinned_proposes_nothing,
        pin_and_unpin_are_idempotent,
        proposes_enough_bytes,
        proposes_all_evictable_when_short,
        tensor_larger_than_tier,
        erase_unknown_is_noop,
        erase_removes_from_proposals,
        reinsert_after_erase,
        propose_changes_no_state,
        deterministic_under_replay,
    )
]


def check_policy(policy, *, direct=False, forecasts=False, checks=None):
    """Run every check (or those named in `checks`) on `policy` (a spec or a Python policy
    class); raise AssertionError listing the failed ones."""
    failures = []
    for name, check in CHECKS:
        if checks is not None and name not in checks:
            continue
        try:
            check(lambda: Driver(policy, direct=direct, forecasts=forecasts))
        except AssertionError as e:
            failures.append(f"{name}: {e}")
        except Exception as e:  # noqa: BLE001 - a policy that raises fails the check
            failures.append(f"{name}: {type(e).__name__}: {e}")
    if failures:
        raise AssertionError(f"{policy!r} fails {len(failures)} conformance check(s):\n  " + "\n  ".join(failures))
