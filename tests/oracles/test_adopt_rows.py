"""Combined rows reused at the same weights, within an oracle and along a C path.

:class:`~mklopt.oracles._solver.DualSolver` keeps the rows of ``K(w)`` it
computed (the whole matrix, the lazily combined rows, or the block path's
cache) while the weights stay the same; an oracle of the same problem at
another ``C`` can take them over (``adopt_rows``), as each point of a C path
does from its predecessor. The rows do not depend on ``C``, so every answer
must be the fresh oracle's, bit for bit, and rows of other weights or of
another problem must never be read.
"""

import numpy as np
import pytest

from mklopt import KernelBank
from mklopt.estimators import _path
from mklopt.kernels import linear, poly, rbf
from mklopt.methods import get_method
from mklopt.oracles import CompositeOracle, SVMDual
from mklopt.stopping import DualityGap, MaxIter

SPECS = [rbf(0.5), rbf(2.0), poly(2), linear(), linear(features=[0])]

BANKS = {
    "dense": dict(storage="dense"),
    "products": dict(storage="products"),
    "on_the_fly": dict(storage="on_the_fly"),
    # A tiny row cache: the block path.
    "row_blocks": dict(storage="on_the_fly", cache_size=0.01),
}


def _data(n=60, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=n) > 0, 1.0, -1.0)
    return X, y


def _view(which, X, rows=None):
    bank = KernelBank.from_specs(X, SPECS, **BANKS[which])
    return bank if rows is None else bank.view(rows)


def _same(a, b):
    assert np.array_equal(a.alpha, b.alpha)
    assert a.value == b.value
    assert np.array_equal(a.q, b.q)


W1 = np.array([0.4, 0.1, 0.2, 0.3, 0.0])
W2 = np.array([0.1, 0.5, 0.0, 0.2, 0.2])


@pytest.mark.parametrize("which", sorted(BANKS))
@pytest.mark.parametrize("viewed", [False, True])
def test_adopted_rows_give_the_fresh_answers(which, viewed):
    X, y = _data()
    rows = np.arange(5, 55)[::-1].copy() if viewed else None
    bank = _view(which, X, rows)
    yy = y if rows is None else y[rows]
    old = SVMDual(bank, yy, C=1.0, tol=1e-6)
    first = old(W1)
    new = SVMDual(bank, yy, C=4.0, tol=1e-6)
    assert new.adopt_rows(old)
    assert new._solver._holds(W1) and old._solver._w is None
    fresh = SVMDual(bank, yy, C=4.0, tol=1e-6)
    # At the adopted weights (warm from the other C's answer), at others,
    # and back: each answer is the fresh oracle's.
    for w, warm in ((W1, first.alpha), (W2, None), (W2, None), (W1, None)):
        _same(new(w, warm_start=warm), fresh(w, warm_start=warm))
    # The oracle that gave its rows away still answers as a fresh one does.
    _same(old(W1), SVMDual(bank, yy, C=1.0, tol=1e-6)(W1))


@pytest.mark.parametrize("which", ["dense", "products"])
def test_a_second_call_at_the_same_weights_reads_the_held_rows(which):
    X, y = _data()
    oracle = SVMDual(_view(which, X), y, C=2.0, tol=1e-6)
    a = oracle(W1)
    held = oracle._solver._filled
    n_held = 0 if held is None else int(np.count_nonzero(held))
    b = oracle(W1, warm_start=a.alpha)
    if held is not None:
        # None of the rows combined for the first call was dropped.
        assert n_held > 0 and np.count_nonzero(oracle._solver._filled) >= n_held
    _same(b, SVMDual(_view(which, X), y, C=2.0, tol=1e-6)(W1, warm_start=a.alpha))


def test_rows_of_another_problem_or_storage_are_refused():
    X, y = _data()
    bank = KernelBank.from_specs(X, SPECS, storage="products")
    a_rows, b_rows = np.arange(0, 40), np.arange(20, 60)
    old = SVMDual(bank.view(a_rows), y[a_rows], C=1.0)
    old(W1)
    # Another view of the same size, the same rows on another bank, another path.
    other_view = SVMDual(bank.view(b_rows), y[b_rows], C=1.0)
    other_bank = SVMDual(KernelBank.from_specs(X, SPECS, storage="products").view(a_rows),
                         y[a_rows], C=1.0)
    blocks = SVMDual(KernelBank.from_specs(X, SPECS, storage="on_the_fly", cache_size=0.001)
                     .view(a_rows), y[a_rows], C=1.0)
    for new in (other_view, other_bank, blocks):
        assert not new.adopt_rows(old)
        assert new._solver._w is None
    assert old._solver._holds(W1)
    # Nothing held (never called): nothing taken.
    assert not SVMDual(bank.view(a_rows), y[a_rows], C=2.0).adopt_rows(
        SVMDual(bank.view(a_rows), y[a_rows], C=1.0))


def _points(monkeypatch, adopt, make, Cs=(0.1, 1.0, 10.0, 100.0)):
    if not adopt:
        monkeypatch.setattr(SVMDual, "adopt_rows", lambda self, other: False)
        monkeypatch.setattr(CompositeOracle, "adopt_rows", lambda self, other: False)

    def stop():
        return DualityGap(1e-3) | MaxIter(60)

    pts = _path.c_path(None, None, Cs, lambda: get_method("level")(), stop, 1e-5,
                       make_oracle=make)
    monkeypatch.undo()
    return pts


@pytest.mark.parametrize("which", ["dense", "products", "row_blocks"])
def test_a_c_path_is_the_same_with_and_without_the_adopted_rows(monkeypatch, which):
    X, y = _data(80, seed=3)
    bank = _view(which, X, np.arange(80))

    def make(_, C, tol):
        return _path._recording(SVMDual)(bank, y, C=C, tol=tol)

    taken = []
    adopt = SVMDual.adopt_rows
    monkeypatch.setattr(SVMDual, "adopt_rows",
                        lambda self, other: taken.append(adopt(self, other)) or taken[-1])
    with_rows = _points(monkeypatch, True, make)
    # Every point after the first took its predecessor's rows.
    assert taken == [True] * (len(with_rows) - 1)
    without = _points(monkeypatch, False, make)
    assert len(with_rows) == len(without)
    for p, q in zip(with_rows, without, strict=True):
        assert np.array_equal(p.weights, q.weights)
        assert np.array_equal(p.alpha, q.alpha)
        assert p.value == q.value and p.n_oracle_calls == q.n_oracle_calls


def test_a_shared_path_is_the_same_with_and_without_the_adopted_rows(monkeypatch):
    X, y = _data(80, seed=4)
    bank = KernelBank.from_specs(X, SPECS, storage="products")
    parts = [np.arange(0, 50), np.arange(30, 80)]

    def make(_, C, tol):
        return _path._recording(CompositeOracle)(
            [SVMDual(bank.view(r), y[r], C=C, tol=tol) for r in parts])

    # (Each point's parts are on new views: nothing to take over.)
    views = [bank.view(r) for r in parts]

    def make_same_views(_, C, tol):
        return _path._recording(CompositeOracle)(
            [SVMDual(v, y[r], C=C, tol=tol) for v, r in zip(views, parts, strict=True)])

    for maker in (make, make_same_views):
        with_rows = _points(monkeypatch, True, maker)
        without = _points(monkeypatch, False, maker)
        for p, q in zip(with_rows, without, strict=True):
            assert np.array_equal(p.weights, q.weights)
            assert np.array_equal(p.alpha, q.alpha)
    a = make_same_views(None, 1.0, 1e-6)
    a(W1)
    b = make_same_views(None, 5.0, 1e-6)
    assert b.adopt_rows(a)
    assert all(part._solver._holds(W1) for part in b.parts)
    assert not b.adopt_rows(make(None, 1.0, 1e-6))  # other views: nothing taken
