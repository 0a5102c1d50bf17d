"""Elastic-net MKL as an estimator option (``elastic_net=lam``).

The two ends of the path are known models (L1-MKL at ``lam = 0``, the SVM on
the sum kernel at ``lam = 1``); in between the fit is certified by its own
duality gap and checked against the conic optimum (cvxpy + Clarabel) of the
same kernels.
"""

import numpy as np
import pytest

from mklopt import MKLClassifier, MKLOneClass, MKLRegressor, datasets
from mklopt.domains import ElasticNet
from mklopt.kernels import KernelBank, linear, poly, rbf
from mklopt.methods.analytic_lp import AnalyticElasticNet
from mklopt.persist import load_model, save_model
from tests.methods import _enet_reference as R

SPECS = [rbf(2.0), rbf(8.0), linear(), poly(2)]
TOL = 1e-6


@pytest.fixture(scope="module")
def data():
    X, y = datasets.load("sonar")
    idx = np.random.default_rng(0).choice(len(y), 80, replace=False)
    X, y = X[idx], y[idx]
    # standardised here, so the fits can take the features as they are
    return (X - X.mean(0)) / X.std(0), y


def fit(data, **kw):
    X, y = data
    params = dict(kernels=SPECS, C=1.0, tol=TOL, standardize=False)
    params.update(kw)
    return MKLClassifier(**params).fit(X, y)


def test_lam_zero_gives_the_l1_weights(data):
    enet = fit(data, elastic_net=0.0)
    l1 = fit(data, method="level")
    assert enet.converged_ and l1.converged_
    # L1-MKL's weights are unique here (one dominant pair of kernels); at a
    # relative gap of 1e-6 both runs sit within ~1e-3 of them
    np.testing.assert_allclose(enet.weights_, l1.weights_, atol=2e-3)
    r_e, r_l = enet.models_[0].result, l1.models_[0].result
    assert abs(r_e.value - r_l.value) <= r_e.gap + r_l.gap + 1e-9 * r_l.value


def test_lam_one_is_the_sum_kernel_model(data):
    X, _ = data
    enet = fit(data, elastic_net=1.0)
    box = fit(data, method="lp", p=np.inf)
    np.testing.assert_array_equal(enet.weights_, np.ones(len(SPECS)))
    np.testing.assert_allclose(enet.decision_function(X), box.decision_function(X),
                               rtol=1e-9, atol=1e-9)
    assert enet.models_[0].result.gap == pytest.approx(0.0, abs=1e-12)


def _kernels(X):
    # the estimator's kernels: the specs, unit mean diagonal (normalize="diagonal")
    return np.array(KernelBank.from_specs(X, SPECS, storage="dense", normalize="diagonal").K)


@pytest.mark.parametrize("method", ["auto", "elastic_net", "spg"])
@pytest.mark.parametrize("lam", [0.25, 0.7])
def test_intermediate_lam_is_certified_against_the_conic_optimum(data, lam, method):
    X, y = data
    clf = fit(data, elastic_net=lam, method=method)
    res = clf.models_[0].result
    assert clf.converged_ and 0.0 <= res.rel_gap <= TOL, (res.reason, res.rel_gap)
    assert ElasticNet(len(SPECS), lam).contains(clf.weights_, tol=1e-9)
    # the labels as the binary problem sees them (J* does not depend on their sign)
    exact = R.exact_svm(_kernels(X), np.where(y == clf.classes_[1], 1.0, -1.0), 1.0, lam)
    slack = 1e-5 * abs(exact)  # the SMO tolerance and Clarabel's
    assert res.lower <= exact + slack
    assert exact - slack <= res.value <= exact + res.gap + slack


def test_objective_moves_between_the_ends(data):
    values = [fit(data, elastic_net=lam).models_[0].result.value for lam in (0.0, 0.5, 1.0)]
    # W grows with lam, so the optimum cannot increase
    assert values[0] >= values[1] >= values[2]


@pytest.mark.parametrize(
    "kw,err,match",
    [
        (dict(elastic_net=1.5), ValueError, "elastic_net must be <= 1"),
        (dict(elastic_net=-0.1), ValueError, "elastic_net must be >= 0"),
        (dict(elastic_net="0.5"), TypeError, "elastic_net must be a real number"),
        (dict(elastic_net=True), TypeError, "elastic_net"),
        (dict(method="level", elastic_net=0.5), ValueError, "'elastic_net', 'spg'"),
        (dict(method="mirror", elastic_net=0.5), ValueError, "method='mirror' solves another"),
        (dict(method="elastic_net"), ValueError, "elastic_net is required"),
        (dict(method="lp", p=2.0, elastic_net=0.5), ValueError, "'elastic_net', 'spg'"),
        (dict(elastic_net=0.5, p=2.0), ValueError, "p=2.0 is only used by Lp-MKL"),
        (dict(method=AnalyticElasticNet(0.5), elastic_net=0.5), ValueError,
         "set it on the instance"),
    ],
)
def test_bad_elastic_net_settings_are_refused_before_any_kernel(data, kw, err, match):
    X, y = data
    # kernels on a feature that does not exist: reaching them would fail differently
    with pytest.raises(err, match=match):
        MKLClassifier(kernels=[rbf(1.0, features=[10_000])], **kw).fit(X, y)


def test_an_instance_runs_its_own_lam(data):
    a = fit(data, method=AnalyticElasticNet(0.5))
    b = fit(data, elastic_net=0.5)
    np.testing.assert_allclose(a.weights_, b.weights_, rtol=1e-12)


def test_save_and_load_keep_elastic_net(data, tmp_path):
    X, _ = data
    clf = fit(data, elastic_net=0.4, tol=1e-3)
    path = tmp_path / "enet.npz"
    save_model(clf, path)
    back, meta = load_model(path)
    assert meta["params"]["elastic_net"] == 0.4
    assert back.get_params()["elastic_net"] == 0.4
    assert back.get_params()["method"] == "auto"
    np.testing.assert_allclose(back.decision_function(X), clf.decision_function(X),
                               rtol=1e-12, atol=1e-12)
    # refitting the loaded estimator solves the same formulation
    refit = back.fit(*data)
    np.testing.assert_allclose(refit.weights_, clf.weights_, rtol=1e-9)


def test_files_without_elastic_net_do_not_name_it(data, tmp_path):
    import json

    clf = fit(data, method="lp", p=2.0, tol=1e-3)
    path = tmp_path / "lp.npz"
    save_model(clf, path)
    with np.load(path) as a:
        meta = json.loads(str(a["metadata"]))
    assert "elastic_net" not in meta["params"]
    assert load_model(path)[0].get_params()["elastic_net"] is None


def test_regressor_and_one_class_take_elastic_net(data, tmp_path):
    X, y = data
    t = X[:, 0] - 0.5 * X[:, 1]
    common = dict(kernels=SPECS, tol=1e-4, standardize=False)
    for est in (MKLRegressor(elastic_net=0.5, **common).fit(X[:, 2:], t),
                MKLOneClass(elastic_net=0.5, **common).fit(X)):
        res = est.result_
        assert est.converged_ and res.rel_gap <= 1e-4
        assert ElasticNet(len(SPECS), 0.5).contains(est.weights_, tol=1e-9)
        path = tmp_path / f"{type(est).__name__}.npz"
        save_model(est, path)
        assert load_model(path)[0].get_params()["elastic_net"] == 0.5
    with pytest.raises(ValueError, match="'elastic_net', 'spg'"):
        MKLRegressor(method="level", elastic_net=0.5, **common).fit(X[:, 2:], t)


@pytest.mark.parametrize("multiclass", ["ovo", "shared"])
def test_three_classes_run_the_elastic_net_per_pair_or_shared(data, multiclass):
    X, _ = data
    y = np.array(["a", "b", "c"])[np.arange(len(X)) % 3]
    clf = MKLClassifier(kernels=SPECS, elastic_net=0.5, multiclass=multiclass, tol=1e-3,
                        standardize=False).fit(X, y)
    W = np.atleast_2d(clf.weights_)
    assert np.all(clf.converged_)
    dom = ElasticNet(len(SPECS), 0.5)
    assert all(dom.contains(w, tol=1e-9) for w in W)
    # the optimum is on the boundary sum_k beta_k(w) = 1 (J falls as weights grow)
    assert all(dom.beta(w).sum() == pytest.approx(1.0, abs=1e-9) for w in W)
