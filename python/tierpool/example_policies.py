# SPDX-FileCopyrightText: 2026 tierpool contributors
# SPDX-License-Identifier: Apache-2.0
"""Eviction policies written in Python, as examples (docs/chapters/python_policies.md)
and for tests and the speed figures (python/bench/policy_speed.py).

- :class:`LruPolicy`: least recently used first; decides exactly as the built-in
  ``lru`` with its defaults (a replay gives the same figures);
- :class:`FifoPolicy`: oldest insertion first (accesses change nothing);
- :class:`RandomPolicy`: victims in a pseudo-random order drawn from a seed, the request
  and the tier's state, so the same events give the same proposals.

Each keeps pinned tensors out of its eviction order, so ``propose`` walks only
evictable tensors.
"""

from __future__ import annotations

import random
from collections import OrderedDict

from ._policy import EvictionPolicy

__all__ = ["FifoPolicy", "LruPolicy", "RandomPolicy"]


class LruPolicy(EvictionPolicy):
    """Least recently used first (the built-in ``lru`` with refresh_interval=0)."""

    name = "py_lru"

    def __init__(self):
        self.order = OrderedDict()  # evictable: id -> bytes, least recent first
        self.pinned = {}  # id -> bytes

    def on_insert(self, view):
        id = view.id
        self.order.pop(id, None)
        self.pinned.pop(id, None)
        (self.pinned if view.pinned else self.order)[id] = view.bytes

    def on_access(self, view):
        id = view.id
        order = self.order
        if id in order:
            if view.pinned:  # the view's flag wins
                del order[id]
                self.pinned[id] = view.bytes
            else:
                order[id] = view.bytes
                order.move_to_end(id)
        elif id in self.pinned:
            if view.pinned:
                self.pinned[id] = view.bytes
            else:
                del self.pinned[id]
                order[id] = view.bytes
        # an unknown id: a no-op

    def on_erase(self, id):
        if self.order.pop(id, None) is None:
            self.pinned.pop(id, None)

    def on_pin(self, id):
        n = self.order.pop(id, None)
        if n is not None:
            self.pinned[id] = n

    def on_unpin(self, id):
        n = self.pinned.pop(id, None)
        if n is not None:
            self.order[id] = n  # back at the most recently used end

    def propose(self, request):
        need = request.bytes_needed
        out = []
        freed = 0
        for id, n in self.order.items():
            if freed >= need:
                break
            out.append(id)
            freed += n
        return out


class FifoPolicy(LruPolicy):
    """Oldest insertion first: as LruPolicy, but an access does not move a tensor."""

    name = "py_fifo"

    def on_access(self, view):
        id = view.id
        if view.pinned:
            self.on_pin(id)
        elif id in self.pinned:  # unpinned by the view: back in the queue, at its end
            self.order[id] = self.pinned.pop(id)


class RandomPolicy(LruPolicy):
    """Victims in a pseudo-random order drawn from (seed, request, state): deterministic."""

    name = "py_random"

    def __init__(self, seed=1):
        super().__init__()
        self.seed = seed

    def on_access(self, view):
        if view.pinned:
            self.on_pin(view.id)
        else:
            self.on_unpin(view.id)

    def propose(self, request):
        need = request.bytes_needed
        if need == 0 or not self.order:
            return []
        ids = sorted(self.order)
        # Seeded by what the request and the state are, never by the clock: the same
        # state and request give the same victims (propose changes no state).
        random.Random(f"{self.seed}:{need}:{len(ids)}:{ids[0]}:{ids[-1]}").shuffle(ids)
        out = []
        freed = 0
        for id in ids:
            if freed >= need:
                break
            out.append(id)
            freed += self.order[id]
        return out
