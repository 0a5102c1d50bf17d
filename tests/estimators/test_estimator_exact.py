"""MKLClassifier with a tight tol runs Level chained with the exact step and is exact."""

import numpy as np

from mklopt import KernelBank, MKLClassifier, datasets
from mklopt.domains import Simplex
from mklopt.kernels import linear, poly, rbf
from tests._cvx_reference import exact_optimum

SPECS = [rbf(0.5), rbf(2.0), rbf(8.0), linear(), poly(2), rbf(1.0, features=[0])]


def _data(n=60):
    X, y = datasets.load("sonar")
    rng = np.random.default_rng(3)
    idx = rng.choice(len(y), size=n, replace=False)
    return X[idx], y[idx]


def test_tight_tol_picks_the_chain_and_reaches_the_cvxpy_optimum():
    X, y = _data()
    # The reference below is the bank as given: raw features, unit trace.
    clf = MKLClassifier(kernels=SPECS, C=100.0, tol=1e-6, standardize=False,
                        normalize="trace").fit(X, y)
    res = clf.result_
    assert res.extra["stages"] == ["LevelBundle", "ActiveSet"]
    assert res.converged and res.rel_gap <= 1e-6, (res.reason, res.rel_gap)
    bank = KernelBank.from_specs(X, SPECS, normalize="trace")
    m, n = bank.n_kernels, len(y)
    K = np.asarray(bank.blocks(np.arange(m, dtype=np.int64), np.arange(n, dtype=np.int64)))
    yy = np.where(y == clf.classes_[1], 1.0, -1.0)
    exact = exact_optimum(K, yy, 100.0, Simplex(m))
    assert abs(res.value - exact) <= res.gap + 1e-6 * abs(exact)


def test_loose_tol_keeps_the_level_method():
    X, y = _data()
    clf = MKLClassifier(kernels=SPECS, C=100.0, tol=1e-2).fit(X, y)
    assert "stages" not in clf.result_.extra
