"""The estimators' parameter tables: complete, checked at the start of fit, errors naming the parameter."""

import math
import re
from numbers import Integral, Real

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mklopt import (
    MKBoostClassifier,
    MKLClassifier,
    MKLClassifierCV,
    MKLOneClass,
    MKLRegressor,
    MKLRegressorCV,
)
from mklopt._constraints import (
    NO_VALIDATION,
    Boolean,
    Callable,
    Check,
    HasMethods,
    InstanceOf,
    Interval,
    Options,
    Registered,
    check_param,
    describe,
    validate_params,
)
from mklopt.estimators._core import EstimatorCore
from mklopt.kernels import linear, rbf
from mklopt.methods import Boosting

ESTIMATORS = [MKLClassifier, MKLClassifierCV, MKBoostClassifier, MKLRegressor, MKLRegressorCV,
              MKLOneClass]


def params_of(cls):
    return set(cls._get_param_names())


# ---------------------------------------------------------------- the tables
@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_the_table_names_every_constructor_parameter_and_nothing_else(cls):
    assert issubclass(cls, EstimatorCore)
    table = set(cls._parameter_constraints)
    params = params_of(cls)
    assert table == params, (
        f"{cls.__name__}: not in the table {sorted(params - table)}, "
        f"not parameters {sorted(table - params)}"
    )


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_defaults_satisfy_the_table(cls):
    est = cls()
    checked = est._validate_params()
    assert set(checked) == params_of(cls)


def test_shared_parameters_are_declared_once():
    # The same parameter means the same thing in every estimator that has it:
    # the tables hold the very same constraint objects.
    shared = ("method", "p", "groups", "elastic_net", "tol", "max_iter", "inner_tol",
              "normalize", "weight_threshold", "time_limit", "storage", "cache_size",
              "max_memory", "callback", "verbose", "n_jobs", "client", "kernel_names",
              "kernel_axis", "psd")
    for name in shared:
        # (MKBoost's tol is its weak SVMs' SMO tolerance, another parameter)
        owners = [c for c in ESTIMATORS if name in c._parameter_constraints
                  and not (c is MKBoostClassifier and name == "tol")]
        entries = {id(c._parameter_constraints[name]) for c in owners}
        assert len(entries) == 1, f"{name} is declared {len(entries)} times"
    for name in ("standardize",):  # the classifiers' (the others standardise or not)
        assert (MKLClassifier._parameter_constraints[name]
                is MKBoostClassifier._parameter_constraints[name]
                is MKLClassifierCV._parameter_constraints[name])
    # MKBoost's boosting parameters are the method's own declarations.
    for name, entry in Boosting._parameter_constraints.items():
        assert MKBoostClassifier._parameter_constraints[name] is entry


def test_normalize_no_longer_drifts():
    # One declaration: every estimator takes the same normalisations.
    for cls in ESTIMATORS:
        entry = cls._parameter_constraints["normalize"]
        for value in ("diagonal", "trace", None):
            assert check_param("normalize", value, entry) == value
        with pytest.raises(ValueError, match="normalize must be 'diagonal', 'trace' or None"):
            check_param("normalize", "max", entry)


# --------------------------------------------- bad values, estimator by estimator
# One bad value per parameter: (value, exception). Each must be refused by
# fit with an error whose message starts with the parameter's name.
BAD = {
    "kernels": [("grids", ValueError), ([], ValueError), (rbf(1.0), TypeError)],
    "method": [("newton", ValueError), (3, TypeError)],
    "C": [(0.0, ValueError), (-1, ValueError), ("big", TypeError), (np.nan, ValueError)],
    "loss": [("nope", ValueError), (3, TypeError)],
    "p": [(0.5, ValueError), ("2", TypeError), (np.nan, ValueError)],
    "groups": [("kernels", ValueError), (3, TypeError)],
    "elastic_net": [(1.5, ValueError), (-0.1, ValueError), (True, TypeError)],
    "tol": [(0.0, ValueError), (np.inf, ValueError), ("1e-3", TypeError)],
    "max_iter": [(0, ValueError), (2.5, TypeError), (True, TypeError)],
    "inner_tol": [(-1e-3, ValueError), ("x", TypeError)],
    "normalize": [("unit", ValueError), (1, TypeError)],
    "standardize": [("maybe", (ValueError, TypeError)), (2, TypeError)],
    "weight_threshold": [(1.0, ValueError), (-0.1, ValueError)],
    "time_limit": [(0, ValueError), ("60", TypeError)],
    "storage": [("disk", ValueError), (3, TypeError)],
    "cache_size": [(-1.0, ValueError), ("1GB", TypeError)],
    "max_memory": [(0, ValueError), ("1GB", TypeError)],
    "callback": [(3, TypeError)],
    "n_jobs": [(0, ValueError), (1.5, TypeError)],
    "client": [("tcp://localhost:8786", TypeError)],
    "multiclass": [("ovr", ValueError), (2, TypeError)],
    "verbose": [(-1, ValueError), (1.5, TypeError)],
    "epsilon": [(-1.0, ValueError)],
    "nu": [(0.0, ValueError), (1.2, ValueError), ("x", TypeError)],
    "Cs": [(0, ValueError), ([], ValueError), ("many", TypeError)],
    "variant": [("D5", ValueError), (1, TypeError)],
    "n_rounds": [(0, ValueError), (2.5, TypeError)],
    "sample_ratio": [(0.0, ValueError), (1.5, ValueError)],
    "decay": [(0.0, ValueError), (2.0, ValueError)],
    "random_state": [(-3, ValueError), ("x", TypeError)],
    "class_weight": [("balance", ValueError), ([1.0, 2.0], TypeError)],
    "probability": [("yes", TypeError), (1, TypeError)],
    "kernel_names": [("a,b", TypeError)],
    "kernel_axis": [(1, ValueError), ("last", TypeError)],
    "psd": [("fix", ValueError), (True, TypeError)],
    "formulations": [([], ValueError), ("every", TypeError), ([{"q": 2}], ValueError),
                     ([{"p": 0.5}], ValueError), ([3], TypeError)],
    "search": [("grid", ValueError), (None, TypeError)],
    "factor": [(1, ValueError), (2.5, TypeError)],
}


def _cases():
    for cls in ESTIMATORS:
        for name, entry in cls._parameter_constraints.items():
            if entry == NO_VALIDATION:
                continue
            for value, exc in BAD[name]:
                yield pytest.param(cls, name, value, exc, id=f"{cls.__name__}-{name}={value!r}")


def test_every_checked_parameter_has_bad_values_here():
    names = {n for c in ESTIMATORS for n, e in c._parameter_constraints.items()
             if e != NO_VALIDATION}
    assert names <= set(BAD), sorted(names - set(BAD))


@pytest.mark.parametrize("cls, name, value, exc", list(_cases()))
def test_a_bad_value_fails_fit_first_naming_the_parameter(cls, name, value, exc):
    est = cls(**{name: value})  # the constructor stores it as it is (scikit-learn rule)
    # Data that would fail too: the parameters are checked first, before any work.
    with pytest.raises(exc) as info:
        est.fit("not data", None)
    assert re.match(rf"{name}\b", str(info.value)), str(info.value)


def test_valid_values_of_every_kind_pass():
    est = MKLClassifier(kernels=[rbf(1.0), linear()], method="level", C=2, tol=np.float32(1e-3),
                        max_iter=np.int64(10), inner_tol=None, normalize=None,
                        standardize=np.bool_(True), weight_threshold=0, time_limit=5,
                        cache_size=0, max_memory=np.inf, callback=print, n_jobs=-1,
                        verbose=True, p=None, groups=None, elastic_net=0)
    checked = est._validate_params()
    assert checked["C"] == 2.0 and type(checked["C"]) is float
    assert checked["max_iter"] == 10 and type(checked["max_iter"]) is int
    assert checked["standardize"] is True and checked["verbose"] is True
    assert checked["elastic_net"] == 0.0 and type(checked["elastic_net"]) is float
    assert checked["max_memory"] == np.inf


def test_the_messages_say_what_the_parameter_may_be():
    X = np.random.default_rng(0).normal(size=(20, 2))
    y = np.r_[np.zeros(10), np.ones(10)]
    cases = [
        (MKLClassifier(C="big"), TypeError, r"^C must be a real number > 0\.0, got str 'big'$"),
        (MKLClassifier(inner_tol="x"), TypeError,
         r"^inner_tol must be a real number > 0\.0 or None, got str 'x'$"),
        (MKLClassifier(standardize="x"), ValueError,
         r"^standardize must be 'auto', True or False, got 'x'$"),
        (MKLRegressor(standardize="yes"), TypeError,
         r"^standardize must be True or False, got str 'yes'$"),
        (MKLClassifier(multiclass=2), TypeError, r"^multiclass must be 'ovo' or 'shared' \("),
        (MKLClassifier(verbose=-1), ValueError, r"^verbose must be >= 0 \(0: silent"),
        (MKLClassifier(callback=3), TypeError,
         r"^callback must be a callable \(taking one mklopt.Progress row\) or None"),
        (MKLClassifier(method="newton"), ValueError, r"^method: unknown method 'newton'"),
        (MKLClassifier(kernels="grids"), ValueError,
         r"^kernels must be 'all_features', 'grid' or a list of kernel specs \(or 'precomputed'"),
        (MKBoostClassifier(random_state="x"), TypeError,
         r"^random_state must be None, an integer >= 0 or a numpy.random.Generator"),
        (MKBoostClassifier(variant="D5"), ValueError,
         r"^variant must be one of 'D1', 'D2', 'S1' or 'S2', got 'D5'$"),
        (MKLRegressorCV(loss="huber"), ValueError,
         r"^loss: loss must name an oracle registered for the regression task "
         r"\('epsilon_insensitive', 'squared'\), got 'huber'$"),
    ]
    for est, exc, pattern in cases:
        with pytest.raises(exc, match=pattern):
            est.fit(X, y)


def test_a_method_class_is_refused_with_what_to_pass():
    from mklopt.methods import LevelBundle

    with pytest.raises(TypeError, match=r"^method must be a name or an instance; got the class "
                                        r"LevelBundle: pass LevelBundle\(\) instead"):
        MKLClassifier(method=LevelBundle).fit(None, None)


def test_names_registered_later_count(monkeypatch):
    # The registries are read when fit checks, not when the table was written.
    from mklopt.methods import METHODS, LevelBundle

    monkeypatch.setitem(METHODS, "late_level", LevelBundle)
    checked = MKLClassifier(method="late_level")._validate_params()
    assert checked["method"] == "late_level"


# ------------------------------------------------------ the vocabulary itself
BOUNDS = st.one_of(st.none(), st.floats(-10, 10, allow_nan=False))
CLOSED = st.sampled_from(["both", "left", "right", "neither"])


def naive_in(v, low, high, closed):
    """The interval's membership written out: NaN and infinities never belong (finite bounds)."""
    if not math.isfinite(v):
        return False
    lo_ok = low is None or (v > low if closed in ("right", "neither") else v >= low)
    hi_ok = high is None or (v < high if closed in ("left", "neither") else v <= high)
    return lo_ok and hi_ok


@given(low=BOUNDS, high=BOUNDS, closed=CLOSED,
       v=st.one_of(st.floats(-20, 20), st.sampled_from([math.inf, -math.inf, math.nan])))
def test_interval_of_reals_agrees_with_its_definition(low, high, closed, v):
    c = Interval(Real, low, high, closed=closed)
    assert c.accepts(v) == naive_in(v, low, high, closed)
    if naive_in(v, low, high, closed):
        out = check_param("x", v, [c])
        assert out == v and type(out) is float
    else:
        with pytest.raises(ValueError, match=r"^x must be "):
            check_param("x", v, [c])


@given(low=st.one_of(st.none(), st.integers(-5, 5)), high=st.one_of(st.none(), st.integers(-5, 5)),
       v=st.integers(-10, 10))
def test_interval_of_integers_agrees_with_its_definition(low, high, v):
    c = Interval(Integral, low, high)
    ok = (low is None or v >= low) and (high is None or v <= high)
    assert c.accepts(v) == ok
    assert c.accepts(np.int64(v)) == ok
    assert not c.accepts(float(v))  # a float is not an integer, even a whole one
    with pytest.raises(TypeError, match=r"^x must be an integer"):
        check_param("x", float(v), [c])


@given(v=st.one_of(st.text(max_size=5), st.binary(max_size=3), st.lists(st.integers(), max_size=2),
                   st.booleans(), st.complex_numbers()))
def test_a_value_of_no_kind_the_parameter_takes_is_a_type_error(v):
    rules = [Interval(Real, 0.0, None), None]
    with pytest.raises(TypeError, match=r"^x must be a real number >= 0\.0 or None, got "):
        check_param("x", v, rules)


def test_infinite_bounds_take_infinity_only_when_closed():
    assert Interval(Real, 1.0, math.inf, closed="right").accepts(math.inf)
    assert not Interval(Real, 1.0, math.inf, closed="neither").accepts(math.inf)
    assert not Interval(Real, 1.0, None).accepts(math.inf)
    assert str(Interval(Real, 1.0, math.inf, closed="right")) == "a real number in (1.0, inf]"


def test_options_booleans_and_none():
    assert check_param("s", "auto", [Options(("auto",)), "boolean"]) == "auto"
    assert check_param("s", np.bool_(False), [Options(("auto",)), "boolean"]) is False
    # True == 1, but 1 is not the option True, nor a boolean
    with pytest.raises(TypeError):
        check_param("s", 1, [Options(("auto",)), Boolean()])
    assert describe([Options(("a", "b", "c", "d"))]) == "one of 'a', 'b', 'c' or 'd'"
    assert describe([Options(("a", "b", "c", "d")), InstanceOf(list)]) == (
        "one of 'a', 'b', 'c', 'd' or a list")


def test_instances_callables_methods_registries_and_checks():
    assert check_param("f", len, [Callable()]) is len
    with pytest.raises(TypeError, match="f must be a callable"):
        check_param("f", 3, [Callable()])

    class Walker:
        def walk(self):
            pass

    assert HasMethods("walk").accepts(Walker()) and not HasMethods("walk").accepts(Walker)
    names = {"a": 1}

    def lookup(name):
        if name not in names:
            raise ValueError(f"unknown {name!r}; known: {sorted(names)}")
        return names[name]

    reg = Registered(lookup, "a known name")
    assert check_param("k", "a", [reg]) == "a"
    with pytest.raises(ValueError, match=r"^k: unknown 'b'; known: \['a'\]"):
        check_param("k", "b", [reg])
    names["b"] = 2  # read live
    assert check_param("k", "b", [reg]) == "b"

    def positive(value, name):
        if value <= 0:
            raise ValueError(f"{name} must be positive")
        return 2 * value

    assert check_param("n", 3, [Check(positive, "positive")]) == 3
    assert check_param("n", 3, [Check(positive, "positive", converts=True)]) == 6
    with pytest.raises(ValueError, match="^n must be positive"):
        check_param("n", 0, [Check(positive, "positive")])


def test_validate_params_refuses_an_undeclared_parameter():
    with pytest.raises(KeyError, match="Thing declares no constraints for the parameter 'b'"):
        validate_params({"a": [None]}, {"a": None, "b": 1}, "Thing")
    assert validate_params({"a": NO_VALIDATION}, {"a": object}, "Thing") == {"a": object}
