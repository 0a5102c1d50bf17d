"""Every default against SVC: raw features, five seeded half splits, same run.

``MKLClassifier()`` must reach the mean accuracy of
``make_pipeline(StandardScaler(), SVC())`` less 0.03, ``MKBoostClassifier()``
less 0.05, on each bundled binary set and on satellite (six classes).
"""

import warnings

import numpy as np
import pytest
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from mklopt import MKBoostClassifier, MKLClassifier, datasets

SPLITS = 5
# The six small binary sets; letter and shuttle (10^4 rows and more per half)
# are left to ``mklopt bench --protocol scale``.
SMALL_BINARY = ("ionosphere", "sonar", "pima", "breast", "vote", "wdbc")


def _half_splits(name):
    X, y = datasets.load(name)
    for seed in range(SPLITS):
        rng = np.random.default_rng(seed)
        train = np.zeros(y.shape[0], dtype=bool)
        for c in np.unique(y):  # stratified: half of every class
            rows = rng.permutation(np.flatnonzero(y == c))
            train[rows[: rows.shape[0] // 2]] = True
        yield seed, X[train], X[~train], y[train], y[~train]


@pytest.mark.slow
@pytest.mark.parametrize("name", [*SMALL_BINARY, "satellite"])
def test_defaults_reach_svc(name):
    acc = {"svc": [], "mkl": [], "mkboost": []}
    for seed, X_tr, X_te, y_tr, y_te in _half_splits(name):
        models = {
            "svc": make_pipeline(StandardScaler(), SVC()),
            "mkl": MKLClassifier(),
            "mkboost": MKBoostClassifier(random_state=seed),
        }
        for key, est in models.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # a pair at max_iter still predicts
                est.fit(X_tr, y_tr)
            acc[key].append(np.mean(est.predict(X_te) == y_te))
    mean = {k: float(np.mean(v)) for k, v in acc.items()}
    assert mean["mkl"] >= mean["svc"] - 0.03, mean
    assert mean["mkboost"] >= mean["svc"] - 0.05, mean
