"""The per-call thread choice (mklopt._threads): its rule, and that it never changes an answer."""

import numba
import numpy as np
import pytest

from mklopt import MKLClassifier, datasets
from mklopt._threads import MAX_PROBE_INTERVAL, CallThreads
from mklopt.kernels import on_the_fly
from mklopt.oracles import _solver

needs_two = pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs 2 numba threads")


@pytest.fixture
def two_threads():
    old = numba.get_num_threads()
    numba.set_num_threads(2)
    try:
        yield 2
    finally:
        numba.set_num_threads(old)


@needs_two
def test_small_calls_run_on_one_thread_and_are_not_timed(two_threads):
    site = CallThreads("t", min_work=1000)
    for _ in range(5):
        with site(999) as threads:
            assert threads == 1 and numba.get_num_threads() == 1
    assert numba.get_num_threads() == 2
    assert site._rate == {}


@needs_two
def test_tries_both_settings_then_keeps_the_faster(two_threads):
    site = CallThreads("t", min_work=1)
    assert site.choose(10) == 2  # never run on threads: try them first
    site._record(2, 5.0)
    assert site.choose(10) == 1  # then one thread
    site._record(1, 1.0)  # one thread 5x faster per unit: the busy-core case
    picks = [site.choose(10) for _ in range(3)]
    assert picks == [1, 1, 1]
    assert site.choose(10) == 2  # the fourth call tries threads again
    site._record(2, 4.0)  # still slower: the next try comes later
    assert site._interval == 8
    picks = [site.choose(10) for _ in range(8)]
    assert picks == [1] * 7 + [2]
    site._record(2, 0.5)  # the load went: threads win now
    assert site._interval == 4
    assert site.choose(10) == 2


@needs_two
def test_probe_interval_is_bounded(two_threads):
    site = CallThreads("t", min_work=1)
    site._record(2, 5.0)
    site._record(1, 1.0)
    for _ in range(20):
        while site.choose(1) != 2:
            pass
        site._record(2, 5.0)
    assert site._interval == MAX_PROBE_INTERVAL


def test_one_thread_setting_is_respected():
    old = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        site = CallThreads("t", min_work=1)
        with site(1e9) as threads:
            assert threads == 1
        assert site._rate == {}  # nothing to choose between: not timed
    finally:
        numba.set_num_threads(old)


def test_restores_the_callers_threads_after_an_error():
    old = numba.get_num_threads()
    site = CallThreads("t", min_work=1)
    with pytest.raises(RuntimeError), site(10):
        raise RuntimeError
    assert numba.get_num_threads() == old
    assert site._rate == {}


def _fit_forced(monkeypatch, threads):
    X, y = datasets.load("satellite")
    keep = np.isin(y, np.unique(y)[:2])
    X, y = X[keep][:900], y[keep][:900]
    for site in (on_the_fly.QUAD_THREADS, _solver.FILL_THREADS):
        monkeypatch.setattr(site, "choose", lambda work, t=threads: t)
    seen = {}

    def spy(name, real):
        def call(*args):
            seen.setdefault(name, set()).add(numba.get_num_threads())
            return real(*args)

        return call

    monkeypatch.setattr(on_the_fly._groups, "quad_forms_by_rows",
                        spy("quad", on_the_fly._groups.quad_forms_by_rows))
    monkeypatch.setattr(_solver, "source_fill_par", spy("fill", _solver.source_fill_par))
    # (Stored products: a view's quadratic forms run quad_forms_by_rows, the
    # warm starts' rows source_fill_par, as in the default fit of satellite.)
    clf = MKLClassifier(storage="products").fit(X, y)
    monkeypatch.undo()
    return clf, seen


@needs_two
def test_a_fit_gives_the_same_bits_on_one_thread_and_on_two(monkeypatch, two_threads):
    one, seen1 = _fit_forced(monkeypatch, 1)
    two, seen2 = _fit_forced(monkeypatch, 2)
    # Each kernel behind a choice ran, on the threads forced.
    assert seen1 == {"quad": {1}, "fill": {1}} and seen2 == {"quad": {2}, "fill": {2}}
    assert np.array_equal(one.weights_, two.weights_)
    assert np.array_equal(one.dual_coef_, two.dual_coef_)
    assert np.array_equal(one.intercept_, two.intercept_)
    assert one.n_oracle_calls_ == two.n_oracle_calls_
