"""The registry of learning tasks and their oracles (losses).

A *task* is what an estimator learns: ``"classification"``
(:class:`~mklopt.MKLClassifier`), ``"regression"``
(:class:`~mklopt.MKLRegressor`), ``"one-class"``
(:class:`~mklopt.MKLOneClass`) or a user's own. Each task has one or more
oracles, registered under a short name that is the estimator's ``loss``
(``"hinge"``, ``"logistic"``, ``"epsilon_insensitive"``, ``"squared"``,
``"nu"``). The estimators build their oracle from this registry, the
command line offers its names (``mklopt fit --task regression --loss
NAME``) and a saved model names its oracle by them, so an oracle written
outside mklopt and registered with :func:`register_oracle` (in a module of
its own, or through the ``mklopt.oracles`` entry point group) is fitted,
saved, loaded and run from the command line like the built-in ones.

Each task is a :class:`TaskEntry` too (:func:`register_task`): how ``y``
becomes the MKL problems of a fit (one-vs-one pairs, one regression
problem, one one-class problem), how a problem's dual vector becomes
expansion coefficients, how the problems' decisions combine, and the
score a search ranks models by. Every estimator fits through one core
driven by its task's entry, so a task of one's own is one entry, its
oracles and an estimator subclass that names it.

Estimator classes are registered too (:func:`register_estimator`): a saved
model records the registered name of its estimator, found along the
class's bases, so a subclass of a registered estimator saves under its
base's name plus its own class name, and loads as itself wherever its class
is defined (or under its own name once registered).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._registry import Registry

__all__ = [
    "ORACLES",
    "ESTIMATORS",
    "OracleEntry",
    "EstimatorEntry",
    "register_oracle",
    "get_oracle",
    "oracle_names",
    "register_estimator",
    "estimator_entry",
    "TASKS",
    "TaskEntry",
    "Problem",
    "register_task",
    "get_task",
]


#: The estimator values an oracle factory may take (see :class:`OracleEntry`).
KNOWN_PARAMS = ("C", "epsilon", "nu", "tol", "sample_weight")
#: Those a factory may take that an estimator passes only when set.
OPTIONAL_PARAMS = ("sample_weight",)


@dataclass(frozen=True)
class OracleEntry:
    """A registered oracle: how an estimator of ``task`` builds it.

    Attributes
    ----------
    name : str
        The registry name (the estimator's ``loss``).
    task : str
        The task it solves (``"classification"``, ``"regression"``,
        ``"one-class"`` or a user's).
    factory : callable
        ``factory(bank, y, **params) -> oracle``; ``y`` is left out for a
        task without targets (``"one-class"``).
    params : tuple of str
        The keywords ``factory`` takes, among the estimator's validated
        values: ``"C"``, ``"epsilon"``, ``"nu"`` and ``"tol"`` (the inner
        tolerance), and ``"sample_weight"`` (per-sample weights, for an
        oracle without a ``C`` that takes them: the one-class oracle).
    exact_step : bool
        Whether the dual is a box-constrained quadratic program, so that
        the exact active-set step (:class:`~mklopt.methods.ActiveSet`)
        applies to it.
    """

    name: str
    task: str
    factory: Callable[..., Any]
    params: tuple = ()
    exact_step: bool = False

    def make(self, bank, y=None, **values):
        """The oracle on ``bank`` (and targets ``y``), given the estimator's ``values``.

        Keywords the oracle does not take are dropped; a keyword it takes
        and ``values`` lacks is an error naming it, except the optional
        ``sample_weight`` (left out when ``values`` has none).
        """
        missing = [p for p in self.params if p not in values and p not in OPTIONAL_PARAMS]
        if missing:
            raise TypeError(f"oracle {self.name!r} needs {', '.join(missing)}")
        kwargs = {p: values[p] for p in self.params
                  if p in values and not (p in OPTIONAL_PARAMS and values[p] is None)}
        if y is None:
            return self.factory(bank, **kwargs)
        return self.factory(bank, y, **kwargs)


@dataclass(frozen=True)
class Problem:
    """One MKL problem of a fit: the training rows it solves on and their targets.

    Attributes
    ----------
    rows : ndarray of int64
        Indices into the training set, in the order the problem's points
        take.
    y : ndarray of float64 or None
        The problem's targets: -1/+1 for a binary classification problem,
        real values for regression, None for a task without targets
        (one-class).
    classes : tuple of int, optional
        The class indices ``(i, j)`` of a one-vs-one problem (``j`` is its
        +1 class), or None.
    name : str
        How the progress lines name it ("" for a fit's only problem).
    """

    rows: Any
    y: Any = None
    classes: tuple | None = None
    name: str = ""


@dataclass(frozen=True)
class TaskEntry:
    """A registered learning task: how its estimators turn ``y`` into MKL problems.

    Every estimator of a task fits through one core (features, precomputed
    kernels and every cross-validation fold): the entry says what differs
    between tasks, and the oracle (the loss) comes from :data:`ORACLES`.

    Attributes
    ----------
    name : str
        ``"classification"``, ``"regression"``, ``"one-class"`` or a user's.
    targets : callable
        ``targets(y, n_samples, where) -> (labels, t)``: ``y`` checked, its
        labels (the classes, or None) and the targets ``t`` the problems
        read (class indices, real values, or None). ``where`` names the
        estimator in errors.
    problems : callable
        ``problems(t, labels, n_samples, by_class) -> list of Problem``:
        the MKL problems of a fit on ``n_samples`` points with targets
        ``t`` (``by_class``: each problem's rows class by class, for a bank
        laid out so).
    signed : bool
        Whether a problem's expansion coefficients are ``alpha_i y_i`` (the
        classification duals) rather than ``alpha_i`` itself (a regression
        dual's signed ``beta``, the one-class ``alpha``): see
        :meth:`coefficients`.
    combine : callable, optional
        ``combine(decisions, pairs, labels) -> ndarray``: the estimator's
        decision function from the problems' decision values, shape
        (n_samples, n_problems) (``pairs``: the problems' classes, shape
        (n_problems, 2), or None). Default: the one problem's values.
    parents : callable
        ``parents(problems) -> list of int or None``: the problem each one
        starts its run from (-1 for none), fixed before any run, or None.
    scoring : str
        The score a search ranks models by (``"accuracy"``, ``"r2"``).
    """

    name: str
    targets: Callable[..., Any]
    problems: Callable[..., Any]
    signed: bool = False
    combine: Callable[..., Any] | None = None
    parents: Callable[..., Any] | None = None
    scoring: str = ""

    def coefficients(self, alpha, y):
        """A problem's expansion coefficients from its dual vector ``alpha`` and targets ``y``."""
        return alpha * y if self.signed else alpha

    def decisions(self, decisions, pairs=None, labels=None):
        """The decision function from per-problem decision values (n_samples, n_problems)."""
        if self.combine is None:
            return decisions[:, 0]
        return self.combine(decisions, pairs, labels)

    def parents_of(self, problems):
        """Each problem's warm-start parent (or None: the problems start independently)."""
        if self.parents is None or len(problems) < 2:
            return None
        return self.parents(problems)


@dataclass(frozen=True)
class EstimatorEntry:
    """A registered estimator class (see :func:`register_estimator`)."""

    name: str
    cls: type
    task: str


def _unknown_oracle(key, keys):
    task, name = key
    known = ", ".join(repr(n) for (t, n) in keys if t == task) or "none"
    return f"loss must name an oracle registered for the {task} task ({known}), got {name!r}"


def _unknown_task(key, keys):
    known = ", ".join(repr(k) for k in keys) or "none"
    return (f"unknown task {key!r}; registered tasks: {known} (the built-in ones are "
            "registered when mklopt.estimators is imported)")


#: Registered oracles: (task, name) -> :class:`OracleEntry`; one entry per
#: factory (re-registering a factory under its name updates its entry).
ORACLES: Registry[tuple[str, str], OracleEntry] = Registry(
    "oracle", group="mklopt.oracles", identity=lambda e: e.factory, unknown=_unknown_oracle)
#: Registered tasks: name -> :class:`TaskEntry` (the built-in ones are
#: registered by :mod:`mklopt.estimators`).
TASKS: Registry[str, TaskEntry] = Registry(
    "task", identity=lambda e: (e.targets, e.problems), unknown=_unknown_task)
#: Registered estimators: name -> :class:`EstimatorEntry`.
ESTIMATORS: Registry[str, EstimatorEntry] = Registry("estimator", identity=lambda e: e.cls)


def register_oracle(name, task, factory=None, params=None, exact_step=False, replace=False):
    """Register an oracle under ``name`` for ``task``; usable as a decorator.

    Parameters
    ----------
    name : str
        The registry name, which estimators take as ``loss``.
    task : str
        ``"classification"``, ``"regression"``, ``"one-class"`` or a
        task of your own.
    factory : callable, optional
        ``factory(bank, y, **params)`` (without ``y`` for
        ``"one-class"``) returning the oracle; usually the oracle class.
        Omit it to use ``register_oracle`` as a class decorator.
    params : sequence of str, optional
        The estimator values the factory takes (``"C"``, ``"epsilon"``,
        ``"nu"``, ``"tol"``, ``"sample_weight"``). Default: those of them in
        the factory's signature. An oracle whose ``C`` may be one bound per
        sample (estimators' ``class_weight`` and ``sample_weight``) says so
        with the class attribute ``sample_bounds = True``.
    exact_step : bool, default=False
        Whether the exact active-set step applies (a box-constrained QP
        dual, as the SVM's).
    replace : bool, default=False
        Let ``name`` be taken over for ``task`` (re-running a notebook cell).

    Returns
    -------
    OracleEntry, or the decorator

    Raises
    ------
    ValueError
        If ``(task, name)`` is taken by another factory and ``replace`` is false.
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a non-empty string, got {name!r}")
    if not isinstance(task, str) or not task:
        raise TypeError(f"task must be a non-empty string, got {task!r}")
    if factory is None:
        def deco(cls):
            register_oracle(name, task, cls, params, exact_step, replace)
            return cls
        return deco
    if not callable(factory):
        raise TypeError(f"factory must be callable, got {type(factory).__name__}")
    if params is None:
        try:
            sig = inspect.signature(factory).parameters
        except (TypeError, ValueError):
            sig = {}
        params = tuple(p for p in KNOWN_PARAMS if p in sig)
    entry = OracleEntry(name, task, factory, tuple(params), bool(exact_step))
    return ORACLES.register((task, name), entry, replace)


def get_oracle(task, name):
    """The :class:`OracleEntry` of ``name`` for ``task``; the error lists the known names."""
    return ORACLES.get((task, name))


def oracle_names(task=None):
    """Registered oracle names (of ``task`` only, if given), in registration order."""
    return [n for (t, n) in ORACLES.names() if task is None or t == task]


def register_task(entry, replace=False):
    """Register a learning task (a :class:`TaskEntry`) under ``entry.name``.

    Its oracles are registered with :func:`register_oracle` under the same
    task name; an estimator whose ``_task`` names it fits through the one
    estimator core.
    """
    if not isinstance(entry, TaskEntry):
        raise TypeError(f"entry must be a TaskEntry, got {type(entry).__name__}")
    return TASKS.register(entry.name, entry, replace)


def get_task(name):
    """The :class:`TaskEntry` of ``name``; the error lists the registered tasks.

    The built-in tasks are registered when :mod:`mklopt.estimators` is
    imported (``import mklopt`` makes its estimators available on first use).
    """
    return TASKS.get(name)


def register_estimator(cls, task, name=None, replace=False):
    """Register an estimator class, so that its fitted models save and load by ``name``.

    Parameters
    ----------
    cls : type
        The estimator class. Its saved models hold what its codec writes
        (:func:`mklopt.persist.register_codec`; a subclass of a registered
        estimator is saved by its base's).
    task : str
        Its task.
    name : str, optional
        The name saved models record; default ``cls.__name__``.
    replace : bool, default=False
        Let ``name`` be taken over by another class.
    """
    name = cls.__name__ if name is None else name
    ESTIMATORS.register(name, EstimatorEntry(name, cls, task), replace)
    return cls


def estimator_entry(obj):
    """The entry of a registered name, or of the nearest registered class of an estimator.

    Raises
    ------
    ValueError
        If nothing registered matches.
    """
    if isinstance(obj, str):
        return ESTIMATORS.get(obj)
    by_cls = {e.cls: e for e in ESTIMATORS.values()}
    for base in type(obj).__mro__:
        if base in by_cls:
            return by_cls[base]
    raise ValueError(f"{type(obj).__name__} is not a registered estimator or a subclass of one")
