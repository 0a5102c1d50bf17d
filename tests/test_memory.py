"""The memory policy's reading of the available memory, and work space by rows (mklopt._memory)."""

import math

import numpy as np
import pytest

from mklopt import _memory


def test_a_recent_reading_is_reused_and_an_old_one_is_not(monkeypatch):
    reads = []

    def fake():
        reads.append(1)
        return 1000 * len(reads)

    monkeypatch.setattr(_memory, "_read_available_memory", fake)
    monkeypatch.setattr(_memory, "_last_reading", (-math.inf, None))
    assert _memory.available_memory() == 1000
    assert _memory.available_memory() == 1000  # within REUSE_SECONDS: no new read
    assert len(reads) == 1
    taken, value = _memory._last_reading
    monkeypatch.setattr(_memory, "_last_reading", (taken - 2 * _memory.REUSE_SECONDS, value))
    assert _memory.available_memory() == 2000
    assert len(reads) == 2
    limit, where = _memory.memory_limit(None)
    assert limit == _memory.MEMORY_FRACTION * 2000 and "available" in where


def test_the_reading_is_a_positive_byte_count():
    value = _memory._read_available_memory()
    assert value is None or (isinstance(value, int) and value > 0)


# ---- work space written a few rows at a time ----------------------------------


def _thp_eligible(arr):
    """``THPeligible`` of the mapping holding ``arr``'s middle byte (None: not reported).

    (NumPy marks a large array's pages from the first whole page on, which
    splits the mapping: the first byte can lie outside the marked part.)
    """
    addr = arr.__array_interface__["data"][0] + arr.nbytes // 2
    try:
        with open("/proc/self/smaps") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    inside = False
    for line in lines:
        head = line.split()[0] if line else ""
        if "-" in head and ":" not in head:
            lo, hi = (int(x, 16) for x in head.split("-"))
            inside = lo <= addr < hi
        elif inside and line.startswith("THPeligible:"):
            return int(line.split()[1])
    return None


@pytest.mark.parametrize("shape, dtype", [((3, 5), np.float64), ((0, 7), np.float64),
                                          ((700, 800), np.float64), ((1200, 1100), np.float32),
                                          ((5, 2**20), np.uint8)])
def test_empty_by_rows_gives_a_writable_array_of_the_shape_asked(shape, dtype):
    a = _memory.empty_by_rows(shape, dtype)
    assert a.shape == shape and a.dtype == dtype
    assert a.flags.c_contiguous and a.flags.writeable
    a[...] = 3
    a[-1:] = 5
    if a.size:
        assert a[0].sum() == 3 * shape[1] and a[-1].sum() == 5 * shape[1]


@pytest.mark.skipif(_thp_eligible(np.empty(1)) is None,
                    reason="needs Linux's /proc/self/smaps with THPeligible")
def test_large_work_space_is_not_given_huge_pages():
    n = int(np.sqrt(2 * _memory.BY_ROWS_MIN_BYTES / 8)) + 1
    a = _memory.empty_by_rows((n, n))
    a[::97] = 1.0
    assert _thp_eligible(a) == 0


@pytest.mark.skipif(_thp_eligible(np.empty(1)) is None,
                    reason="needs Linux's /proc/self/smaps with THPeligible")
def test_the_solvers_work_matrix_and_row_cache_are_work_space_by_rows():
    from mklopt.kernels import KernelBank, rbf
    from mklopt.kernels._rowcache import RowCache
    from mklopt.oracles import SVMDual

    rng = np.random.default_rng(0)
    n = 800  # 5 MB: past the threshold
    X = rng.normal(size=(n, 3))
    y = np.where(X[:, 0] > 0, 1, -1)
    oracle = SVMDual(KernelBank.from_specs(X, [rbf(1.0), rbf(2.0)]), y, C=1.0)
    oracle(np.array([0.5, 0.5]))
    assert oracle._solver.whole_matrix
    assert _thp_eligible(oracle._solver._K) == 0
    cache = RowCache(n, 1000)
    assert _thp_eligible(cache.data) == 0
