"""A least-recently-used cache of rows of a combined kernel, and the two reads made through it.

The SMO solver's block path (:mod:`mklopt.oracles._solver`) keeps one on
the client; a shard of a sharded bank (:mod:`mklopt.kernels.sharded`) keeps
one on its worker, so that the rows a solve reads are computed there once
and only blocks and ``n``-vectors travel.
"""

from __future__ import annotations

import numpy as np

from .._jit.smo import accumulate_rows, gather_block
from .._memory import empty_by_rows

__all__ = ["GRAD_CHUNK", "RowCache", "cached_block", "cached_dot"]

#: Rows per request when a product ``K(w) v`` reads many rows (the gradient of a warm start).
GRAD_CHUNK = 512


class RowCache:
    """Least-recently-used cache of rows of the combined kernel at one ``w``.

    Parameters
    ----------
    n_samples : int
        Row length.
    capacity : int
        Rows held (>= 0). A request for more distinct rows than fit is served
        from a temporary block instead.

    Attributes
    ----------
    n_hits, n_misses : int
        Rows served from the cache and rows computed, since construction.
    n_requests : int
        Batched requests made to the storage.
    """

    def __init__(self, n_samples, capacity):
        self.n = int(n_samples)
        self.capacity = int(max(0, capacity))
        # Filled a few rows at a time: plain pages (see empty_by_rows).
        self.data = empty_by_rows((self.capacity, self.n))
        self.slot_of = np.full(self.n, -1, dtype=np.int64)
        self.row_of = np.full(self.capacity, -1, dtype=np.int64)
        self.stamp = np.full(self.capacity, -1, dtype=np.int64)
        self.clock = 0
        self.n_hits = 0
        self.n_misses = 0
        self.n_requests = 0

    def clear(self):
        """Forget every row (the weights changed)."""
        held = self.row_of >= 0
        self.slot_of[self.row_of[held]] = -1
        self.row_of[:] = -1
        self.stamp[:] = -1

    def fetch(self, idx, compute):
        """Rows ``idx`` (distinct int64) as ``(data, slots)``: ``data[slots[j]]`` is row ``idx[j]``.

        ``compute(rows, out)`` writes the rows not held into ``out``; it is
        called at most once per fetch.
        """
        r = idx.shape[0]
        slots = self.slot_of[idx]
        miss = slots < 0
        n_miss = int(np.count_nonzero(miss))
        self.n_hits += r - n_miss
        self.n_misses += n_miss
        self.clock += 1
        if r > self.capacity:
            # Too small to hold the request: assemble a temporary block.
            block = np.empty((r, self.n))
            hit = ~miss
            if hit.any():
                block[hit] = self.data[slots[hit]]
                self.stamp[slots[hit]] = self.clock
            if n_miss:
                self.n_requests += 1
                tmp = compute(idx[miss], np.empty((n_miss, self.n)))
                block[miss] = tmp
            return block, np.arange(r, dtype=np.int64)
        hit_slots = slots[~miss]
        self.stamp[hit_slots] = self.clock
        if n_miss:
            # Victims: empty slots first (stamp -1), then the least recently
            # used; the rows of this request carry the newest stamp and stay.
            victims = np.argpartition(self.stamp, n_miss - 1)[:n_miss]
            old = self.row_of[victims]
            self.slot_of[old[old >= 0]] = -1
            self.n_requests += 1
            new_rows = idx[miss]
            self.data[victims] = compute(new_rows, np.empty((n_miss, self.n)))
            self.row_of[victims] = new_rows
            self.slot_of[new_rows] = victims
            self.stamp[victims] = self.clock
            slots = slots.copy()
            slots[miss] = victims
        return self.data, slots


def cached_block(cache, compute, idx):
    """``K[idx][:, idx]`` through ``cache`` (``compute(rows, out)`` writes missing rows)."""
    data, slots = cache.fetch(idx, compute)
    return gather_block(data, slots, idx, np.empty((idx.shape[0], idx.shape[0])))


def cached_dot(cache, compute, idx, coef, out):
    """``out += sum_j coef[j] K[idx[j]]`` through ``cache``, ``GRAD_CHUNK`` rows at a time."""
    chunk = max(1, min(GRAD_CHUNK, cache.capacity or GRAD_CHUNK))
    for c0 in range(0, idx.shape[0], chunk):
        data, slots = cache.fetch(idx[c0 : c0 + chunk], compute)
        accumulate_rows(data, slots, coef[c0 : c0 + chunk], out)
    return out
