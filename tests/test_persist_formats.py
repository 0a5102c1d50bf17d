"""Model files written before the estimators saved themselves still load and predict the same.

The fixtures in ``tests/data/format_*.npz`` were written by
``tests/data/make_format_fixtures.py`` with the code of the previous layout
(one estimator kind each: binary, standardised, multiclass, shared weights,
feature maps, precomputed kernels, regression, one-class). Each must load,
keep its parameters, and predict as it did when saved (to 1e-12) and as the same estimator fitted
afresh today (to 10 % of the decision scale: the fit may take other steps,
on another BLAS or under a changed default of its method, to a model
equally certified; see ``_close_refit``).
"""

import importlib.util
import json
import pathlib
import warnings

import numpy as np
import pytest

from mklopt.persist import load_model

DATA = pathlib.Path(__file__).resolve().parent / "data"
_spec = importlib.util.spec_from_file_location("_make_fixtures", DATA / "make_format_fixtures.py")
_make = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_make)
KINDS = tuple(_make.problems())


@pytest.fixture(scope="module")
def problems():
    return _make.problems()


def _close(a, b):
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def _same_predictions(a, b):
    if np.asarray(b).dtype.kind == "f":  # regression: values, rounded by this BLAS
        _close(a, b)
    else:
        np.testing.assert_array_equal(a, b)


def _close_refit(a, b):
    # A fit today may take other steps than the one that wrote the file
    # (another BLAS's rounding; a changed default of the method, such as
    # Level's lambda, 0.7 then and 0.6 now), to a model certified to the same
    # relative gap. The certificate bounds the objective, not the decisions:
    # on these fixtures a fit at the default tol = 1e-2 is up to 5 % of the
    # decision scale away from the exact optimum's (binary_scaled: 0.053;
    # the others 0.3-1.3 %), and the files' fits and today's differ by up to
    # 6 %. Halving C moves them by 20-42 % where C binds. The parameters
    # themselves are compared exactly below; this checks that the loaded
    # model is that estimator's model, to 10 % of its scale.
    b = np.asarray(b, dtype=float)
    np.testing.assert_allclose(a, b, rtol=0, atol=0.1 * max(1.0, float(np.abs(b).max())))


@pytest.mark.parametrize("kind", KINDS)
def test_old_file_predicts_as_recorded_and_as_a_fresh_fit(kind, problems):
    loaded, meta = load_model(DATA / f"format_{kind}.npz")
    want = np.load(DATA / f"format_{kind}_expected.npz")
    est, X, y, X_test = problems[kind]
    np.testing.assert_array_equal(want["X_test"], X_test)
    assert type(loaded) is type(est) and meta["label"] == "target"
    got = _make.outputs(loaded, X_test)
    _same_predictions(got["predict"], want["predict"])
    if "decision" in want:
        _close(got["decision"], want["decision"])

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fresh = est.fit(X) if y is None else est.fit(X, y)
    now = _make.outputs(fresh, X_test)
    if hasattr(fresh, "pairwise_decision_function"):
        # One-vs-one: the pairs' decision values. The decision function
        # counts votes, so a test point near one pair's boundary moves it by
        # a whole vote (the precomputed fixture's fourth point, 0.003 from a
        # boundary).
        _close_refit(loaded.pairwise_decision_function(X_test),
                     fresh.pairwise_decision_function(X_test))
    elif "decision" in now:  # (labels follow from the decision values up to ties)
        _close_refit(got["decision"], now["decision"])
    elif np.asarray(now["predict"]).dtype.kind == "f":
        _close_refit(got["predict"], now["predict"])
    else:
        np.testing.assert_array_equal(got["predict"], now["predict"])
    # The saved parameters are the fitted estimator's (callback and the
    # runtime ones aside); specs come back as the list fitted on.
    keep = {k: v for k, v in fresh.get_params(deep=False).items()
            if k not in ("callback", "client", "n_jobs")}
    back = loaded.get_params(deep=False)
    for name, value in keep.items():
        if name == "kernels" and not isinstance(value, str):
            assert back[name] == list(fresh.kernel_specs_)
        else:
            assert back[name] == value, name
    # Weights are certified less tightly still: on the binary fixture the
    # exact optimum has (0.948, 0.052) on two kernels, the file's fit
    # (0.946, 0.054) and today's (0.957, 0.043). Where the objective is flat
    # they move further at the default gaps: the precomputed elastic-net
    # fixture by 0.074 (of weights up to 0.93), the mirror fixture's effective
    # weights (groups of kernels, sums 1 / gamma_j up to 7) by 0.64 at its
    # tol = 0.05, both 8-10 % of their scale.
    w_now = np.atleast_2d(fresh.weights_)
    np.testing.assert_allclose(np.atleast_2d(loaded.weights_), w_now, rtol=0,
                               atol=0.15 * max(1.0, float(np.abs(w_now).max())))
    assert loaded.n_features_in_ == fresh.n_features_in_
    assert loaded.kernel_specs_ == fresh.kernel_specs_


@pytest.mark.parametrize("kind", KINDS)
def test_old_file_keeps_its_format_version(kind):
    with np.load(DATA / f"format_{kind}.npz", allow_pickle=False) as z:
        version = json.loads(str(z["metadata"]))["format_version"]
    _, meta = load_model(DATA / f"format_{kind}.npz")
    assert meta["format_version"] == version
