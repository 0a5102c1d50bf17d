"""A chain passes its running stage's oracle request on whole.

Before the request record, ``Chain`` forwarded the stage's ``need`` and
``warm_start`` by hand and dropped its kernel subset, so a kernel working
set inside a chain priced the whole bank at every call. These tests count
the kernels the oracle is asked for.
"""

import dataclasses

import numpy as np
import pytest

from mklopt import KernelBank, MethodReport, OracleRequest, datasets, solve
from mklopt.kernels import random_rbf
from mklopt.methods import Chain, KernelWorkingSet, MethodBase
from mklopt.oracles import SVMDual
from mklopt.stopping import DualityGap, MaxIter
from mklopt.testing import SmoothQuadraticOracle, check_method

SIZE = 8  # working-set size: a strict subset of the bank below
SWITCH = 1e-2


class RecordingSVMDual(SVMDual):
    """The SVM dual, recording the kernel subset each call was asked for (None: all)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.asked = []

    def __call__(self, w, warm_start=None, need_q=True, kernels=None):
        self.asked.append(None if kernels is None else np.array(kernels, dtype=np.int64))
        return super().__call__(w, warm_start=warm_start, need_q=need_q, kernels=kernels)


@pytest.fixture(scope="module")
def problem():
    X, y = datasets.load("sonar")
    idx = np.random.default_rng(3).choice(len(y), size=50, replace=False)
    X, y = X[idx], y[idx].astype(float)
    X = (X - X.mean(0)) / X.std(0)
    bank = KernelBank.from_specs(X, random_rbf(120, X.shape[1], seed=3))
    return bank, y


def oracle_for(problem):
    bank, y = problem
    return RecordingSVMDual(bank, y, C=10.0, tol=1e-8)


def priced(asked, m):
    """Kernels priced by each call: the subset's size, or the whole bank."""
    return np.array([m if k is None else k.size for k in asked])


def same_subsets(a, b):
    return len(a) == len(b) and all(
        (x is None and y is None) or (x is not None and y is not None and np.array_equal(x, y))
        for x, y in zip(a, b, strict=True)
    )


def test_working_set_first_in_a_chain_prices_only_its_subset(problem):
    m = problem[0].n_kernels
    # The working set alone, to the gap at which the chain hands over ...
    alone = oracle_for(problem)
    res_alone = solve(alone, KernelWorkingSet("level", size=SIZE),
                      stop=DualityGap(SWITCH) | MaxIter(500), adapt_tol=False)
    assert res_alone.converged
    # ... and as the first stage of a chain: the same calls, the same subsets.
    chained = oracle_for(problem)
    chain = Chain(KernelWorkingSet("level", size=SIZE), "active_set", switch=SWITCH)
    res = solve(chained, chain, stop=DualityGap(1e-6) | MaxIter(500), adapt_tol=False)
    k = res.extra["switched_after"]
    assert k == len(alone.asked)
    assert same_subsets(chained.asked[:k], alone.asked)
    first = priced(chained.asked[:k], m)
    assert np.any(first < m), "the working set never asked for a subset"
    assert first.sum() < k * m  # fewer kernels priced than the whole bank at every call
    # The chain still certifies the optimum, the one the working set reaches
    # alone (whose Level tail is slow below 1e-5: a looser certificate).
    assert res.converged and res.rel_gap <= 1e-6
    ref = solve(oracle_for(problem), KernelWorkingSet("level", size=SIZE),
                stop=DualityGap(1e-4) | MaxIter(1000))
    assert ref.converged
    assert abs(res.value - ref.value) <= res.gap + ref.gap + 1e-12 * abs(ref.value)


def test_working_set_second_in_a_chain_prices_only_its_subset(problem):
    m = problem[0].n_kernels
    oracle = oracle_for(problem)
    chain = Chain("level", KernelWorkingSet("level", size=SIZE), switch=1e-1)
    res = solve(oracle, chain, stop=DualityGap(1e-4) | MaxIter(1000))
    k = res.extra["switched_after"]
    assert k is not None and k < len(oracle.asked)
    assert np.all(priced(oracle.asked[:k], m) == m)  # Level prices every kernel
    after = priced(oracle.asked[k:], m)
    assert np.any(after < m), "the working set never asked for a subset"
    ref = solve(oracle_for(problem), KernelWorkingSet("level", size=SIZE),
                stop=DualityGap(1e-4) | MaxIter(1000))
    assert res.converged and ref.converged
    assert abs(res.value - ref.value) <= res.gap + ref.gap + 1e-12 * abs(ref.value)


class _Asks(MethodBase):
    """A stand-in stage whose request carries every field, built by one hook."""

    def __init__(self, request=None):
        self.request = request

    def _start(self, oracle):
        from mklopt.domains import Simplex

        dom = Simplex(oracle.n_kernels)
        return dom, dom.initial()

    def _ask(self, w):
        return w

    def _tell(self, w, query, answer):
        return None

    def _request(self, state):
        return self.request


def test_the_chain_reports_its_running_stage_request_whole():
    oracle = SmoothQuadraticOracle.random(5, 4, seed=0)
    req = OracleRequest(need="value", warm_start=np.ones(4), kernels=np.array([0, 2]))
    chain = Chain(_Asks(req), "level", switch=1e-12)
    chain.start(oracle)
    assert chain.report().request is not None
    got = chain.report().request
    # Every field of the stage's request arrives, with no per-field forwarding.
    for f in dataclasses.fields(OracleRequest):
        assert getattr(got, f.name) is getattr(req, f.name)


def test_the_old_hooks_still_make_the_request():
    class Old(_Asks):
        _request = MethodBase._request

        def _need(self, state):
            return "value"

        def _kernels(self, state):
            return np.array([1])

    m = Old()
    m.start(SmoothQuadraticOracle.random(5, 4, seed=0))
    rep = m.report()
    assert rep.request.need == "value" and rep.request.kernels.tolist() == [1]
    assert rep.need == "value" and rep.kernels.tolist() == [1]  # the older fields read it


def test_method_report_keeps_its_keywords():
    rep = MethodReport(best=None, weights=None, gap=np.nan, lower=-np.inf, n_iter=0, need="exact")
    assert rep.request.need == "exact" and rep.need == "exact"
    assert MethodReport(best=None, weights=None, gap=0.0, lower=0.0, n_iter=0).need == "full"
    with pytest.raises(TypeError, match="either request= or need="):
        MethodReport(best=None, weights=None, gap=0.0, lower=0.0, n_iter=0,
                     need="value", request=OracleRequest())
    # dataclasses.replace passes both, in agreement
    again = dataclasses.replace(rep, n_iter=3)
    assert again.request is rep.request and again.n_iter == 3
    with pytest.raises(ValueError, match="need must be"):
        OracleRequest(need="some")


@pytest.mark.parametrize(
    "chain",
    [lambda: Chain(KernelWorkingSet(size=2), "level", switch=1e-2),
     lambda: Chain("level", KernelWorkingSet(size=2), switch=1e-1)],
    ids=["working_set-level", "level-working_set"],
)
def test_chains_with_a_working_set_pass_the_kit(chain):
    check_method(chain())
