"""groups._pairs: distances and inner products of one point to a chunk, against a NumPy twin."""

import numpy as np
import pytest

from mklopt._jit import groups


def _twin(xa, XBT, feat_idx, b0, b1):
    """The sums in feature order, as _pairs adds them (so the same bits)."""
    d2 = np.zeros(b1 - b0)
    g2 = np.zeros(b1 - b0)
    for f in feat_idx:
        col = XBT[f, b0:b1]
        d2 = d2 + (xa[f] - col) * (xa[f] - col)
        g2 = g2 + xa[f] * col
    return d2, g2


@pytest.mark.parametrize("fn", ["jit", "py"])
def test_pairs_match_the_twin_bit_for_bit_with_either_or_both(fn):
    rng = np.random.default_rng(3)
    X = rng.standard_normal((40, 7))
    XT = np.ascontiguousarray(X.T)
    feat_idx = np.array([0, 2, 3, 6, 1, 4, 5], dtype=np.int64)
    pairs = groups._pairs if fn == "jit" else groups._pairs.py_func
    f0, f1, b0, b1 = 1, 6, 5, 33  # a group of five features, a chunk of columns
    want_d, want_g = _twin(X[4], XT, feat_idx[f0:f1], b0, b1)
    for need_d, need_g in ((True, True), (True, False), (False, True)):
        d2 = np.full(64, np.nan)
        g2 = np.full(64, np.nan)
        pairs(X[4], XT, feat_idx, f0, f1, b0, b1, need_d, need_g, d2, g2)
        L = b1 - b0
        if need_d:
            assert np.array_equal(d2[:L], want_d)
        if need_g:
            assert np.array_equal(g2[:L], want_g)
        assert np.isnan(d2[L:]).all() and np.isnan(g2[L:]).all()  # nothing past the chunk
        if not need_g:
            assert np.isnan(g2).all()
        if not need_d:
            assert np.isnan(d2).all()
