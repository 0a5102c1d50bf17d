"""Base class and registry of the outer methods (the ask/tell protocol of docs/new_method.md).

The driver needs only the :class:`~mklopt._types.OuterMethod` protocol
(``start``, ``ask``, ``tell``, ``report``, ``extra``). :class:`MethodBase`
implements it once, so that a method is its mathematics and nothing else:
it stores its hyper-parameters verbatim in ``__init__``, validates them in
:meth:`~MethodBase.check_params`, and writes hooks on an explicit state
object that ``start`` rebuilds:

``_start(oracle) -> (domain, state)``
    The feasible set (a :class:`~mklopt.domains.Domain`, or ``None``) and
    the run's state, first query included.
``_ask(state) -> query``
    The next point.
``_tell(state, query, answer) -> bool | None``
    Update the model. Return ``False`` while an iteration is still under
    way (a line search); anything else completes one outer iteration.

and, where needed, ``_resume`` (start from a :class:`~mklopt._types.Handover`),
``_candidate`` (which answers may become the best point), ``_lower`` (a
lower bound of the method's own), ``_request`` (what the next oracle call
should compute, one :class:`~mklopt._types.OracleRequest`; by default built
from the finer hooks ``_need`` / ``_warm_start`` / ``_kernels``) and
``_extra`` (variables for ``Result.extra``).

Every answer that carries ``q`` is offered as the best point unless
``_candidate`` says otherwise, so no method can forget to keep its best
point; the base class computes its gap and the lower bound with the domain,
in one place.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._registry import Registry
from .._types import MethodReport, OracleRequest
from ..stopping import Stop

__all__ = [
    "ESTIMATOR_PARAMS",
    "estimator_params_of",
    "MethodBase",
    "register",
    "METHODS",
    "get_method",
    "method_names",
    "Preset",
    "PRESETS",
    "add_preset",
    "get_preset",
]

#: Registered outer methods: name -> class (canonical names and aliases);
#: the ``mklopt.methods`` entry points are read on the first lookup.
METHODS: Registry[str, type] = Registry("method", group="mklopt.methods")
#: Named configurations of registered methods (the benchmarks' keys such as
#: ``"sd"`` or ``"lp4/3"``): key -> :class:`Preset`.
PRESETS: Registry[str, Preset] = Registry("preset")


def register(*names, replace=False):
    """Class decorator: make a method available under ``names`` (first is canonical).

    Parameters
    ----------
    *names : str
        Registry names; the first is the canonical one (``cls.name``), the
        others are aliases (``"silp"`` for ``"cutting_plane"``).
    replace : bool, default=False
        Let a name already taken by another class be taken over. Re-running
        a notebook cell that defines and registers a method builds a new
        class under the same name; ``replace=True`` makes that harmless.

    Raises
    ------
    ValueError
        If a name belongs to another class and ``replace`` is false.
    """

    def deco(cls):
        for name in names:
            METHODS.register(name, cls, replace=replace)
        cls.name = names[0]
        return cls

    return deco


def get_method(name):
    """The method class registered under ``name`` (entry points included: :mod:`mklopt.plugins`).

    Raises
    ------
    ValueError
        For an unknown name; the message lists the registered ones.
    """
    return METHODS.get(name)


def method_names(oracle_kind=None):
    """Every registered name (aliases included), in the order of registration.

    Parameters
    ----------
    oracle_kind : {"dual", "weak_learners"}, optional
        Only the methods that talk to this kind of oracle (see
        :attr:`MethodBase.oracle_kind`); ``"dual"`` gives the names an
        estimator such as :class:`~mklopt.MKLClassifier` accepts.
    """
    return [n for n in METHODS.names()
            if oracle_kind is None or getattr(METHODS[n], "oracle_kind", "dual") == oracle_kind]


#: The estimators' formulation parameters a method may declare it takes.
ESTIMATOR_PARAMS = ("p", "groups", "elastic_net")


def estimator_params_of(cls):
    """``{estimator parameter: constructor keyword}`` that method class ``cls`` takes.

    Its ``estimator_params`` when declared, else ``p`` and ``groups`` when
    its constructor names them.
    """
    declared = getattr(cls, "estimator_params", None)
    if declared is not None:
        bad = sorted(set(declared) - set(ESTIMATOR_PARAMS))
        if bad:
            raise ValueError(
                f"{cls.__name__}.estimator_params names {', '.join(bad)}; the estimators pass "
                f"{', '.join(ESTIMATOR_PARAMS)}"
            )
        return dict(declared)
    try:
        names = set(inspect.signature(cls.__init__).parameters)
    except (TypeError, ValueError):  # pragma: no cover - builtins
        names = set()
    return {p: p for p in ("p", "groups") if p in names}


@dataclass(frozen=True)
class Preset:
    """A registered method with fixed hyper-parameters and a label for tables.

    Attributes
    ----------
    key : str
        The preset's name (``"sd"``, ``"lp4/3"``, ...).
    method : str
        The registry name of its method.
    label : str
        How tables and figures name it (``"SD (SimpleMKL)"``).
    params : tuple of (str, object)
        The keyword arguments of the method's constructor.
    """

    key: str
    method: str
    label: str
    params: tuple = ()

    @property
    def cls(self):
        """The method class."""
        return get_method(self.method)

    def make(self):
        """A fresh method instance with the preset's parameters."""
        return self.cls(**dict(self.params))


def add_preset(key, method, label, *, replace=False, **params):
    """Register the preset ``key``: method ``method`` with ``params``, shown as ``label``.

    Raises
    ------
    ValueError
        If ``method`` is not registered, or ``key`` is another preset's and
        ``replace`` is false.
    """
    if method not in METHODS:  # (plugins are read only then, never while mklopt imports)
        get_method(method)  # the method must be registered first
    return PRESETS.register(key, Preset(key, method, label, tuple(params.items())), replace)


def get_preset(key):
    """The :class:`Preset` registered under ``key``, or a registered method's defaults.

    A method name without a preset of its own (a user's method, perhaps from
    an entry point) runs with its default parameters, labelled by its name.
    """
    if key in PRESETS:
        return PRESETS[key]
    if METHODS.get(key, None) is not None:
        return Preset(key, key, key)
    known = ", ".join([*PRESETS, *(n for n in METHODS if n not in PRESETS)])
    raise ValueError(f"unknown method {key!r}; choose from {known}") from None


#: The request of most calls: everything, for all kernels, the usual warm start.
_FULL = OracleRequest()


@dataclass
class _Run:
    """Everything a run changes, outside the method's own state; ``start`` rebuilds it."""

    domain: Any
    state: Any
    best: Any = None
    weights: np.ndarray | None = None
    gap: float = math.nan
    dual: float = -math.inf  # best dual value D(alpha_j) seen
    n_iter: int = 0
    stop: Stop | None = None
    pending: Any = None
    evaluated: np.ndarray | None = None
    report: MethodReport | None = None


class MethodBase:
    """Shared machinery of the ask/tell outer methods (see the module notes).

    Attributes
    ----------
    name : str
        Canonical registry name.
    oracle_kind : {"dual", "weak_learners"}
        Which oracle the method talks to: an SVM-dual oracle such as
        ``SVMDual`` (answers with ``q`` and ``alpha``), or the boosting one.
    query_is_array : bool
        Whether queries are kernel-weight vectors (``ask`` then returns a
        read-only float64 copy). A method whose queries are other immutable
        records (boosting) sets False; its history rows then record the best
        point's weights.
    uses_cuts : bool
        Whether :meth:`start` with a handover reads its cuts (a chain
        collects them only for such methods).
    needs_problem : bool
        Whether the method reads the oracle's dual problem and kernels
        (``oracle.problem``, ``oracle.bank``) besides its answers, as an
        exact step does; such a method cannot run on a toy oracle.
    value_label : str
        What the reported value is, as the driver's progress lines name it:
        ``"J"`` (the MKL objective) unless the method reports something
        else (boosting: ``"exp loss"``).
    estimator_params : dict or None
        Which of the estimators' formulation parameters the method takes,
        as ``{estimator parameter: constructor keyword}``: ``"p"`` (Lp-MKL),
        ``"groups"`` (kernel groups), ``"elastic_net"`` (the mixing
        parameter). An estimator passes a parameter the method declares and
        refuses one it does not. ``None`` (the default) declares those of
        ``p`` and ``groups`` that the constructor names; see
        :func:`estimator_params_of`.
    """

    name = "base"
    oracle_kind = "dual"
    query_is_array = True
    uses_cuts = False
    needs_problem = False
    value_label = "J"
    estimator_params = None

    # ---- the protocol --------------------------------------------------------
    def start(self, oracle, handover=None):
        """(Re)initialise all run state for a run against ``oracle``.

        Parameters
        ----------
        oracle : Oracle
        handover : Handover, optional
            State handed over by an earlier method of a chain: the run
            starts from its best point (which stays the best point until a
            better one is found) and, where the method can, its cuts.
        """
        self.check_params(n_kernels=oracle.n_kernels)
        # The run record exists before the hooks run, so that a method may
        # finish (``_finish``) while it starts.
        self._mb_run = run = _Run(domain=None, state=None)
        if handover is None:
            run.domain, run.state = self._start(oracle)
        else:
            run.domain, run.state = self._resume(oracle, handover)
        if handover is not None:
            run.dual = float(handover.lower)
            candidate = self._handover_candidate(run.state, handover)
            if candidate is not None:
                self._mb_offer(*candidate)
        run.report = self._mb_make_report()

    def ask(self):
        """The next query (read-only); asking again before ``tell`` returns the same one."""
        run = self._mb_require_started()
        if run.pending is None:
            q = self._ask(run.state)
            if self.query_is_array:
                q = np.array(q, dtype=np.float64, copy=True)
                q.flags.writeable = False
            run.pending = q
        return run.pending

    def tell(self, query, answer):
        """Feed the oracle's ``answer`` at ``query`` (the last asked point)."""
        run = self._mb_require_started()
        if run.pending is None:
            raise RuntimeError(f"{type(self).__name__}.tell called without a pending ask()")
        run.pending = None
        if self._tell(run.state, query, answer) is not False:
            run.n_iter += 1
        candidate = self._candidate(run.state, query, answer)
        if candidate is not None:
            self._mb_offer(*candidate)
        run.evaluated = np.array(query if self.query_is_array else run.weights, dtype=np.float64)
        run.report = self._mb_make_report()

    def report(self):
        """The run's :class:`~mklopt._types.MethodReport` (rebuilt by ``start`` and ``tell``)."""
        return self._mb_require_started().report

    def extra(self):
        """Method-specific variables for ``Result.extra``."""
        return self._extra(self._mb_require_started().state)

    def refine_best(self, weights, answer):
        """Replace the best point's answer by a more accurate one at the same weights.

        The driver calls it when a run would stop converged on an answer
        computed at a looser inner tolerance than the gap target allows
        (see :func:`mklopt.solve`): ``answer`` is the oracle's answer at the
        best point's ``weights`` at the tighter tolerance. Its value is
        closer to ``J(w)`` (an inexact inner solve of a maximisation
        underestimates it), so the best value may go up and the gap widen;
        its dual value still tightens the lower bound. The method's own
        state is left as it is.
        """
        run = self._mb_require_started()
        if getattr(answer, "q", None) is None:
            return
        dom = run.domain
        if dom is not None:
            run.dual = max(run.dual, dom.dual_value(answer))
        run.best = answer
        run.weights = np.array(weights, dtype=np.float64)
        if not getattr(answer, "converged", True):
            run.gap = math.inf
        else:
            run.gap = dom.gap(run.weights, answer) if dom is not None else math.nan
        run.report = self._mb_make_report()

    # ---- conveniences beyond the protocol -------------------------------------
    def bounds(self):
        """``(lower, upper)`` on the optimum: the report's ``lower`` and best value."""
        rep = self.report()
        return rep.lower, rep.upper

    @property
    def domain(self):
        """The feasible set of the current run (``None`` before ``start``)."""
        run = getattr(self, "_mb_run", None)
        return None if run is None else run.domain

    def check_params(self, n_kernels=None):
        """Validate the hyper-parameters; raise ``TypeError``/``ValueError`` naming the bad one.

        Called by :meth:`start`; estimators call it to check parameters they
        pass through. ``n_kernels`` enables the checks that depend on the
        problem (a partition of the kernels). The default has nothing to check.
        """

    # ---- hooks with defaults ----------------------------------------------------
    def _resume(self, oracle, handover):
        """Start from a handover; the default starts afresh (keeping its best point)."""
        return self._start(oracle)

    def _candidate(self, state, query, answer):
        """``(weights, answer)`` to offer as the best point, or None. Default: this answer."""
        return query, answer

    def _handover_candidate(self, state, handover):
        """The handed-over point to offer as the best point, or None.

        Default: the handover's weights and answer, whose value is ``J`` at
        those weights. A method whose ``J`` at a point is more than one
        oracle answer there (the mixed-norm mirror method maximises over
        ``gamma`` as well) offers it only where the answer gives ``J``.
        """
        return handover.weights, handover.answer

    def _lower(self, state):
        """A certified lower bound of the method's own (default: none).

        It must be a dual value: ``D`` of some feasible dual point (the
        level method's model minimum is ``D`` of an aggregate of its
        answers' ``alpha``, see :meth:`CutModel.minimize`), since the
        reported gap is the best value minus it.
        """
        return -math.inf

    def _request(self, state):
        """What the next oracle call should compute, as one :class:`~mklopt._types.OracleRequest`.

        The default gathers the finer hooks ``_need``, ``_warm_start`` and
        ``_kernels``, so a method overrides whichever it needs. A method
        that runs other methods (a chain) overrides this one instead and
        passes on their requests whole, whatever fields they carry.
        """
        need, warm, kernels = self._need(state), self._warm_start(state), self._kernels(state)
        if need == "full" and warm is None and kernels is None:
            return _FULL
        return OracleRequest(need=need, warm_start=warm, kernels=kernels)

    def _need(self, state):
        """What the next call needs: ``"full"`` (default), ``"value"`` or ``"exact"``."""
        return "full"

    def _warm_start(self, state):
        """Dual variables for the next call (default None: the previous answer's)."""
        return None

    def _kernels(self, state):
        """Kernels whose ``q`` the next call needs (default None: all)."""
        return None

    def _extra(self, state):
        return {}

    # ---- helpers ---------------------------------------------------------------
    def _finish(self, reason, converged=False):
        """End the run from inside the method (the report carries the reason)."""
        self._mb_run.stop = Stop(reason, converged)

    def _mb_offer(self, w, answer):
        """Keep ``(w, answer)`` as the best point if its value is the lowest so far.

        Value-only answers (``q`` is None) carry no gap and are skipped. An
        answer whose inner solve did not converge (``converged`` False) still
        gives its dual value (its ``alpha`` is feasible), but its ``value``
        is only a lower bound of ``J(w)``: it never replaces a converged best
        point, and while it is the best point the gap is infinite.
        """
        run = self._mb_run
        if getattr(answer, "q", True) is None:
            return
        dom = run.domain
        if dom is not None:
            run.dual = max(run.dual, dom.dual_value(answer))
        exact = getattr(answer, "converged", True)
        best_exact = run.best is not None and getattr(run.best, "converged", True)
        if best_exact and not exact:
            return
        if run.best is None or answer.value < run.best.value or (exact and not best_exact):
            run.best = answer
            run.weights = np.array(w, dtype=np.float64)
            if not exact:
                run.gap = math.inf
            else:
                run.gap = dom.gap(run.weights, answer) if dom is not None else math.nan

    def _mb_make_report(self):
        run = self._mb_run
        s = run.state
        lower = float(max(self._lower(s), run.dual))
        gap = float(run.gap)
        if (run.best is not None and math.isfinite(lower) and not math.isnan(gap)
                and getattr(run.best, "converged", True)):
            # The best point's value against the best dual certificate known:
            # never more than the point's own gap (its own alpha is one of them).
            gap = max(0.0, min(gap, float(run.best.value) - lower))
        return MethodReport(
            best=run.best,
            weights=run.weights,
            gap=gap,
            lower=lower,
            n_iter=run.n_iter,
            stop=run.stop,
            evaluated=run.evaluated,
            request=self._request(s),
        )

    def _mb_require_started(self):
        run = getattr(self, "_mb_run", None)
        if run is None:
            raise RuntimeError(f"call {type(self).__name__}.start(oracle) first")
        return run

    # ---- parameters (scikit-learn style, used by the estimators) -------------
    def get_params(self, deep=False):
        """The constructor's parameters as a dict (scikit-learn style)."""
        sig = inspect.signature(type(self).__init__)
        # A method without an __init__ of its own (no parameters) has object's
        # (*args, **kwargs): no parameters, rather than an AttributeError.
        plain = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        return {p: getattr(self, p) for p, par in sig.parameters.items()
                if p != "self" and par.kind in plain}

    def set_params(self, **params):
        """Set constructor parameters by name and return the method (scikit-learn style).

        This lets model selection reach a method inside an estimator, e.g.
        ``GridSearchCV(est, {"method__memory": [1, 10]})``. Values are
        checked at the next :meth:`start` (by :meth:`check_params`).

        Raises
        ------
        ValueError
            If a name is not a parameter of the method.
        """
        valid = self.get_params()
        for key, value in params.items():
            if key not in valid:
                raise ValueError(
                    f"invalid parameter {key!r} for {type(self).__name__}; "
                    f"valid parameters are {sorted(valid)}"
                )
            setattr(self, key, value)
        return self

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"
