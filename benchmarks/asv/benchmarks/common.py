"""What every suite shares: the profile, the data, the methods and the fit mixin.

The profile comes from the environment variable ``MKLOPT_ASV_PROFILE``:
``regular`` (the default: the level-method paper's sets and kernel grid at full
size) or ``quick`` (a few dozen points and features, so that the whole suite
runs in a few minutes: the CI smoke run, which checks that no benchmark
errors and asserts nothing about times). Like scikit-learn's
``asv_benchmarks/config.json`` profiles, only sizes change between them,
never what is measured.

Only public mklopt names are imported; the method list and the paper's
kernel bank are :mod:`mklopt.bench.runs`' (``dual_methods``,
``protocol_bank``), which ``mklopt bench`` uses too.
"""

import itertools
import os
from abc import ABC, abstractmethod
from functools import cache

import numpy as np

from mklopt import datasets, solve
from mklopt.bench.runs import make_method
from mklopt.oracles import SVMDual
from mklopt.stopping import DualityGap, MaxIter

PROFILE = os.environ.get("MKLOPT_ASV_PROFILE", "regular")

_PROFILES = {
    # n_train: training points (None: the paper's random half);
    # n_features: features the per-feature kernels use (None: all of them)
    "regular": dict(datasets=("ionosphere", "sonar"), n_train=None, n_features=None,
                    multiclass_n=600, scale_n=2000, cv_Cs=4, cv_folds=3, dask_n=None),
    "quick": dict(datasets=("sonar",), n_train=60, n_features=4,
                  multiclass_n=90, scale_n=300, cv_Cs=2, cv_folds=2, dask_n=40),
}
if PROFILE not in _PROFILES:
    raise ValueError(f"MKLOPT_ASV_PROFILE must be one of {sorted(_PROFILES)}, got {PROFILE!r}")
CONFIG = _PROFILES[PROFILE]

#: The level-method paper's protocol (``mklopt bench --protocol level2008``).
C_PAPER, TOL_PAPER, MAX_ITER_PAPER, INNER_TOL_PAPER = 100.0, 1e-2, 500, 1e-4


@cache
def split(name, n_train=None, seed=0):
    """A random half split, standardised on its training part, cut to ``n_train`` points."""
    X, y = datasets.load(name)
    X_tr, X_te, y_tr, y_te = datasets.split(X, y, train_fraction=0.5, seed=seed)
    if n_train is not None and n_train < len(y_tr):
        keep = np.random.default_rng(seed).permutation(len(y_tr))[:n_train]
        X_tr, y_tr = X_tr[keep], y_tr[keep]
    return X_tr, X_te, y_tr, y_te


def paper_split(name):
    """:func:`split` under the profile, with only the features its grid uses."""
    X_tr, X_te, y_tr, y_te = split(name, CONFIG["n_train"])
    d = CONFIG["n_features"] or X_tr.shape[1]
    return X_tr[:, :d], X_te[:, :d], y_tr, y_te


def paper_solve(bank, y, key):
    """One run of method ``key`` under the paper's C, tolerances and iteration cap."""
    oracle = SVMDual(bank, y, C=C_PAPER, tol=INNER_TOL_PAPER)
    return solve(oracle, make_method(key), stop=DualityGap(TOL_PAPER) | MaxIter(MAX_ITER_PAPER))


def test_accuracy(bank, res, y_tr, X_te, y_te):
    """Accuracy on the test points of the SVM of a :func:`mklopt.solve` result."""
    sv = np.flatnonzero(res.alpha > 0)
    decision = bank.combine_cross(X_te, res.weights, columns=sv) @ (res.alpha[sv] * y_tr[sv])
    return float(np.mean(np.where(decision + res.bias >= 0, 1, -1) == y_te))


class Fit(ABC):
    """Mixin of a fit benchmark (scikit-learn's ``Estimator`` mixin, for MKL).

    A suite sets ``params``/``param_names`` and defines ``make(*params) ->
    (fit, metrics)``: ``fit()`` runs the timed work and returns what it
    fitted, ``metrics(fitted)`` a dict with ``score``, ``oracle_calls`` and
    ``gap``. Each suite's ``setup_cache`` returns :meth:`fit_all` (asv keys a
    cache by the line that defines it: a shared one would be shared by every
    suite), which fits every combination once for the ``track_*``
    benchmarks. The data and kernels are made on the first fit, which asv
    runs untimed (``warmup_time``; numba loads there) and ``peakmem_fit``
    counts.
    """

    number = 1
    repeat = (2, 5, 60.0)
    warmup_time = 0.01
    timeout = 1200

    @abstractmethod
    def make(self, *params):
        """``(fit, metrics)`` for one parameter combination."""

    def fit_all(self):
        out = {}
        for combo in itertools.product(*self.params):
            fit, metrics = self.make(*combo)
            out[combo] = {k: float(v) for k, v in metrics(fit()).items()}
        return out

    def setup(self, cache, *params):
        self.params_now, self._fit = params, None

    def fit(self):
        """Fit once; the data and kernels are made on the first call (asv's warm-up call)."""
        if self._fit is None:
            self._fit = self.make(*self.params_now)[0]
        return self._fit()

    def time_fit(self, cache, *params):
        self.fit()

    def peakmem_fit(self, cache, *params):
        self.fit()

    def track_test_score(self, cache, *params):
        return cache[params]["score"]

    def track_oracle_calls(self, cache, *params):
        return cache[params]["oracle_calls"]

    def track_gap(self, cache, *params):
        return cache[params]["gap"]

    track_test_score.unit = "score"
    track_oracle_calls.unit = "oracle calls"
    track_gap.unit = "certified relative gap"


def estimator_metrics(X_te, y_te):
    """``metrics`` of an estimator: test score, oracle calls (all problems), worst gap."""

    def metrics(est):
        return dict(score=est.score(X_te, y_te), oracle_calls=np.sum(est.n_oracle_calls_),
                    gap=np.max(est.gap_))

    return metrics
