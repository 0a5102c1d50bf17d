"""Records exchanged between oracles, outer methods and the driver.

All records are frozen dataclasses with a fixed set of fields: no field
depends on which method produced it, so code that reads a ``Result`` never
has to ask which solver ran.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from ._policy import relative_gap

__all__ = ["OracleAnswer", "Progress", "Result", "MethodReport", "OracleRequest", "Handover",
           "Oracle", "OuterMethod"]


@dataclass(frozen=True, slots=True, eq=False)
class OracleAnswer:
    """What an inner oracle returns for one kernel-weight vector.

    Attributes
    ----------
    w : ndarray of shape (n_kernels,)
        The weights the oracle was called with.
    value : float
        ``J(w) = f(w, alpha)``, the SVM dual objective at the returned
        ``alpha`` (see the formulations of docs/formulations.md).
    grad : ndarray of shape (n_kernels,) or None
        ``-q / 2``, a subgradient of ``J`` at ``w``.
    q : ndarray of shape (n_kernels,) or None
        ``q_k = v' K_k v`` with ``v = alpha * y``. None (with ``grad``) in a
        value-only answer, which a method asks for when it needs ``J(w)``
        alone (a line search); such answers carry no duality gap.
    alpha : ndarray of shape (n_samples,)
        Dual variables, feasible: ``0 <= alpha <= C`` and ``y' alpha = 0``.
    bias : float
        Offset of the decision function ``sum_i alpha_i y_i K(x_i, x) + bias``.
    support : ndarray of int64
        Indices with ``alpha_i > 0``.
    n_solver_iter : int
        Iterations of the inner solver.
    linear_term : float
        The linear term ``l(alpha)`` of the oracle's dual (docs/new_oracle.md):
        ``1' alpha`` for the SVM, ``y' beta - epsilon |beta|_1`` for
        epsilon-SVR, 0 for one-class. Every formulation's dual value ``D``
        reads it, so dual values never touch ``alpha``.
    converged : bool
        Whether the inner solver met its tolerance. When False (it ran out
        of iterations, e.g. on the ill-conditioned dual of very large
        weights) ``alpha`` is feasible, so dual values read from it stay
        valid lower bounds, but ``value`` is only a lower bound of ``J(w)``:
        methods never let such an answer certify a gap.
    """

    w: NDArray[np.float64]
    value: float
    grad: NDArray[np.float64]
    q: NDArray[np.float64]
    alpha: NDArray[np.float64]
    bias: float
    support: NDArray[np.int64]
    n_solver_iter: int = 0
    linear_term: float = float("nan")
    converged: bool = True


@dataclass(frozen=True, slots=True, eq=False)
class Progress:
    """One row of a run's history, recorded after every oracle call.

    Attributes
    ----------
    iteration : int
        Outer iterations completed, as the method counts them.
    elapsed : float
        Wall-clock seconds since the run started.
    n_oracle_calls : int
        Oracle calls so far (this one included).
    value : float
        ``J(w)`` at the point just evaluated.
    lower, upper : float
        The method's bounds on the optimum (``-inf`` when it has none; the
        upper bound is the best value found).
    gap : float
        Certified duality gap of the best point: ``upper - lower``, the
        best value against the best dual value ``D`` known, and never more
        than ``J(w) - D(alpha)`` of the best point's own answer (``nan``
        where the formulation has no dual value).
    rel_gap : float
        ``gap / |upper|``.
    weights : ndarray of shape (n_kernels,)
        The point just evaluated.
    """

    iteration: int
    elapsed: float
    n_oracle_calls: int
    value: float
    lower: float
    upper: float
    gap: float
    rel_gap: float
    weights: NDArray[np.float64]


@dataclass(frozen=True, slots=True, eq=False)
class Result:
    """Outcome of :func:`mklopt.solve`: the best point found and how the run went.

    Attributes
    ----------
    weights : ndarray of shape (n_kernels,)
        Effective kernel weights of the best point (what the oracle saw).
    alpha : ndarray of shape (n_samples,)
        Dual variables at the best point.
    bias : float
        Bias of the decision function at the best point.
    value : float
        ``J(weights)``.
    gap, rel_gap : float
        Certified duality gap of the best point, absolute and relative.
    lower : float
        Best lower bound on the optimum known at the end (``-inf`` if none).
    n_iter : int
        Outer iterations.
    n_oracle_calls : int
        Oracle calls.
    converged : bool
        True when a convergence criterion (a gap or weight change) fired.
    reason : str
        What stopped the run.
    history : tuple of Progress
        One row per oracle call.
    elapsed : float
        Wall-clock seconds of the run.
    extra : dict
        Method-specific variables (for example ``lam`` and ``gamma`` of the
        grouped formulation, or the boosting ensemble).
    q : ndarray of shape (n_kernels,) or None, default=None
        ``q_k = v' K_k v`` of the best point's answer (``None`` when the
        best point carries none, as in boosting). With ``weights``,
        ``alpha`` and ``value`` it rebuilds the best point's answer, so
        ``solve(oracle, method, initial=result)`` resumes a run without
        calling the oracle again.
    """

    weights: NDArray[np.float64]
    alpha: NDArray[np.float64] | None
    bias: float
    value: float
    gap: float
    rel_gap: float
    lower: float
    n_iter: int
    n_oracle_calls: int
    converged: bool
    reason: str
    history: tuple[Progress, ...]
    elapsed: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)
    q: NDArray[np.float64] | None = None


@dataclass(frozen=True, slots=True, eq=False)
class OracleRequest:
    """What an outer method asks of the next oracle call, besides the query.

    A method's :class:`MethodReport` carries one; the driver turns it into
    the call's arguments, and a :class:`~mklopt.methods.Chain` passes its
    running stage's request on as it is. A request that grows a field is
    therefore honoured inside every chain without a line of forwarding.

    Attributes
    ----------
    need : {"full", "value", "exact"}, default="full"
        What the call must return: ``"value"`` only ``J(w)`` (a line search;
        the driver passes ``need_q=False`` to oracles that support it),
        ``"full"`` the value and ``q``, ``"exact"`` the value and ``q`` at
        the precision of the run's target gap (a certificate; see
        :func:`mklopt.solve`).
    warm_start : ndarray or None, default=None
        Dual variables to warm-start the call with; ``None`` lets the driver
        use the previous answer's ``alpha``.
    kernels : ndarray of int or None, default=None
        The kernels whose ``q_k`` the call needs (a kernel working set,
        :class:`~mklopt.methods.KernelWorkingSet`); ``None`` asks for all.
        The driver passes it as ``kernels=`` to oracles that support kernel
        subsets; others answer for all kernels.

    Examples
    --------
    >>> from mklopt import OracleRequest
    >>> OracleRequest().need, OracleRequest(need="value").kernels is None
    ('full', True)
    """

    need: str = "full"
    warm_start: NDArray[np.float64] | None = None
    kernels: NDArray[np.int64] | None = None

    def __post_init__(self):
        if self.need not in ("full", "value", "exact"):
            raise ValueError(
                f"need must be 'full', 'value' or 'exact', got {self.need!r}"
            )


def _same(a, b):
    """Whether two request fields agree (arrays by value)."""
    if a is b:
        return True
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return b is not None and a is not None and np.array_equal(a, b)
    return a == b


@dataclass(frozen=True, slots=True, eq=False)
class MethodReport:
    """What an outer method says about its run after ``start`` and every ``tell``.

    The driver reads nothing else from a method: this record gives the
    history row, the result and the method's own requests for the next
    oracle call.

    Attributes
    ----------
    best : OracleAnswer or None
        The answer at the best point so far (``None`` before any). The
        driver reads its ``value``, ``alpha`` and ``bias``.
    weights : ndarray of shape (n_kernels,) or None
        Effective kernel weights of the best point.
    gap : float
        Certified duality gap of the best point: ``min(J(w) - D(alpha),
        upper - lower)`` for its own answer's ``alpha`` and the best dual
        value known, not below 0 (``nan`` when the formulation has no dual
        value).
    lower : float
        Best lower bound on the optimum known, a dual value: the larger of
        the method's own certificate (a cutting-plane model's minimum, which
        is ``D`` of an aggregate of the answers' ``alpha``) and the best
        ``D(alpha_j)`` seen. ``-inf`` when there is none. Progress rows and
        the result both read this one number.
    n_iter : int
        Outer iterations completed, as the method counts them.
    stop : Stop or None
        Set when the method ends the run itself (``reason``, ``converged``).
    evaluated : ndarray of shape (n_kernels,) or None
        Effective kernel weights of the point just evaluated (what a
        history row records).
    need, warm_start, kernels : optional
        Shorthands for the fields of ``request`` (see
        :class:`OracleRequest`): given instead of ``request``, they build
        it; afterwards they read its fields. Given with ``request``, they
        must agree with it (a ``TypeError`` otherwise).
    request : OracleRequest, optional
        What the next oracle call should compute (default: everything, for
        all kernels, warm-started from the previous answer). The driver
        reads the request alone, and a :class:`~mklopt.methods.Chain`
        forwards its running stage's request whole.
    """

    best: Any
    weights: NDArray[np.float64] | None
    gap: float
    lower: float
    n_iter: int
    stop: Any = None
    evaluated: NDArray[np.float64] | None = None
    need: str | None = None
    warm_start: NDArray[np.float64] | None = None
    kernels: NDArray[np.int64] | None = None
    request: OracleRequest | None = None

    def __post_init__(self):
        # One source of truth: the request. The three keywords it replaces
        # still build one (methods written from the protocol pass them), and
        # mirror it afterwards, so ``report.need`` reads as it always has.
        legacy = (self.need, self.warm_start, self.kernels)
        if self.request is None:
            req = OracleRequest(
                need="full" if self.need is None else self.need,
                warm_start=self.warm_start,
                kernels=self.kernels,
            )
            object.__setattr__(self, "request", req)
        else:
            # Both given (``dataclasses.replace`` passes every field): they
            # must say the same thing.
            mine = (self.request.need, self.request.warm_start, self.request.kernels)
            for name, given, held in zip(("need", "warm_start", "kernels"), legacy, mine,
                                         strict=True):
                if given is not None and not _same(given, held):
                    raise TypeError(
                        f"MethodReport got {name}={given!r} and a request with {name}="
                        f"{held!r}; give either request= or need=/warm_start=/kernels= "
                        "(to change one field: request=dataclasses.replace(report.request, "
                        f"{name}=...))"
                    )
        if not isinstance(self.request, OracleRequest):
            raise TypeError(
                f"request must be an OracleRequest, got {type(self.request).__name__}"
            )
        object.__setattr__(self, "need", self.request.need)
        object.__setattr__(self, "warm_start", self.request.warm_start)
        object.__setattr__(self, "kernels", self.request.kernels)

    @property
    def upper(self):
        """The best value ``J(w)`` found (``inf`` before any): an upper bound on the optimum."""
        return float(self.best.value) if self.best is not None else float("inf")

    @property
    def rel_gap(self):
        """``gap / |upper|`` (:func:`mklopt._policy.relative_gap`).

        A zero gap at ``upper = 0`` (a squared loss with constant targets, say)
        pins the optimum at 0 exactly, which meets every relative target;
        any other gap there is infinite relative to it.
        """
        if self.best is None:
            return float("nan")
        return relative_gap(self.gap, self.upper)


@dataclass(frozen=True, slots=True, eq=False)
class Handover:
    """What one method hands to the next in a chain (see docs/composing.md).

    Attributes
    ----------
    weights : ndarray of shape (n_kernels,)
        Effective kernel weights of the best point.
    answer : OracleAnswer
        The oracle's answer there (``alpha``, ``q``, ``value``).
    lower : float
        Best lower bound on the optimum known so far.
    cuts : tuple of (float, ndarray), default=()
        ``(l(alpha_j), q_j)`` of the full answers seen so far: each is the
        cut ``f(w, alpha_j) = l(alpha_j) - w'q_j / 2``, a valid minorant of
        ``J`` whatever the accuracy it was computed to. Empty unless the
        receiving method uses cuts.
    domain : Domain, optional
        The feasible set ``weights`` lie in, when the giver knows it. Given
        to :func:`mklopt.solve` as ``initial``, a hand-over whose answer
        already meets the stopping rule on that set (its own duality gap,
        ``domain.gap(weights, answer)``) ends the run at once, before the
        method builds any state (a master problem).
    """

    weights: NDArray[np.float64]
    answer: Any
    lower: float = -float("inf")
    cuts: tuple = ()
    domain: Any = None


@runtime_checkable
class Oracle(Protocol):
    """An inner oracle: maps kernel weights to an :class:`OracleAnswer`.

    This is all the driver and the outer methods use (docs/new_oracle.md):

    ``n_kernels``
        The number of kernel weights it takes.
    ``n_calls``
        Calls answered so far (the driver counts a run's calls with it).
    ``__call__(w, warm_start=None) -> OracleAnswer``
        Solve the dual at weights ``w`` (shape ``(n_kernels,)``, on the
        simplex or the method's feasible set), optionally warm-started with
        an earlier answer's ``alpha``; the answer has ``value = J(w) =
        linear_term - w'q / 2``, ``q >= 0``, ``grad = -q / 2`` and ``alpha``.
        A ``w`` of the wrong length raises ``ValueError``.

    Optional members the driver uses when present: ``tol`` (adapted to
    the gap, see :func:`mklopt.solve`), ``supports_value_only`` (then
    ``need_q=False`` is passed for line searches) and
    ``supports_kernel_subsets`` (then ``kernels=`` is passed).
    :class:`mklopt.oracles.OracleBase` implements all of it for a dual
    solved on the combined kernel; :func:`mklopt.testing.check_oracle`
    checks the contract.
    """

    n_kernels: int
    n_calls: int

    def __call__(self, w: NDArray, warm_start: NDArray | None = None) -> Any: ...


@runtime_checkable
class OuterMethod(Protocol):
    """The ask/tell protocol every outer method follows (see docs/new_method.md).

    This is all :func:`mklopt.solve` uses; a class with these five members
    runs under the driver without subclassing anything
    (:class:`mklopt.methods.MethodBase` adds call-order checks, best-point
    bookkeeping and a registry name on top).

    ``start(oracle)``
        (Re)initialise every piece of run state for a run against ``oracle``.
    ``ask() -> query``
        The next point, an array of kernel weights (or, for methods whose
        oracle takes other queries, that query).
    ``tell(query, answer)``
        The oracle's answer at the last asked query.
    ``report() -> MethodReport``
        The best point, its gap, the lower bound, the iteration count,
        whether the method has finished, and what the next call needs.
        Read after ``start`` and after every ``tell``.
    ``extra() -> dict``
        Method-specific variables for ``Result.extra``, read once at the
        end of a run (so they may be costly to assemble).
    """

    def start(self, oracle: Oracle) -> None: ...

    def ask(self) -> Any: ...

    def tell(self, query: Any, answer: Any) -> None: ...

    def report(self) -> MethodReport: ...

    def extra(self) -> dict: ...
