"""Base class and registry of the outer methods (ask/tell, DESIGN section 4).

A method subclasses :class:`MethodBase`, stores its hyper-parameters
verbatim in ``__init__`` and implements four hooks on an explicit state
object that :meth:`MethodBase.start` rebuilds:

``_start(oracle) -> state``
    Validate hyper-parameters and build the state (the first query included).
``_ask(state) -> ndarray``
    The next point to evaluate.
``_tell(state, query, answer) -> bool | None``
    Update the model. Return ``False`` while an iteration is still under way
    (a line search); anything else completes one outer iteration.
``_bounds(state) -> (lower, upper)``
    Optional; the default has no lower bound and the best value as upper.

The base class enforces the call order, makes queries read-only, keeps the
best point (``best``, ``best_w``, ``best_gap``) and counts iterations.
"""

from __future__ import annotations

import numpy as np

__all__ = ["MethodBase", "register", "METHODS", "get_method"]

METHODS: dict[str, type] = {}


def register(*names):
    """Class decorator: make a method available under ``names`` (first is canonical)."""

    def deco(cls):
        for name in names:
            if name in METHODS and METHODS[name] is not cls:
                raise ValueError(f"method name {name!r} is already registered")
            METHODS[name] = cls
        cls.name = names[0]
        return cls

    return deco


def get_method(name):
    """The method class registered under ``name``."""
    try:
        return METHODS[name]
    except KeyError:
        known = ", ".join(sorted(METHODS))
        raise ValueError(f"unknown method {name!r}; known methods: {known}") from None


class MethodBase:
    """Shared machinery of the ask/tell outer methods.

    Attributes
    ----------
    best : OracleAnswer or None
        Answer at the best point offered so far (lowest value).
    best_w : ndarray or None
        That point's effective kernel weights.
    best_gap : float
        Its duality gap ``J(w) - D(alpha)`` (``nan`` without a domain).
    domain : Domain or None
        The feasible set, set by ``start``.
    n_iter : int
        Completed outer iterations.
    """

    name = "base"
    #: Which oracle the method talks to: "dual" (an SVM-dual oracle such as
    #: SVMDual, answers with q and alpha) or "weak_learners" (boosting).
    oracle_kind = "dual"
    #: Whether queries are kernel-weight vectors. ``ask`` then copies them into
    #: a read-only float64 array. A method whose queries are other immutable
    #: records (boosting asks for a sample and a kernel subset) sets this to
    #: False, and ``ask`` hands its query over unchanged.
    query_is_array = True

    # ---- public protocol -------------------------------------------------
    def start(self, oracle):
        """(Re)initialise all state for a run against ``oracle``."""
        self._oracle = oracle
        self.domain = None
        self.best = None
        self.best_w = None
        self.best_gap = float("nan")
        self.best_dual = -np.inf
        self.n_iter = 0
        self.stop = None
        self._pending = None
        self._state = self._start(oracle)

    def ask(self):
        """Return the next query (read-only). Repeated calls return the same query."""
        self._require_started()
        if self._pending is None:
            q = self._ask(self._state)
            if self.query_is_array:
                q = np.array(q, dtype=np.float64, copy=True)
                q.flags.writeable = False
            self._pending = q
        return self._pending

    def tell(self, query, answer):
        """Feed the oracle's ``answer`` at ``query`` (the last asked point)."""
        self._require_started()
        if self._pending is None:
            raise RuntimeError(f"{type(self).__name__}.tell called without a pending ask()")
        self._pending = None
        done = self._tell(self._state, query, answer)
        if done is not False:
            self.n_iter += 1

    def bounds(self):
        """``(lower, upper)`` on the optimal value; ``-inf`` when there is no lower bound."""
        self._require_started()
        return self._bounds(self._state)

    def query_needs_q(self):
        """Whether the pending query needs ``q`` (False: the value alone will do).

        The driver passes ``need_q=False`` to oracles that support it
        (``oracle.supports_value_only``), sparing them the quadratic forms;
        other oracles answer in full, which every method must accept.
        """
        return True

    def query_weights(self, query):
        """Effective kernel weights of a query (what a history row records)."""
        return query

    def extra(self):
        """Method-specific variables for ``Result.extra``."""
        return {}

    # ---- helpers for subclasses -------------------------------------------
    def _offer(self, w, answer):
        """Consider ``(w, answer)`` as the best point; keep it if its value is lowest.

        Value-only answers (``q`` is None) carry no gap and are not considered.
        """
        if getattr(answer, "q", True) is None:
            return
        if self.domain is not None:
            dual = self.domain.dual_value(answer)
            if dual > self.best_dual:
                self.best_dual = dual
        if self.best is None or answer.value < self.best.value:
            self.best = answer
            self.best_w = np.array(w, dtype=np.float64)
            self.best_gap = (
                self.domain.gap(self.best_w, answer) if self.domain is not None else float("nan")
            )

    def _finish(self, reason, converged=False):
        """Let the method stop the run itself (the driver reads ``stop``)."""
        from ..stopping import Stop

        self.stop = Stop(reason, converged)

    def _bounds(self, state):
        upper = self.best.value if self.best is not None else np.inf
        return -np.inf, upper

    def _require_started(self):
        if not hasattr(self, "_state"):
            raise RuntimeError(f"call {type(self).__name__}.start(oracle) first")

    # ---- parameters (scikit-learn style, used by the estimators) -----------
    def get_params(self, deep=False):
        import inspect

        sig = inspect.signature(type(self).__init__)
        return {p: getattr(self, p) for p in sig.parameters if p != "self"}

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"
