"""Per oracle call, the kernel weights are checked exactly once (at the oracle's edge).

Every mklopt module that imported a checking function gets a counting
wrapper in its place; a call that went on to the bank's public verbs
(``KernelBank.combine``, ``rows``, ``diag``, which check ``w`` again) would
count two.
"""

import sys
from collections import Counter

import numpy as np
import pytest

import mklopt._validation as validation
from mklopt import KernelBank, solve
from mklopt.kernels import linear, nystroem, poly, rbf
from mklopt.methods import get_method
from mklopt.oracles import OneClassDual, SVMDual, SVRDual
from mklopt.stopping import DualityGap, MaxIter

SPECS = [rbf(0.5), rbf(2.0), poly(2), linear(), linear(features=[0])]


@pytest.fixture
def checks(monkeypatch):
    """Counts of the checks applied to an argument named ``w``."""
    counts = Counter()
    originals = {name: getattr(validation, name) for name in ("check_weights", "check_vector")}

    def counting_weights(w, n_kernels, name="w", **kwargs):
        counts["check_weights", name] += 1
        return originals["check_weights"](w, n_kernels, name, **kwargs)

    def counting_vector(x, name, **kwargs):
        counts["check_vector", name] += 1
        return originals["check_vector"](x, name, **kwargs)

    wrappers = {"check_weights": counting_weights, "check_vector": counting_vector}
    # Every caller's reference, not _validation's own (check_weights calls
    # check_vector: one check).
    users = [m for n, m in sys.modules.items() if n.startswith("mklopt.") and m is not validation]
    for module in users:
        for name, original in originals.items():
            if getattr(module, name, None) is original:
                monkeypatch.setattr(module, name, wrappers[name])
    return counts


def _data(n=40, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    return X, y


BANKS = {
    "dense": lambda X: KernelBank.from_specs(X, SPECS, storage="dense"),
    "on_the_fly": lambda X: KernelBank.from_specs(X, SPECS, storage="on_the_fly"),
    "nystroem": lambda X: KernelBank.from_specs(X, SPECS, storage=nystroem(20, random_state=0)),
    # User matrices normalised without a copy (DenseStorage with factors).
    "matrices": lambda X: KernelBank.from_matrices(
        KernelBank.from_specs(X, SPECS, normalize=None).functions.matrices(), normalize="trace"
    ),
    # A tiny row cache: the solver's block path, not the whole matrix.
    "row_blocks": lambda X: KernelBank.from_specs(X, SPECS, storage="on_the_fly",
                                                  cache_size=0.01),
}


def _w_checks(counts):
    return counts["check_weights", "w"] + counts["check_vector", "w"]


@pytest.mark.parametrize("which", sorted(BANKS))
def test_one_check_of_w_per_call(checks, which):
    X, y = _data()
    bank = BANKS[which](X)
    oracles = [
        SVMDual(bank, y, C=1.0),
        SVRDual(bank, X[:, 0], C=1.0, epsilon=0.1),
        OneClassDual(bank, nu=0.3),
    ]
    assert oracles[0]._solver.whole_matrix == (which != "row_blocks")
    w = np.full(bank.n_kernels, 1.0 / bank.n_kernels)
    for oracle in oracles:
        checks.clear()
        first = oracle(w)
        assert _w_checks(checks) == 1
        checks.clear()
        oracle(w * 2.0, warm_start=first.alpha, need_q=False)
        assert _w_checks(checks) == 1
        checks.clear()
        oracle(np.r_[w[:2], np.zeros(bank.n_kernels - 2)], kernels=[0, 1])
        assert _w_checks(checks) == 1


@pytest.mark.parametrize("method", ["level", "simplemkl", "silp", "mirror"])
def test_one_check_of_w_per_call_through_solve(checks, method):
    X, y = _data(n=60)
    bank = KernelBank.from_specs(X, SPECS, storage="on_the_fly")
    oracle = SVMDual(bank, y, C=1.0, tol=1e-4)
    checks.clear()
    solve(oracle, get_method(method)(), stop=DualityGap(1e-3) | MaxIter(30))
    assert oracle.n_calls > 1
    assert _w_checks(checks) == oracle.n_calls


def test_the_answer_owns_its_weights():
    X, y = _data()
    oracle = SVMDual(KernelBank.from_specs(X, SPECS), y)
    w = np.full(len(SPECS), 0.2)
    ans = oracle(w)
    assert not np.shares_memory(ans.w, w)
    w[:] = 1.0  # the caller's array is the caller's
    assert np.all(ans.w == 0.2)
    from_list = oracle([0.2] * len(SPECS))
    assert from_list.w.dtype == np.float64 and from_list.w.flags.c_contiguous


def test_the_check_still_refuses_bad_weights():
    X, y = _data()
    oracle = SVMDual(KernelBank.from_specs(X, SPECS), y)
    with pytest.raises(ValueError, match="w must be non-negative"):
        oracle(np.r_[-1.0, np.ones(len(SPECS) - 1)])
    with pytest.raises(ValueError, match="w must have length 5"):
        oracle(np.ones(3))
    with pytest.raises(ValueError, match="w contains NaN"):
        oracle(np.r_[np.nan, np.ones(len(SPECS) - 1)])
    with pytest.raises(TypeError, match="w must be an array of real numbers"):
        oracle(["a"] * len(SPECS))
