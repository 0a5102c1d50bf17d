"""A small vocabulary of parameter constraints, and one function that checks a table of them.

An estimator (or any object with hyper-parameters) declares what each of
its parameters may be, as a dict from the parameter's name to a list of
constraints; a value is valid when it satisfies at least one of them::

    _parameter_constraints = {
        "C": [Interval(Real, 0, None, closed="neither")],
        "inner_tol": [Interval(Real, 0, None, closed="neither"), None],
        "normalize": [Options({"diagonal", "trace"}), None],
        "standardize": [Options({"auto"}), "boolean"],
        "callback": [Callable(), None],
    }

:func:`validate_params` then checks every value in one place and returns
them converted (a real as ``float``, an int as ``int``, a bool as
``bool``). An invalid value raises an error that names the parameter,
says what it may be and what it got:

* ``ValueError`` when the value has a kind some constraint is about but
  fails it (``C=0``: "C must be > 0, got 0"; ``normalize="unit"``);
* ``TypeError`` when it has none of the kinds the parameter takes
  (``C="big"``: "C must be a real number > 0, got str 'big'").

The table is modelled on scikit-learn's ``_parameter_constraints`` but is
mklopt's own: the core never imports scikit-learn. A constraint is one of

``None``
    The value ``None``.
``"boolean"``
    ``True`` or ``False`` (NumPy bools too).
``"no_validation"``
    The whole entry (not in a list): the value is checked where it is
    used, by code that names it.
a class
    Instances of it (:class:`InstanceOf`).
a :class:`Constraint`
    :class:`Interval`, :class:`Options`, :class:`Callable`,
    :class:`HasMethods`, :class:`Registered` (a name in a registry read
    at check time, so names registered later count), :class:`Check` (a
    validator function owned elsewhere), or a subclass of your own.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

__all__ = [
    "Constraint",
    "Interval",
    "Options",
    "Boolean",
    "IsNone",
    "InstanceOf",
    "Callable",
    "HasMethods",
    "Registered",
    "Check",
    "NO_VALIDATION",
    "make_constraint",
    "validate_params",
]

#: A table entry (instead of a list) for a parameter checked where it is used.
NO_VALIDATION = "no_validation"


class Constraint:
    """One rule a parameter value may satisfy.

    Subclasses define :meth:`accepts` and a description (``str``); they may
    refine :meth:`owns` (the value is of the kind this rule is about, so
    failing it is a ``ValueError``), :meth:`error` (a precise error for an
    owned value that fails) and :meth:`convert`.
    """

    #: Literal values this rule stands for, when it is a list of them
    #: (``None``, booleans, options); described together with its neighbours.
    literals: tuple | None = None

    def accepts(self, value) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError

    def owns(self, value) -> bool:
        """Whether ``value`` has the kind this rule is about (default: it does not)."""
        return False

    def error(self, name, value):
        """The error for an owned ``value`` that fails, or None for the generic one."""
        return None

    def convert(self, value):
        """The value as the owner uses it (default: unchanged)."""
        return value

    def __str__(self):  # pragma: no cover - abstract
        raise NotImplementedError


def _with_help(text, help):
    return text if not help else f"{text} ({help})"


def _num(x):
    """A bound as written: ``1`` for 1.0 is not shortened, so messages keep their numbers."""
    if isinstance(x, float) and math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return repr(x) if isinstance(x, float) else str(x)


class Interval(Constraint):
    """A real or integer number in an interval.

    Parameters
    ----------
    kind : numbers.Real or numbers.Integral
        ``Real`` accepts any real number (ints included, bools refused);
        ``Integral`` accepts integers only.
    low, high : float or None
        The bounds; None means unbounded. Infinite values pass only an
        infinite bound that is closed (``Interval(Real, 1, inf,
        closed="right")`` takes ``numpy.inf``); NaN never passes.
    closed : {"both", "left", "right", "neither"}, default="both"
        Which bounds belong to the interval.
    help : str, optional
        What the number means, added to messages in parentheses.

    Examples
    --------
    >>> from numbers import Real
    >>> str(Interval(Real, 0, 1, closed="left"))
    'a real number in [0, 1)'
    >>> Interval(Real, 0, None, closed="neither").accepts(0.0)
    False
    """

    def __init__(self, kind, low, high, *, closed="both", help=None):
        if kind not in (numbers.Real, numbers.Integral):
            raise TypeError(f"kind must be numbers.Real or numbers.Integral, got {kind!r}")
        if closed not in ("both", "left", "right", "neither"):
            raise ValueError(f"closed must be 'both', 'left', 'right' or 'neither', got {closed!r}")
        self.kind, self.low, self.high, self.closed, self.help = kind, low, high, closed, help

    @property
    def _strict_low(self):
        return self.closed in ("right", "neither")

    @property
    def _strict_high(self):
        return self.closed in ("left", "neither")

    def owns(self, value):
        return isinstance(value, self.kind) and not isinstance(value, (bool, np.bool_))

    def _problem(self, value):
        """What is wrong with an owned value: None, or the message's predicate."""
        v = float(value)
        if math.isnan(v):
            return "finite"
        lo, hi = self.low, self.high
        if math.isinf(v):
            ok = (v > 0 and hi is not None and math.isinf(hi) and hi > 0 and not self._strict_high
                  ) or (v < 0 and lo is not None and math.isinf(lo) and lo < 0
                        and not self._strict_low)
            if not ok:
                return "finite"
            return None
        if lo is not None and (v <= lo if self._strict_low else v < lo):
            return f"{'>' if self._strict_low else '>='} {_num(lo)}"
        if hi is not None and (v >= hi if self._strict_high else v > hi):
            return f"{'<' if self._strict_high else '<='} {_num(hi)}"
        return None

    def accepts(self, value):
        return self.owns(value) and self._problem(value) is None

    def error(self, name, value):
        return ValueError(f"{name} must be {_with_help(self._problem(value), self.help)}, "
                          f"got {value!r}")

    def convert(self, value):
        return int(value) if self.kind is numbers.Integral else float(value)

    def __str__(self):
        what = "an integer" if self.kind is numbers.Integral else "a real number"
        lo, hi = self.low, self.high
        if lo is not None and hi is not None:
            left = "(" if self._strict_low else "["
            right = ")" if self._strict_high else "]"
            rng = f" in {left}{_num(lo)}, {_num(hi)}{right}"
        elif lo is not None:
            rng = f" {'>' if self._strict_low else '>='} {_num(lo)}"
        elif hi is not None:
            rng = f" {'<' if self._strict_high else '<='} {_num(hi)}"
        else:
            rng = ""
        return _with_help(what + rng, self.help)


class Options(Constraint):
    """One of a few literal values (strings compared exactly).

    A value of the options' type (a string, for string options) that is
    not among them is a ``ValueError``; any other type a ``TypeError``.
    The options are listed in the order given.
    """

    def __init__(self, options, *, help=None):
        self.options = tuple(options)
        if not self.options:
            raise ValueError("Options needs at least one value")
        self.literals = self.options
        self.help = help

    def accepts(self, value):
        return any(type(value) is type(o) and value == o for o in self.options)

    def owns(self, value):
        return any(isinstance(value, type(o)) for o in self.options)

    def __str__(self):
        return _with_help(_literals(self.options, alone=True), self.help)


class Boolean(Constraint):
    """``True`` or ``False`` (a NumPy bool too)."""

    literals = (True, False)

    def accepts(self, value):
        return isinstance(value, (bool, np.bool_))

    owns = accepts

    def convert(self, value):
        return bool(value)

    def __str__(self):
        return "True or False"


class IsNone(Constraint):
    """The value ``None``."""

    literals = (None,)

    def accepts(self, value):
        return value is None

    def __str__(self):
        return "None"


class InstanceOf(Constraint):
    """Instances of ``cls``; ``description`` names them in messages (default: the class name)."""

    def __init__(self, cls, description=None):
        self.cls = cls
        self.description = description

    def accepts(self, value):
        return isinstance(value, self.cls)

    def __str__(self):
        if self.description is not None:
            return self.description
        name = self.cls.__name__
        return f"an {name}" if name[:1].lower() in "aeiou" else f"a {name}"


class Callable(Constraint):
    """Any callable; ``help`` says what it is called with."""

    def __init__(self, help=None):
        self.help = help

    def accepts(self, value):
        return callable(value)

    def __str__(self):
        return _with_help("a callable", self.help)


class HasMethods(Constraint):
    """An instance (not a class) with the callable attributes ``methods``.

    A class that has them is a ``TypeError`` saying to pass an instance.
    """

    def __init__(self, methods, description=None):
        self.methods = (methods,) if isinstance(methods, str) else tuple(methods)
        self.description = description

    def _has(self, value):
        return all(callable(getattr(value, m, None)) for m in self.methods)

    def accepts(self, value):
        return not isinstance(value, type) and self._has(value)

    def owns(self, value):
        return isinstance(value, type) and self._has(value)

    def error(self, name, value):
        return TypeError(
            f"{name} must be a name or an instance; got the class {value.__name__}: pass "
            f"{value.__name__}() instead"
        )

    def __str__(self):
        if self.description is not None:
            return self.description
        return f"an object with {'/'.join(self.methods)}"


class Registered(Constraint):
    """A name in a registry, looked up when the check runs.

    Parameters
    ----------
    lookup : callable
        ``lookup(name)`` returns the registered entry or raises
        ``ValueError`` with a message that lists the known names (as
        :func:`mklopt.methods.get_method` and :func:`mklopt.tasks.get_oracle`
        do). Names registered after the table was written count, entry
        points included.
    description : str
        What the names are, for messages (``"a registered method name"``).
    """

    def __init__(self, lookup, description):
        self.lookup = lookup
        self.description = description

    def owns(self, value):
        return isinstance(value, str)

    def accepts(self, value):
        if not isinstance(value, str):
            return False
        try:
            self.lookup(value)
        except ValueError:
            return False
        return True

    def error(self, name, value):
        try:
            self.lookup(value)
        except ValueError as exc:
            return ValueError(f"{name}: {exc}")
        return None  # pragma: no cover - accepted meanwhile

    def __str__(self):
        return self.description


class Check(Constraint):
    """A validator function owned elsewhere, as one constraint.

    For a parameter whose rules live with the code that uses it (a kernel
    storage, a seed, the one-class ``nu``): ``check(value, name)`` (or
    ``check(value)`` when ``pass_name`` is false) raises ``TypeError`` /
    ``ValueError`` naming the parameter. With ``converts=True`` what it
    returns is the value to use (:func:`validate_params` returns it).
    """

    def __init__(self, check, description, *, pass_name=True, converts=False):
        self.check = check
        self.description = description
        self.pass_name = pass_name
        self.converts = converts

    def _run(self, value, name):
        return self.check(value, name) if self.pass_name else self.check(value)

    def owns(self, value):
        return True

    def accepts(self, value):
        try:
            self._run(value, "value")
        except (TypeError, ValueError):
            return False
        return True

    def error(self, name, value):
        try:
            self._run(value, name)
        except (TypeError, ValueError) as exc:
            return exc
        return None  # pragma: no cover - accepted meanwhile

    def convert(self, value):
        return self._run(value, "value") if self.converts else value

    def __str__(self):
        return self.description


def make_constraint(spec):
    """The :class:`Constraint` a table entry's item stands for (see the module notes)."""
    if spec is None:
        return IsNone()
    if isinstance(spec, Constraint):
        return spec
    if isinstance(spec, str):
        if spec == "boolean":
            return Boolean()
        raise ValueError(f"unknown constraint {spec!r}; use 'boolean', None, a class or a "
                         "Constraint")
    if isinstance(spec, type):
        return InstanceOf(spec)
    raise TypeError(f"unknown constraint {spec!r} of type {type(spec).__name__}")


def _literals(values, alone):
    shown = [repr(v) for v in values]
    if len(shown) == 1:
        return shown[0]
    if not alone:
        return ("one of " if len(shown) > 3 else "") + ", ".join(shown)
    head = "one of " if len(shown) > 3 else ""
    return head + ", ".join(shown[:-1]) + " or " + shown[-1]


def describe(constraints):
    """What a parameter may be, in words: ``"a real number > 0 or None"``.

    Neighbouring literal constraints (options, booleans, None) are listed
    together: ``"'auto', True or False"``.
    """
    groups = []  # [is_literal, payload, helps]
    for c in constraints:
        if c.literals is not None:
            if not (groups and groups[-1][0]):
                groups.append([True, [], []])
            groups[-1][1].extend(c.literals)
            if getattr(c, "help", None):
                groups[-1][2].append(c.help)
        else:
            groups.append([False, str(c), []])
    alone = len(groups) == 1
    parts = [_with_help(_literals(p, alone), "; ".join(h)) if lit else p
             for lit, p, h in groups]
    if len(parts) == 1:
        return parts[0]
    return ", ".join(parts[:-1]) + " or " + parts[-1]


def check_param(name, value, constraints):
    """Check one value against its list of constraints; return it converted.

    Raises
    ------
    ValueError
        If the value is of a kind some constraint is about but fails it.
    TypeError
        If it is of no kind the parameter takes.
    """
    rules = [make_constraint(c) for c in constraints]
    # Literals (None, options, booleans) are tried first: they are exact
    # comparisons that cannot fail or import, whereas a Check may need an
    # optional package (a Dask client's check imports distributed), and a
    # plain install must accept ``client=None`` without it.
    for c in sorted(rules, key=lambda c: c.literals is None):
        if c.accepts(value):
            return c.convert(value)
    owners = [c for c in rules if c.owns(value)]
    for c in owners:  # the most precise complaint first
        err = c.error(name, value)
        if err is not None:
            raise err
    if owners:
        raise ValueError(f"{name} must be {describe(rules)}, got {value!r}")
    raise TypeError(f"{name} must be {describe(rules)}, got {type(value).__name__} {value!r}")


def validate_params(constraints, params, owner=None):
    """Check parameter values against a constraint table, in one place.

    Parameters
    ----------
    constraints : dict
        Parameter name -> list of constraints, or ``"no_validation"``.
    params : dict
        Parameter name -> value; every name must be in ``constraints``.
    owner : str, optional
        Who the parameters belong to (a class name), for the message of a
        parameter missing from the table.

    Returns
    -------
    dict
        The values, converted by the constraint each satisfied (reals as
        ``float``, ints as ``int``, booleans as ``bool``); unchecked ones
        as given.

    Raises
    ------
    TypeError, ValueError
        For the first invalid value, naming it (see :func:`check_param`).
    KeyError
        For a parameter the table does not declare (a programming error).
    """
    out = {}
    for name, value in params.items():
        try:
            entry = constraints[name]
        except KeyError:
            raise KeyError(
                f"{owner or 'the table'} declares no constraints for the parameter {name!r}"
            ) from None
        if isinstance(entry, str) and entry == NO_VALIDATION:
            out[name] = value
            continue
        out[name] = check_param(name, value, entry)
    return out
