"""Where one-vs-one problems fitted one by one start (MKLClassifier, precomputed kernels)."""

from itertools import combinations

import numpy as np
import pytest

from mklopt import MKLClassifier
from mklopt.estimators._ovo import mean_weights, relatives, star_parents, waves
from mklopt.kernels import rbf

SPECS = [rbf(0.1), rbf(1.0), rbf(10.0)]


class _M:
    def __init__(self, w):
        self.weights = np.asarray(w, dtype=np.float64)


def test_relatives_are_the_parent_then_fitted_class_mates():
    pairs = np.array(list(combinations(range(4), 2)))  # (0,1) (0,2) (0,3) (1,2) (1,3) (2,3)
    parents = star_parents(pairs)
    models = [_M([k, 1.0]) for k in range(len(pairs))]
    models[4] = models[5] = None  # (1, 3) and (2, 3) not fitted yet
    # (2, 3): parent (0, 3), then (0, 2) and (1, 2) (class 2); (1, 3) is not fitted.
    done = [m is not None for m in models]
    got = relatives(pairs, parents, done, 5)
    assert got == [2, 1, 3]
    assert relatives(pairs, parents, done, 0) == []  # the root
    np.testing.assert_allclose(mean_weights([models[q] for q in got]), [2.0, 1.0])


def _four_classes(n=160, seed=0):
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(4), n // 4)
    X = rng.normal(size=(n, 3)) + 1.5 * np.eye(4, 3)[y]
    return X, y


def test_each_pair_starts_from_the_mean_of_earlier_waves_sharing_a_class(monkeypatch):
    import mklopt.estimators.mkl as mkl

    real = mkl.solve
    seen = []

    def spy(oracle, method, *args, initial=None, **kw):
        res = real(oracle, method, *args, initial=initial, **kw)
        seen.append((None if initial is None else np.array(initial), res.weights))
        return res

    monkeypatch.setattr(mkl, "solve", spy)
    X, y = _four_classes()
    clf = MKLClassifier(kernels=SPECS, C=10.0).fit(X, y)
    pairs = clf.pairs_
    parents = star_parents(pairs)
    order = [p for wave in waves(parents, len(pairs)) for p in wave]
    # the solves ran wave by wave (pairs of a wave by size, equal here: in order)
    by_pair = {}
    for (initial, weights), p in zip(seen, order, strict=True):
        by_pair[p] = (initial, np.asarray(weights))
    wave_of = {p: d for d, wave in enumerate(waves(parents, len(pairs))) for p in wave}
    for p, (initial, _) in by_pair.items():
        if parents[p] < 0:
            assert initial is None
            continue
        mates = [q for q in range(len(pairs)) if wave_of[q] < wave_of[p]
                 and set(pairs[q]) & set(pairs[p])]
        assert parents[p] in mates
        expected = np.mean([by_pair[q][1] for q in mates], axis=0)
        np.testing.assert_allclose(initial, expected, rtol=0, atol=1e-14)


@pytest.mark.parametrize("n_jobs", [None, 2])
def test_starts_do_not_change_what_is_certified(n_jobs):
    X, y = _four_classes(seed=1)
    clf = MKLClassifier(kernels=SPECS, C=10.0, n_jobs=n_jobs).fit(X, y)
    assert np.all(clf.converged_)
    assert all(r.rel_gap <= 1e-2 for r in clf.result_)
