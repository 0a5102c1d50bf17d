"""Sharded banks under the workers' memory limits: larger than one worker, refused when too large.

A module-scoped ``LocalCluster(n_workers=2, threads_per_worker=1,
memory_limit="800MB")``: a shard may use 60 % of its worker's limit
(480 MB). A dense bank of 829 MB, more than one worker's limit and less
than the two together, is split under the limits and gives the serial
answers, and its workers' resident memory drops by the shards' bytes once
it is closed; a bank larger than both is refused before anything is
allocated.
"""

import numpy as np
import pytest

from mklopt import KernelBank, solve
from mklopt.kernels import rbf
from mklopt.kernels.functions import KernelFunctions
from mklopt.kernels.sharded import WORKER_MEMORY_FRACTION, balance_shards
from mklopt.methods import AnalyticLp
from mklopt.oracles import SVMDual
from mklopt.stopping import MaxOracleCalls
from tests._cluster import local_client, no_hang, shards_on_workers, wait_released

distributed = pytest.importorskip("distributed")

LIMIT = 800e6
#: A row cache below n x n (n = 1200): the serial bank then takes the SMO
#: solver's block path, as a sharded bank does.
BLOCK_PATH = 5.0
WIDTHS = [2.0**k for k in range(-4, 8)]


def specs(n_features):
    """12 widths on each single feature: one group of 12 kernels per feature."""
    return [rbf(s, [f]) for f in range(n_features) for s in WIDTHS]


def problem(n, d=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(X[:, 0] + X[:, 1] * X[:, 2] > 0.1 * rng.normal(size=n), 1.0, -1.0)
    return X, y


def _rss():
    """Resident bytes of the calling process (run on the workers)."""
    with open("/proc/self/statm") as fh:
        pages = int(fh.read().split()[1])
    import os

    return pages * os.sysconf("SC_PAGE_SIZE")


@pytest.fixture(scope="module")
def client():
    with local_client(memory_limit="800MB") as c:
        yield c


def test_capacities_steer_the_groups_and_refuse_what_cannot_fit():
    X = np.zeros((5, 6))
    plan = KernelFunctions.from_data(X, specs(6)).plan  # 6 groups of 12
    parts, costs = balance_shards(plan, 2, "dense", capacity=[24, 48])
    assert [p.size for p in parts] == [24, 48] and costs.tolist() == [24.0, 48.0]
    parts, _ = balance_shards(plan, 2, "dense", capacity=[72, 72])
    assert [p.size for p in parts] == [36, 36]  # equal capacities: LPT as before
    with pytest.raises(MemoryError, match="fits in no shard"):
        balance_shards(plan, 2, "dense", capacity=[30, 30])  # 60 < 72 kernels


def test_a_bank_larger_than_one_worker_is_split_under_the_limits(client):
    X, y = problem(1200)
    sp = specs(X.shape[1])
    need = len(sp) * 1200**2 * 8
    assert LIMIT < need < 2 * LIMIT  # 829 MB: more than one worker holds
    with no_hang(150):
        bank = KernelBank.from_specs(X, sp, storage="dense", client=client)
        try:
            shards = bank.storage.shards
            assert len(shards) == 2 and {s.storage for s in shards} == {"dense"}
            assert len({s.worker for s in shards}) == 2
            for s in shards:  # each within its worker's share, work matrix included
                assert s.nbytes + 8 * 1200**2 <= WORKER_MEMORY_FRACTION * LIMIT
            stop = MaxOracleCalls(6)
            b = solve(SVMDual(bank, y, C=10.0, tol=1e-6), AnalyticLp(2.0), stop=stop)
            held = client.run(_rss)
        finally:
            bank.storage.close()
        # the workers give the kernels' memory back as soon as the bank is closed
        assert wait_released(client, 2.0) == (0, [])
        freed = {w: held[w] - rss for w, rss in client.run(_rss).items()}
        for s in shards:
            assert freed[s.worker] >= 0.9 * s.nbytes
        serial = KernelBank.from_specs(X, sp, storage="dense", cache_size=BLOCK_PATH)
        a = solve(SVMDual(serial, y, C=10.0, tol=1e-6), AnalyticLp(2.0), stop=stop)
    # n = 1200 takes several blocks, whose choice can differ at the rounding
    # level of the shards' sums: both runs stop within the SMO tolerance
    # (relative error of J at most 2 tol, see SVMDual), not at one point.
    assert b.n_oracle_calls == a.n_oracle_calls
    assert np.abs(b.weights - a.weights).max() <= 1e-5 * np.abs(a.weights).max()
    assert abs(b.value - a.value) <= 2e-6 * abs(a.value)


def test_one_group_larger_than_one_worker_is_split_when_it_must_be(client):
    """50 kernels on all features (one group, 576 MB): no worker's 480 MB holds it."""
    X, y = problem(1200)
    sp = [rbf(2.0 ** (k / 4.0)) for k in range(-20, 30)]
    with no_hang(150):
        bank = KernelBank.from_specs(X, sp, storage="dense", client=client)
        try:
            shards = bank.storage.shards
            assert sorted(s.kernels.size for s in shards) == [25, 25]
            for s in shards:
                assert s.nbytes + 8 * 1200**2 <= WORKER_MEMORY_FRACTION * LIMIT
            np.testing.assert_array_equal(
                np.sort(np.concatenate([s.kernels for s in shards])), np.arange(len(sp))
            )
            stop = MaxOracleCalls(4)
            b = solve(SVMDual(bank, y, C=10.0, tol=1e-6), AnalyticLp(2.0), stop=stop)
        finally:
            bank.storage.close()
        serial = KernelBank.from_specs(X, sp, storage="dense", cache_size=BLOCK_PATH)
        np.testing.assert_allclose(bank.scales, serial.scales, rtol=1e-12)
        a = solve(SVMDual(serial, y, C=10.0, tol=1e-6), AnalyticLp(2.0), stop=stop)
    assert np.abs(b.weights - a.weights).max() <= 1e-10 * np.abs(a.weights).max()
    assert abs(b.value - a.value) <= 1e-10 * abs(a.value)
    # a group that fits one shard still stays whole
    small = KernelBank.from_specs(X[:300], sp, storage="dense", client=client)
    try:
        assert [s.kernels.size for s in small.storage.shards] == [50]
    finally:
        small.storage.close()


def test_a_bank_larger_than_all_workers_is_refused_before_allocating(client):
    X, _ = problem(1700)
    sp = specs(X.shape[1])  # 72 x 1700^2 x 8 = 1.66 GB > 2 x 480 MB (60 % of 800 MB)
    assert wait_released(client) == (0, [])  # what earlier tests closed is gone
    with no_hang(60), pytest.raises(MemoryError) as info:
        KernelBank.from_specs(X, sp, storage="dense", client=client)
    msg = str(info.value)
    assert "72 kernels on 1700 points needs 1.59 GiB (1,710,880,000 bytes)" in msg
    assert "Nothing was allocated" in msg and "storage='on_the_fly'" in msg
    assert "0.6 of each worker's memory_limit" in msg
    assert shards_on_workers(client) == (0, [])
    # "auto" falls back to computing on the fly, which fits
    bank = KernelBank.from_specs(X, sp, storage="auto", client=client)
    try:
        assert {s.storage for s in bank.storage.shards} == {"on_the_fly"}
    finally:
        bank.storage.close()
    assert wait_released(client) == (0, [])
