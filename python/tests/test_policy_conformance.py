# SPDX-FileCopyrightText: 2026 tierpool contributors
# SPDX-License-Identifier: Apache-2.0
"""The eviction policy conformance suite (tierpool.conformance, a port of
tests/conformance/policy_conformance.hpp) over Python policies, through the adapter a Pool
uses and called directly, and over the C++ built-ins through the same harness."""

import pytest

import tierpool
import tierpool.conformance as conf
from tierpool.example_policies import FifoPolicy, LruPolicy, RandomPolicy

PYTHON_POLICIES = [LruPolicy, FifoPolicy, RandomPolicy]
BUILTINS = ["lru", "fifo", "clock", "sieve", "s3fifo", "two_q", "arc", "lirs", "lfu", "gdsf", "random"]
FORECAST_BUILTINS = ["belady", "repeat"]  # need next-use forecasts


def _id(p):
    return p if isinstance(p, str) else p.__name__


@pytest.mark.parametrize("name,check", conf.CHECKS, ids=[n for n, _ in conf.CHECKS])
@pytest.mark.parametrize("policy", PYTHON_POLICIES, ids=_id)
def test_python_policy_through_the_adapter(policy, name, check):
    check(lambda: conf.Driver(policy))


@pytest.mark.parametrize("name,check", conf.CHECKS, ids=[n for n, _ in conf.CHECKS])
@pytest.mark.parametrize("policy", PYTHON_POLICIES, ids=_id)
def test_python_policy_called_directly(policy, name, check):
    check(lambda: conf.Driver(policy, direct=True))


@pytest.mark.parametrize("name,check", conf.CHECKS, ids=[n for n, _ in conf.CHECKS])
@pytest.mark.parametrize("policy", BUILTINS, ids=_id)
def test_builtin_through_the_same_harness(policy, name, check):
    check(lambda: conf.Driver(policy))


@pytest.mark.parametrize("policy", FORECAST_BUILTINS)
def test_forecast_builtins(policy):
    conf.check_policy(policy, forecasts=True)


def test_every_builtin_is_covered():
    names = {p["name"] for p in tierpool.policies()}
    assert set(BUILTINS + FORECAST_BUILTINS) <= names


class ProposesPinned(LruPolicy):
    """A broken policy: forgets pins."""

    def on_pin(self, id):
        pass

    def on_access(self, view):
        LruPolicy.on_access(self, view)
        if view.id in self.pinned:
            self.order[view.id] = self.pinned.pop(view.id)


class ProposesTooLittle(LruPolicy):
    def propose(self, request):
        return LruPolicy.propose(self, request)[:1]


class MutatesOnPropose(LruPolicy):
    def propose(self, request):
        out = LruPolicy.propose(self, request)
        if out:
            self.order.move_to_end(out[0])  # proposing changes state: wrong
        return out


@pytest.mark.parametrize(
    "broken,check",
    [
        (ProposesPinned, "never_proposes_pinned"),
        (ProposesTooLittle, "proposes_enough_bytes"),
        (ProposesTooLittle, "proposes_all_evictable_when_short"),
        (MutatesOnPropose, "propose_changes_no_state"),
    ],
)
@pytest.mark.parametrize("direct", [False, True], ids=["adapter", "direct"])
def test_the_harness_catches_broken_policies(broken, check, direct):
    with pytest.raises(AssertionError, match=check):
        conf.check_policy(broken, direct=direct, checks={check})


def test_check_policy_passes_a_good_policy():
    conf.check_policy(LruPolicy)
    conf.check_policy(LruPolicy, direct=True)
    conf.check_policy("lru")
