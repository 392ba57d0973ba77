# SPDX-FileCopyrightText: 2026 tierpool contributors
# SPDX-License-Identifier: Apache-2.0
"""Eviction policies and prefetch predictors written in Python.

Subclass :class:`EvictionPolicy` (or :class:`Predictor`), then give the class to a pool
or a replay, or register it under a name::

    class Fifo(tierpool.EvictionPolicy):
        name = "pyfifo"
        def __init__(self):
            self.order = {}                       # id -> bytes, insertion order
            self.pinned = set()
        def on_insert(self, view):
            self.order.pop(view.id, None)
            self.order[view.id] = view.bytes
            (self.pinned.add if view.pinned else self.pinned.discard)(view.id)
        def on_erase(self, id):
            self.order.pop(id, None)
            self.pinned.discard(id)
        def on_pin(self, id):
            self.pinned.add(id)
        def on_unpin(self, id):
            self.pinned.discard(id)
        def propose(self, request):
            out, freed = [], 0
            for id, n in self.order.items():
                if freed >= request.bytes_needed:
                    break
                if id not in self.pinned:
                    out.append(id)
                    freed += n
            return out

    pool = tierpool.Pool(policy=Fifo, ...)          # or per tier: {"policy": Fifo}
    tierpool.replay(trace, policies=[Fifo, "lru"])
    tierpool.register_policy("pyfifo", Fifo)        # then the spec "pyfifo" works anywhere

See docs/chapters/python_policies.md for the contract, threading and failure semantics.
"""

from __future__ import annotations

import atexit
import re

__all__ = ["EvictionPolicy", "Predictor", "register_policy", "register_predictor", "unregister_policy"]

# name -> (factory, description, parameters {name: default}, is_predictor); read by the
# extension whenever a Pool or a replay is made (python/src/py_policy.cpp).
_registered: dict = {}

_NAME = re.compile(r"[a-z0-9_]+\Z")


class EvictionPolicy:
    """Base class of an eviction policy written in Python.

    A policy orders the resident tensors of one tier and, when the tier lacks room,
    proposes victims. Override the hooks you need; the others are never called (the
    adapter checks which ones a subclass overrides):

    - ``on_insert(view)``: a tensor became resident (a known id: re-inserted, counts as
      an access). ``view`` is a :class:`TensorView`.
    - ``on_access(view)``: a resident tensor was used.
    - ``on_erase(id)``: a resident tensor left the tier.
    - ``on_pin(id)`` / ``on_unpin(id)``: its pin count went 0 -> 1 / 1 -> 0.
    - ``propose(request) -> list[int]`` (**required**): tensor ids, most preferred victim
      first, each at most once, never a pinned one, covering ``request.bytes_needed``
      (or every evictable tensor when they cannot); ``[]`` for 0 bytes. Must not change
      the policy's state.

    The adapter only reports what changes something: hooks about ids the tier does not
    hold and repeated pins or unpins are filtered out. A view or request object is reused
    for every call: read it during the call, never keep it. The same events must give the
    same proposals (seed any randomness). A hook that raises, or a proposal that breaks
    the rules, disables the policy for its tier: the tier falls back to ``lru`` and the
    pool's next call raises :class:`tierpool.PolicyError`.

    The class (or any callable returning such an object) is the factory: the pool makes
    one instance per tier, a replay one per run. A copy the C++ side needs is a
    ``copy.deepcopy`` of the instance.
    """

    #: The registry name used when the class is given directly (default: the class name,
    #: lower-cased). [a-z0-9_]+.
    name: str = ""

    def on_insert(self, view) -> None:
        """A tensor became resident in the tier."""

    def on_access(self, view) -> None:
        """A resident tensor was used."""

    def on_erase(self, id: int) -> None:
        """A resident tensor left the tier (evicted, freed, moved)."""

    def on_pin(self, id: int) -> None:
        """A tensor's pin count went from 0 to 1: never propose it."""

    def on_unpin(self, id: int) -> None:
        """A tensor's pin count went back to 0."""

    def propose(self, request) -> list:
        """Victims for ``request`` (an :class:`EvictionRequest`): a list of tensor ids."""
        raise NotImplementedError(f"{type(self).__name__}.propose(request) is not implemented")


class Predictor:
    """Base class of a prefetch predictor written in Python.

    - ``on_access(access) -> list[int]``: a device acquire happened (``access`` is an
      :class:`AccessView`); return the tensor ids to prefetch now, nearest use first
      (``[]`` or ``None``: nothing).
    - ``on_free(id)``: a tensor was freed: forget it.

    Give the class as ``Pool(prefetch=MyPredictor)`` or ``replay(..., prefetch=MyPredictor)``,
    or register it with :func:`register_predictor`. A predictor that raises is disabled
    (predicts nothing) and the pool's next call raises :class:`tierpool.PolicyError`.
    """

    name: str = ""

    def on_access(self, access) -> list:
        """The ids to prefetch after ``access``."""
        return []

    def on_free(self, id: int) -> None:
        """A tensor was freed."""


def _check_registration(name, factory, parameters):
    if not isinstance(name, str) or not _NAME.match(name):
        from ._errors import LogicError

        raise LogicError(f"a policy name is [a-z0-9_]+ (got {name!r})")
    if not callable(factory):
        from ._errors import LogicError

        raise LogicError(f"register a class or a factory (a callable), not {factory!r}")
    params = dict(parameters or {})
    for k, v in params.items():
        if not isinstance(k, str) or not _NAME.match(k) or not isinstance(v, (bool, int, float, str)):
            from ._errors import LogicError

            raise LogicError(f"policy parameter {k!r}={v!r}: a [a-z0-9_]+ name and a bool, int, float or str default")
    return params


def _builtin_names(predictor):
    from ._tierpool import _builtin_policy_names

    return _builtin_policy_names(predictor)


def register_policy(name: str, factory, description: str = "", parameters: dict | None = None) -> None:
    """Register a Python eviction policy under ``name``: the spec ``name`` (and
    ``name:key=value,...`` for ``parameters``) then works wherever a spec does (Pool,
    TierOptions, replay, TIERPOOL_POLICY). ``factory`` is the class (or a callable
    returning a policy), called with the parameters as keyword arguments.
    ``parameters``: ``{name: default}`` with bool, int, float or str defaults (the type of
    the default is the parameter's type). Raises LogicError for a malformed or taken name.
    """
    params = _check_registration(name, factory, parameters)
    if name in _builtin_names(False) or (name in _registered and _registered[name][3] is False):
        from ._errors import LogicError

        raise LogicError(f"a policy named {name!r} is already registered (unregister_policy() first)")
    _registered[name] = (factory, description, params, False)


def register_predictor(name: str, factory, description: str = "", parameters: dict | None = None) -> None:
    """Register a Python prefetch predictor under ``name`` (as register_policy; the
    predictor names are their own)."""
    params = _check_registration(name, factory, parameters)
    key = "predictor:" + name
    if name in _builtin_names(True) or key in _registered:
        from ._errors import LogicError

        raise LogicError(f"a predictor named {name!r} is already registered")
    _registered[key] = (factory, description, params, True)


def unregister_policy(name: str) -> bool:
    """Forget a registered Python policy (or, as ``"predictor:NAME"``, predictor); True if
    it was registered. Pools already made keep theirs."""
    return _registered.pop(name, None) is not None


def _detach_at_exit():
    # Break the cycles through C++ (module dict -> Pool -> policy object -> class -> module
    # dict) while the interpreter still runs (Note [Python objects at exit], py_policy.hpp).
    from ._tierpool import _detach_python_objects

    _detach_python_objects()


atexit.register(_detach_at_exit)
