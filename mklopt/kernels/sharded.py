"""Kernels sharded over the workers of a Dask cluster.

:class:`ShardedStorage` answers the storage verbs of
:mod:`mklopt.kernels.storage` for a bank whose kernels live on the workers of
a ``dask.distributed`` cluster. The kernels are split into *shards*, one
per worker by default; each shard is a Dask actor that builds its own
storage (dense, on the fly, or any registered storage) **on its worker**
through the one factory, :func:`~mklopt.kernels.make_storage`, from the
training points, its specs and their normalisation constants, computed once
on the client (the workers never normalise again, so a shard's kernels are
the client's to the last bit). Only weights, dual vectors and
``n``-vectors travel to the workers, and only rows, diagonals, ``q``
values and blocks come back:

=============================  ===========================  =============================
verb                           sent to each active shard     answered
=============================  ===========================  =============================
``diag(w)``                    its weights                   ``n`` numbers, summed
``rows(w, idx)``               its weights, ``idx``          ``len(idx) x n``, summed
``combine(w)``                 its weights                   ``n x n``, summed
``quad_forms(v, S, kernels)``  ``v_S``, ``S``, kernels       its ``q_k``, concatenated
``blocks(kernels, r, c)``      kernels, ``r``, ``c``         its blocks, concatenated
``combined_block(w, B)``       its weights, ``B``            ``|B| x |B|``, summed
``combined_matvec(w, B, c)``   its weights, ``B``, ``c``     ``n`` numbers, summed
=============================  ===========================  =============================

The SMO solver uses only the last two (and ``q``): each shard computes
the rows of a working set ``B`` of its part of ``K(w)`` and keeps them in
a row cache on its worker, and only the ``|B| x |B|`` block and the
gradient update (an ``n``-vector) travel, never rows.

A shard whose weights are all zero is not asked for rows, diagonals or
combined matrices. Weights travel as (indices, values) when at most half of
a shard's weights are non-zero (the usual case for L1-MKL). Every verb is
**one round trip**: the requests to all shards are sent together and the
answers awaited together, so a batched row request of the SMO solver costs
one round trip whatever the number of rows or shards.

Shards are balanced by cost, not by count. Kernels on one feature subset
(a *group*) share their distance evaluation, so a group is not split
(except a dense one that fits no worker's memory, see ``ShardedStorage``).
On the fly, a row and a ``q`` of group ``g`` cost about ``|F_g| + c m_g``
per kernel entry (one distance over ``|F_g|`` features, then one
exponential or power per kernel, ``c`` = ``KERNEL_COST``); a dense kernel
costs the same whatever its features, so there the cost is ``m_g``. Groups
are assigned largest first to the least loaded shard (the LPT rule), which
keeps every shard within one group's cost of the mean.

A worker lost during a request (killed, out of memory, its machine gone)
does not give a silent wrong answer: every answer is assembled from all
shards or not at all. The lost shard is rebuilt on a live worker from the
training points and its specs (the kernels are deterministic, so the
rebuilt shard answers exactly as the lost one) and the request is sent
again, up to ``retries`` times; after that :class:`ShardLostError` is
raised. The client stays usable either way. No wait is unbounded: requests
and builds wait in slices of ``poll_interval`` seconds and check between
them that the shard's task is still in memory (the scheduler marks it lost
when it notices the worker's death).

Shards are placed under the workers' memory limits: a worker's shards may
use :data:`WORKER_MEMORY_FRACTION` of its Dask ``memory_limit``, work
matrix included, and a dense bank that cannot be placed so is refused with
a ``MemoryError`` before anything is allocated. :meth:`ShardedStorage.close`
cancels the shards' tasks, so their workers free the memory at once.

Dask is an optional dependency (``pip install "mklopt[dask]"``): this
module imports it only when a sharded bank is built.
"""

from __future__ import annotations

import heapq
import numbers
import uuid
from dataclasses import dataclass
from types import SimpleNamespace

import numba
import numpy as np

from .._memory import fits, fmt_bytes
from .._optional import require
from .._version import __version__
from ._rowcache import RowCache, cached_block, cached_dot
from .factory import auto_storage, get_storage, make_storage
from .functions import KernelFunctions

__all__ = [
    "ShardedStorage",
    "ShardLostError",
    "ShardInfo",
    "Traffic",
    "balance_shards",
    "check_client",
]

#: Fraction of a worker's Dask ``memory_limit`` that its shards' storage may
#: use (with one ``n x n`` work matrix each); see ``ShardedStorage``.
WORKER_MEMORY_FRACTION = 0.6

#: Most bytes a shard keeps of the rows it computed for the solver, on its
#: worker (at most ``n`` rows: the ``n x n`` work matrix counted in its budget).
SHARD_ROW_CACHE_BYTES = 2**31

#: Cost of one kernel of a group, in units of one feature of its distance
#: evaluation (on-the-fly storage): an exponential or a power per entry
#: against a subtract-multiply-add per feature.
KERNEL_COST = 4.0

class ShardLostError(RuntimeError):
    """A worker holding a kernel shard was lost and the shard could not be rebuilt.

    Attributes
    ----------
    best : mklopt.Progress or None
        Set when an estimator's fit ends with this error: the best point
        evaluated before the loss (its ``J``, gap and weights), or None
        when no oracle call had ended.
    """

    best = None


@dataclass
class Traffic:
    """What a sharded storage sent and received, counted on the client.

    Attributes
    ----------
    n_round_trips : int
        Verb calls that went to the workers; each sends its requests to
        all active shards at once and waits for all answers (one round
        trip, whatever the number of shards).
    n_messages : int
        Requests sent to shards (at most ``n_shards`` per round trip).
    bytes_sent, bytes_received : int
        Array payload bytes (weights, indices, vectors; rows, ``q``,
        blocks). Message framing adds a few hundred bytes per message.
    n_rebuilt : int
        Shards rebuilt after a lost worker.
    """

    n_round_trips: int = 0
    n_messages: int = 0
    bytes_sent: int = 0
    bytes_received: int = 0
    n_rebuilt: int = 0

    def copy(self):
        """A snapshot of the counters."""
        return Traffic(**self.__dict__)

    def __sub__(self, other):
        return Traffic(**{k: v - getattr(other, k) for k, v in self.__dict__.items()})


def _distributed():
    """The ``distributed`` module (Dask is an optional dependency of mklopt)."""
    return require("distributed", "a kernel bank sharded over a Dask client")


def check_client(client, name="client"):
    """Validate a ``dask.distributed.Client`` that will hold a sharded bank.

    Parameters
    ----------
    client : distributed.Client
        Connected to a scheduler with at least one worker.
    name : str, default="client"
        The argument's name, for the messages.

    Returns
    -------
    list of str
        The workers' addresses, sorted.

    Raises
    ------
    TypeError
        If ``client`` is not a ``distributed.Client``.
    ValueError
        If it is closed or has no workers.
    ImportError
        If dask.distributed is not installed.
    """
    distributed = _distributed()
    if not isinstance(client, distributed.Client):
        raise TypeError(
            f"{name} must be a dask.distributed.Client connected to a scheduler, got "
            f"{type(client).__name__}; create one with Client('tcp://scheduler:8786') or "
            "Client(LocalCluster())"
        )
    if client.status != "running":
        raise ValueError(
            f"{name} is not connected (status {client.status!r}); it was closed or never "
            "started. Pass a running Client"
        )
    workers = sorted(_workers_info(client))
    if not workers:
        raise ValueError(
            f"{name}'s cluster has no workers; start some (e.g. cluster.scale(2)) or wait "
            "for them with client.wait_for_workers(n)"
        )
    return workers


def _workers_info(client):
    """``{address: info}`` of every worker (all of them, not the first few), asked of the scheduler.

    Not :meth:`distributed.Client.scheduler_info`: it fetches into the
    client's cached identity and returns that attribute, which the client's
    periodic refresh (asking for no workers) can replace in between, so
    that under load a live worker looked gone and a shard was declared lost.
    """
    try:
        return client.sync(client.scheduler.identity, n_workers=-1)["workers"]
    except TypeError:  # distributed before n_workers= (it listed them all)
        return client.sync(client.scheduler.identity)["workers"]


def _group_costs(plan, storage):
    m_g = np.diff(plan.kern_ptr).astype(np.float64)
    if storage == "dense":
        return m_g
    return np.diff(plan.feat_ptr).astype(np.float64) + KERNEL_COST * m_g


def balance_shards(plan, n_shards, storage="on_the_fly", capacity=None):
    """Split a bank's kernels into shards of balanced cost, never splitting a group.

    Parameters
    ----------
    plan : mklopt.kernels.functions._Plan
        The bank's plan (``KernelFunctions.plan``).
    n_shards : int
        Shards wanted (>= 1); fewer are returned when there are fewer groups.
    storage : str, default="on_the_fly"
        Storage of the shards: ``"dense"`` costs a kernel the same whatever
        its features; any other storage computes from the features.
    capacity : array-like of shape (n_shards,), optional
        The most each shard may hold, in the units of the cost (kernels for
        dense storage). A group then goes, largest first, to the shard it
        fills least in proportion to its capacity, among those it fits in;
        with equal capacities that is the least loaded shard, as without.

    Returns
    -------
    shards : list of ndarray of int64
        Sorted kernel indices of each non-empty shard.
    costs : ndarray of shape (len(shards),)
        The cost of each shard (see the module notes).

    Raises
    ------
    MemoryError
        If a group fits in no shard's remaining capacity.
    """
    members, loads = _assign(plan, int(n_shards), storage, capacity)
    shards, costs = [], []
    for s in range(int(n_shards)):
        if members[s]:
            shards.append(_kernels_of(plan, members[s]))
            costs.append(loads[s])
    return shards, np.array(costs)


def _kernels_of(plan, groups):
    ks = np.concatenate([plan.kern_idx[plan.kern_ptr[g] : plan.kern_ptr[g + 1]] for g in groups])
    return np.sort(ks).astype(np.int64)


def _single_kernel_groups(m):
    """A plan-like object with every kernel its own group (for dense placement)."""
    return SimpleNamespace(kern_ptr=np.arange(m + 1), kern_idx=np.arange(m))


def _assign(plan, n_shards, storage, capacity=None):
    """Groups of each shard slot and the slots' loads (LPT, optionally under capacities)."""
    cost = _group_costs(plan, storage)
    order = np.argsort(-cost, kind="stable")
    members = [[] for _ in range(n_shards)]
    loads = np.zeros(n_shards)
    if capacity is None:
        heap = [(0.0, s) for s in range(n_shards)]
        for g in order.tolist():
            load, s = heapq.heappop(heap)
            members[s].append(g)
            loads[s] = load + cost[g]
            heapq.heappush(heap, (loads[s], s))
        return members, loads
    cap = np.asarray(capacity, dtype=np.float64)
    for g in order.tolist():
        room = np.flatnonzero(loads + cost[g] <= cap + 1e-9)
        if room.size == 0:
            raise MemoryError(
                f"a group of {cost[g]:g} kernels on the same features (never split) fits in "
                f"no shard: the shards' capacities are {cap.tolist()} kernels, of which "
                f"{loads.tolist()} are taken"
            )
        fill = (loads[room] + cost[g]) / np.maximum(cap[room], 1e-300)
        s = int(room[np.argmin(fill)])
        members[s].append(g)
        loads[s] += cost[g]
    return members, loads


def _encode(w):
    """Weights as sent: ``(indices, values)`` when at most half are non-zero, else dense."""
    nz = np.flatnonzero(w)
    if 2 * nz.size <= w.size:
        return (w.size, nz.astype(np.int64), w[nz])
    return w


def _decode(enc):
    if isinstance(enc, tuple):
        m, nz, vals = enc
        w = np.zeros(m)
        w[nz] = vals
        return w
    return enc


def _nbytes(obj):
    if isinstance(obj, np.ndarray):
        return int(obj.nbytes)
    if isinstance(obj, (tuple, list)):
        return sum(_nbytes(o) for o in obj)
    return 0


class _Shard:
    """One shard of a bank, held by a Dask actor on a worker.

    Built on the worker from the training points and the shard's specs;
    answers the storage verbs for its kernels (local indices).
    """

    def __init__(self, X, specs, scales, entry, dtype, max_memory):
        self._threads = 1
        try:
            worker = _distributed().get_worker()
            self._threads = max(1, min(int(worker.state.nthreads), numba.config.NUMBA_NUM_THREADS))
        except ValueError:  # pragma: no cover - built outside a worker
            self._threads = numba.config.NUMBA_NUM_THREADS
        self._set_threads()
        # The client's normalisation constants, not recomputed here: the
        # shard's kernels are the client's to the last bit.
        functions = KernelFunctions(specs, scales, X)
        self.st = make_storage(entry, functions, dtype=dtype, max_memory=max_memory)
        self.scales = np.asarray(functions.scales)
        self.n = int(functions.n_samples)
        # The rows of this shard's partial K(w) that the solver's blocks
        # read, kept here for the current weights: the client asks for
        # blocks and products, never for the rows themselves.
        cap = min(self.n, SHARD_ROW_CACHE_BYTES // (8 * max(1, self.n)))
        self._cache = RowCache(self.n, max(1, cap))
        self._cache_w = None

    def _set_threads(self):
        # A worker's numba threads match its Dask threads, so that two
        # workers on one machine do not oversubscribe its cores (the
        # setting is per calling thread, hence on every request).
        numba.set_num_threads(self._threads)

    def info(self):
        return {
            "storage": self.st.name,
            "nbytes": int(self.st.nbytes),
            "scales": self.scales,
            "version": __version__,
        }

    def diag(self, w):
        self._set_threads()
        return self.st.diag(_decode(w))

    def rows(self, w, idx):
        self._set_threads()
        return self.st.rows(_decode(w), idx, np.empty((idx.size, self.n)))

    def combine(self, w):
        self._set_threads()
        # The whole matrix replaces the cached rows (the budget counts one
        # n x n work matrix per shard): a new cache's memory is not touched
        # until rows are written to it.
        self._cache = RowCache(self.n, self._cache.capacity)
        self._cache_w = None
        return self.st.combine(_decode(w), np.empty((self.n, self.n)))

    def quad_forms(self, vS, S, kernels):
        self._set_threads()
        v = np.zeros(self.n)
        v[S] = vS
        return self.st.quad_forms(v, S, kernels)

    def blocks(self, kernels, rows, cols):
        self._set_threads()
        return self.st.blocks(kernels, rows, cols)

    def _rows_at(self, w):
        """The row cache, emptied when the weights changed, and its row computer."""
        w = _decode(w)
        if self._cache_w is None or not np.array_equal(self._cache_w, w):
            self._cache.clear()
            self._cache_w = w

        def compute(idx, out):
            return self.st.rows(w, idx, out)

        return self._cache, compute

    def combined_block(self, w, idx):
        self._set_threads()
        return cached_block(*self._rows_at(w), idx)

    def combined_matvec(self, w, idx, coef):
        self._set_threads()
        return cached_dot(*self._rows_at(w), idx, coef, np.zeros(self.n))


@dataclass(frozen=True)
class ShardInfo:
    """Where one shard lives and what it holds."""

    worker: str
    kernels: np.ndarray
    storage: str
    nbytes: int
    cost: float


class ShardedStorage:
    """A bank's kernels sharded over the workers of a Dask cluster.

    Build it with ``KernelBank.from_specs(X, specs, client=client)``; see
    the module notes for what travels and how shards are chosen.

    Parameters
    ----------
    client : distributed.Client
        A running client with at least one worker.
    functions : KernelFunctions
        The bank's kernels (specs, scales and training points), as the
        client holds them for prediction.
    storage : str, default="auto"
        Storage of every shard on its worker: a name registered with
        :func:`~mklopt.kernels.register_storage` (``"dense"``,
        ``"on_the_fly"`` or a user's exact storage). ``"auto"`` is decided
        by :func:`~mklopt.kernels.auto_storage`, the rule of an unsharded
        bank: dense when the shards can be placed under the workers' memory
        limits (see Notes) and fewer than half of the kernels are read from
        tables, else on the fly.
    normalize : {"trace", "diagonal", None}, default="trace"
        Kept for compatibility; unused. The shards are built with the
        constants of ``functions.scales``, computed once on the client,
        and never normalise again.
    dtype : numpy dtype, default=np.float64
        Storage type of dense shards.
    max_memory : float, optional
        Byte limit for each shard's storage on its worker (on top of the
        workers' own limits, see Notes).
    n_shards : int, optional
        Default: one per worker. More shards than workers are placed round
        robin (useful when workers have several threads each).
    retries : int, default=1
        Times a shard lost with its worker is rebuilt within one request
        before :class:`ShardLostError` is raised.

    Attributes
    ----------
    name : str
        ``"sharded"``.
    n_kernels, n_samples, n_shards : int
    shards : tuple of ShardInfo
    traffic : Traffic
        Running counters of round trips, messages and bytes.
    poll_interval : float
        Seconds between checks that a shard's worker is alive while a
        request waits (default 1): a request never waits for a dead worker
        longer than this after the scheduler noticed the death.

    Raises
    ------
    MemoryError
        When dense shards cannot be placed under the workers' limits
        (before anything is allocated), with the bytes needed and each
        worker's limit.

    Notes
    -----
    A worker's shards may use :data:`WORKER_MEMORY_FRACTION` (0.6) of its
    Dask ``memory_limit``, and each at most ``max_memory``. A dense shard
    of ``m_s`` kernels needs ``m_s n^2`` numbers plus one ``n x n`` work
    matrix (``8 n^2`` bytes). Groups go, largest first, to the shard they
    fill least in proportion to its budget (the least loaded one when all
    budgets are equal), so a bank larger than one worker but smaller than
    all of them together is split to fit. A group that fits no shard's
    budget is split into its kernels (stored kernels share their distance
    evaluation only when they are built). Kernels cannot be spilled to
    disk, and Dask pauses a worker at 0.8 of its limit: the rest is left
    for the worker's interpreter and the answers in flight. A worker
    without a memory limit is judged by the machine's available memory,
    as an unsharded bank is.
    """

    name = "sharded"

    def __init__(
        self,
        client,
        functions,
        storage="auto",
        normalize="trace",
        dtype=np.float64,
        max_memory=None,
        n_shards=None,
        retries=1,
    ):
        workers = check_client(client)
        if n_shards is None:
            n_shards = len(workers)
        if isinstance(n_shards, bool) or not isinstance(n_shards, numbers.Integral):
            raise TypeError(f"n_shards must be a positive int or None, got {n_shards!r}")
        if n_shards < 1:
            raise ValueError(f"n_shards must be >= 1, got {n_shards}")
        if isinstance(retries, bool) or not isinstance(retries, numbers.Integral) or retries < 0:
            raise ValueError(f"retries must be an int >= 0, got {retries!r}")
        self.client = client
        self.functions = functions
        self.n_kernels = int(functions.n_kernels)
        self.n_samples = int(functions.n_samples)
        self.retries = int(retries)
        self.poll_interval = 1.0
        self.traffic = Traffic()
        self._normalize = normalize
        self._dtype = np.dtype(dtype)
        self._max_memory = max_memory
        self._storage = storage
        self._closed = False
        self._attempts = {}

        kind, parts, costs, slots, budgets = self._place(workers, int(n_shards), storage)
        self._kinds = [kind] * len(parts)
        self._entries = [get_storage(kind)] * len(parts)
        self._parts = parts
        self._costs = costs
        self._budgets = budgets
        self._shard_of = np.empty(self.n_kernels, dtype=np.int64)
        self._local = np.empty(self.n_kernels, dtype=np.int64)
        for s, ks in enumerate(parts):
            self._shard_of[ks] = s
            self._local[ks] = np.arange(ks.size)
        self._workers = [workers[t % len(workers)] for t in slots]
        self._futures = [None] * len(parts)
        self._actors = [None] * len(parts)
        self._info = [None] * len(parts)
        self._token = uuid.uuid4().hex[:8]
        X = client.scatter(functions.X, broadcast=True, hash=False)
        started = []
        try:
            started = [self._submit(s, X) for s in range(len(parts))]
            for s, fut in enumerate(started):
                self._adopt(s, fut)
        except BaseException:
            # A shard that failed (or an interrupt) must not leave the
            # others' kernels on their workers: nobody could free them.
            self._release(started)
            self._futures = [None] * len(parts)
            self._actors = [None] * len(parts)
            raise
        finally:
            # Not cancelled: cancelling a key cancels its dependents, the
            # actors. A plain release frees X once the last shard has it.
            X.release()

    # ------------------------------------------------------------ building
    def _capacities(self, workers):
        """Bytes a shard's storage may use on each worker (None: no known limit).

        :data:`WORKER_MEMORY_FRACTION` of the worker's Dask ``memory_limit``,
        and at most ``max_memory``. A shard's kernels cannot be spilled to
        disk, and the worker also needs room for its own interpreter and for
        the answers it sends, so a shard keeps well below the fraction
        (0.8 by default) at which Dask pauses a worker.
        """
        info = _workers_info(self.client)
        caps = {}
        for w in workers:
            limit = info.get(w, {}).get("memory_limit") or None
            cap = None if limit is None else WORKER_MEMORY_FRACTION * float(limit)
            if self._max_memory is not None:
                cap = float(self._max_memory) if cap is None else min(cap, self._max_memory)
            caps[w] = cap
        return caps

    def _place(self, workers, n_shards, storage):
        """Storage kind, shards, their costs, their slots and byte budgets, under the limits.

        Slot ``t`` lives on ``workers[t % len(workers)]``. A dense shard of
        ``m_s`` kernels holds ``m_s n^2`` numbers plus one ``n x n`` work
        matrix (``8 n^2`` bytes), and must fit its share of its worker's
        capacity; a dense bank that does not fit even in all the workers
        together is refused before anything is allocated. ``"auto"`` is
        decided by :func:`~mklopt.kernels.auto_storage`, the rule of an
        unsharded bank, with "fits" meaning "can be placed so".
        """
        plan = self.functions.plan
        caps = self._capacities(workers)
        slot_worker = [workers[t % len(workers)] for t in range(n_shards)]
        per_worker = {w: slot_worker.count(w) for w in set(slot_worker)}
        budgets = [None if caps[w] is None else caps[w] / per_worker[w] for w in slot_worker]
        known = all(b is not None for b in budgets)
        if storage == "auto":
            dense = None
            if known:
                try:
                    dense = self._place_dense(workers, n_shards, caps, budgets)
                except MemoryError:
                    pass
                fits_dense = dense is not None
            else:
                # Some worker has no memory_limit: judge by this machine's memory.
                n, m = self.n_samples, self.n_kernels
                per_shard = (m / n_shards) * n * n * self._dtype.itemsize + n * n * 8
                fits_dense = fits(per_shard, self._max_memory)
            storage = auto_storage(self.functions, fits_dense)
            if storage == "dense" and dense is not None:
                return dense
        if storage == "dense" and known:
            return self._place_dense(workers, n_shards, caps, budgets)
        members, loads = _assign(plan, n_shards, storage)
        slots = [t for t in range(n_shards) if members[t]]
        parts = [_kernels_of(plan, members[t]) for t in slots]
        return storage, parts, np.array([loads[t] for t in slots]), slots, [
            budgets[t] for t in slots
        ]

    def _place_dense(self, workers, n_shards, caps, budgets):
        """Dense shards placed under the byte ``budgets`` of their slots (MemoryError if not)."""
        plan = self.functions.plan
        n, m = self.n_samples, self.n_kernels
        kernel_bytes = n * n * self._dtype.itemsize
        work_bytes = n * n * 8
        room = [max(0.0, (b - work_bytes) // kernel_bytes) for b in budgets]
        need = m * kernel_bytes + min(n_shards, len(plan.kern_ptr) - 1) * work_bytes
        units = plan
        try:
            if need > sum(budgets):
                raise MemoryError("the sum")
            try:
                members, loads = _assign(plan, n_shards, "dense", room)
            except MemoryError:
                # A group larger than any shard's room is split: stored
                # kernels share their distance evaluation only when the
                # shard is built, so a split group costs one more
                # distance evaluation per shard, once.
                units = _single_kernel_groups(m)
                members, loads = _assign(units, n_shards, "dense", room)
        except MemoryError as exc:
            limits = ", ".join(
                f"{w}: {fmt_bytes(caps[w] / WORKER_MEMORY_FRACTION)}" for w in workers
                if self._max_memory is None
            ) or f"max_memory {fmt_bytes(self._max_memory)} per shard"
            raise MemoryError(
                f"a dense sharded bank of {m} kernels on {n} points needs "
                f"{fmt_bytes(need)} ({m} x {n}^2 x {self._dtype.itemsize} bytes, plus one "
                f"{n} x {n} work matrix per shard), but {len(workers)} worker(s) may hold "
                f"{fmt_bytes(sum(budgets))} in all ({WORKER_MEMORY_FRACTION:g} of each "
                f"worker's memory_limit: {limits})"
                + ("" if str(exc) == "the sum" else f"; {exc}")
                + ". Nothing was allocated. Use storage='on_the_fly' (a shard then holds "
                "only X), dtype=np.float32, more workers or larger memory limits"
            ) from None
        slots = [t for t in range(n_shards) if members[t]]
        costs = np.array([loads[t] for t in slots])
        parts = [_kernels_of(units, members[t]) for t in slots]
        return "dense", parts, costs, slots, [budgets[t] for t in slots]

    def _submit(self, s, X):
        fn = self.functions
        ks = self._parts[s]
        specs = [fn.specs[k] for k in ks.tolist()]
        return self.client.submit(
            _Shard,
            X,
            specs,
            # The client's constants and the storage's registry entry (its
            # factory travels by reference: workers need not know the name).
            np.array(fn.scales[ks]),
            self._entries[s],
            self._dtype,
            # The worker checks the shard against its budget (not against
            # its machine's free memory, which other workers share).
            self._max_memory if self._budgets[s] is None else self._budgets[s],
            actor=True,
            workers=[self._workers[s]],
            # Strict: if this worker dies, Dask must not recompute the shard
            # on a survivor that may not have room for it (it would wait
            # for the dead worker instead, and _wait_built notices).
            allow_other_workers=False,
            pure=False,
            # What runs, for the dashboard and the scheduler's task list:
            # "mklopt-shard-2-<bank>-<attempt>" (keys must be unique).
            key=f"mklopt-shard-{s}-{self._token}-{self._attempt(s)}",
        )

    def _attempt(self, s):
        self._attempts[s] = self._attempts.get(s, 0) + 1
        return self._attempts[s]

    def _adopt(self, s, fut):
        """Wait for shard ``s``'s actor and check what it built."""
        actor = self._wait_built(s, fut)
        info = self._wait(s, actor.info(), fut)
        if info["version"] != __version__:
            raise RuntimeError(
                f"worker {self._workers[s]} runs mklopt {info['version']} but this client "
                f"runs {__version__}; install the same version on every worker"
            )
        self._futures[s], self._actors[s], self._info[s] = fut, actor, info

    def _wait_built(self, s, fut):
        """Shard ``s``'s actor once built; ShardLostError if its worker leaves first.

        A task restricted to a worker that died waits for that worker for
        ever, so the wait is in slices of :attr:`poll_interval` seconds,
        checking between them that the worker is still known to the
        scheduler.
        """
        while True:
            try:
                return fut.result(timeout=self.poll_interval)
            except TimeoutError:
                if self._workers[s] not in _workers_info(self.client):
                    self._release([fut])
                    raise ShardLostError(
                        f"the worker {self._workers[s]} left the cluster while it built "
                        f"kernel shard {s} ({self._parts[s].size} kernels)"
                    ) from None

    def _wait(self, s, answer, key):
        """The answer of a request to shard ``s``, or ShardLostError once its worker is lost.

        A request in flight when the actor's worker dies can wait for ever
        inside Dask (it waits for the actor's task to be recomputed, which
        its worker restriction forbids). So the wait is in slices of
        :attr:`poll_interval` seconds, and between them the shard's task
        (``key``, the future of the actor) is checked: the scheduler marks
        it lost as soon as it notices the worker's death (at once for a
        killed process, after ``distributed.scheduler.worker-ttl`` for a
        machine that vanished).
        """
        while True:
            try:
                return answer.result(timeout=self.poll_interval)
            except TimeoutError:
                if key is None or key.status != "finished":
                    raise ShardLostError(
                        f"the task of kernel shard {s} is {getattr(key, 'status', 'gone')!r} "
                        f"(its worker {self._workers[s]} was lost)"
                    ) from None

    def _rebuild(self, s, exc):
        """Rebuild shard ``s`` on a live worker after its worker was lost."""
        try:
            workers = check_client(self.client)
        except (TypeError, ValueError) as err:
            raise ShardLostError(
                f"the worker holding kernel shard {s} was lost and no worker is left to "
                f"rebuild it on ({err})"
            ) from exc
        lost = self._workers[s]
        alive = [w for w in workers if w != lost] or workers
        if self._kinds[s] == "dense":
            # Only where the shard fits next to the worker's other shards.
            caps = self._capacities(alive)
            need = self._info[s]["nbytes"] + 8.0 * self.n_samples**2
            used = {w: 0.0 for w in alive}
            for t, w in enumerate(self._workers):
                if t != s and w in used and self._info[t] is not None:
                    used[w] += self._info[t]["nbytes"] + 8.0 * self.n_samples**2
            alive = [w for w in alive if caps[w] is None or used[w] + need <= caps[w]]
            if not alive:
                raise ShardLostError(
                    f"the worker holding kernel shard {s} was lost and no live worker has "
                    f"room for its {fmt_bytes(need)} (at most {WORKER_MEMORY_FRACTION:g} of "
                    "a worker's memory_limit)"
                ) from exc
        load = {w: 0.0 for w in alive}
        for t, w in enumerate(self._workers):
            if t != s and w in load:
                load[w] += self._costs[t]
        self._workers[s] = min(alive, key=lambda w: (load[w], w))
        old = self._futures[s]
        self._futures[s] = self._actors[s] = None
        self._release([old])
        self._adopt(s, self._submit(s, self.functions.X))
        self.traffic.n_rebuilt += 1

    # ------------------------------------------------------------ requests
    def _request(self, method, calls):
        """Send ``calls`` (shard, args) together; answers in the same order.

        One round trip. A shard whose worker is lost is rebuilt and asked
        again (up to ``retries`` times); any other error is raised as is.
        """
        if self._closed:
            raise ValueError(
                "this sharded bank was closed (storage.close()); build it again with "
                "KernelBank.from_specs(X, specs, client=client)"
            )
        t = self.traffic
        t.n_round_trips += 1
        pending = []
        for s, args in calls:
            t.n_messages += 1
            t.bytes_sent += _nbytes(args)
            pending.append(self._send(s, method, args))
        out = []
        for (s, args), fut in zip(calls, pending):
            tries = 0
            while True:
                try:
                    res = self._wait(s, fut, self._futures[s])
                    break
                except Exception as exc:
                    if not _is_lost(exc):
                        raise
                    if tries >= self.retries:
                        raise ShardLostError(
                            f"the worker holding kernel shard {s} ({self._parts[s].size} "
                            f"kernels, on {self._workers[s]}) was lost during a {method!r} "
                            f"request, and {tries} rebuild(s) did not help (retries="
                            f"{self.retries}). No partial answer was used; the client is "
                            "still usable: build the bank again, or raise retries"
                        ) from exc
                    tries += 1
                    self._rebuild(s, exc)
                    t.n_messages += 1
                    t.bytes_sent += _nbytes(args)
                    fut = self._send(s, method, args)
            t.bytes_received += _nbytes(res)
            out.append(res)
        return out

    def _send(self, s, method, args):
        actor = self._actors[s]
        if actor is None:
            return _Failed(ShardLostError(f"kernel shard {s} has no actor"))
        try:
            return getattr(actor, method)(*args)
        except Exception as exc:  # the worker was already gone when sending
            if not _is_lost(exc):
                raise
            return _Failed(exc)

    def _weights(self, w):
        """``(shard, encoded weights)`` for the shards with a non-zero weight."""
        calls = []
        for s, ks in enumerate(self._parts):
            ws = w[ks]
            if np.any(ws != 0.0):
                calls.append((s, _encode(ws)))
        return calls

    # ------------------------------------------------------------ the verbs
    @property
    def n_shards(self):
        """Number of shards (at most the number of feature groups)."""
        return len(self._parts)

    @property
    def shards(self):
        """One :class:`ShardInfo` per shard: worker, kernels, storage, bytes, cost."""
        return tuple(
            ShardInfo(
                self._workers[s],
                self._parts[s],
                self._info[s]["storage"],
                int(self._info[s]["nbytes"]),
                float(self._costs[s]),
            )
            for s in range(self.n_shards)
        )

    @property
    def nbytes(self):
        """Bytes held by the shards on their workers."""
        return int(sum(i["nbytes"] for i in self._info))

    def _summed(self, parts, out):
        out[...] = parts[0]
        for p in parts[1:]:
            out += p
        return out

    def diag(self, w):
        calls = [(s, (ws,)) for s, ws in self._weights(w)]
        return self._summed(self._request("diag", calls), np.empty(self.n_samples))

    def rows(self, w, idx, out):
        calls = [(s, (ws, idx)) for s, ws in self._weights(w)]
        return self._summed(self._request("rows", calls), out)

    def combine(self, w, out):
        calls = [(s, (ws,)) for s, ws in self._weights(w)]
        return self._summed(self._request("combine", calls), out)

    def combined_block(self, w, idx):
        """``K(w)[idx][:, idx]`` (``r x r``), from the rows cached on the workers.

        Each active shard computes the rows ``idx`` of its part of ``K(w)``
        (or finds them in its row cache, kept for the current ``w``) and
        sends back only the ``r x r`` block: ``8 r^2`` bytes, not ``8 r n``.
        """
        calls = [(s, (ws, idx)) for s, ws in self._weights(w)]
        return self._summed(self._request("combined_block", calls),
                            np.empty((idx.size, idx.size)))

    def combined_matvec(self, w, idx, coef):
        """``sum_j coef[j] K(w)[idx[j]]`` (``n`` numbers), from the rows cached on the workers.

        The solver's gradient update after a block, and the gradient of a
        warm start (``idx`` the support, ``coef`` ``v_S``): ``8 n`` bytes
        back per active shard, whatever ``len(idx)``.
        """
        calls = [(s, (ws, idx, coef)) for s, ws in self._weights(w)]
        return self._summed(self._request("combined_matvec", calls), np.empty(self.n_samples))

    def _route(self, kernels):
        """Per shard: ``(positions in kernels, local indices)``; None means all kernels."""
        if kernels is None:
            return [(s, ks, None) for s, ks in enumerate(self._parts)]
        shard = self._shard_of[kernels]
        out = []
        for s in np.unique(shard).tolist():
            pos = np.flatnonzero(shard == s)
            out.append((s, pos, self._local[kernels[pos]]))
        return out

    def quad_forms(self, v, support, kernels=None):
        size = self.n_kernels if kernels is None else kernels.size
        q = np.zeros(size)
        if support.size == 0 or size == 0:
            return q
        vS = np.ascontiguousarray(v[support])
        routes = self._route(kernels)
        answers = self._request("quad_forms", [(s, (vS, support, loc)) for s, _, loc in routes])
        for (_, pos, _), qs in zip(routes, answers):
            q[pos] = qs
        return q

    def blocks(self, kernels, rows, cols):
        out = np.empty((kernels.size, rows.size, cols.size))
        if out.size == 0:
            return out
        routes = self._route(kernels)
        answers = self._request("blocks", [(s, (loc, rows, cols)) for s, _, loc in routes])
        for (_, pos, _), b in zip(routes, answers):
            out[pos] = b
        return out

    # ------------------------------------------------------------ lifetime
    def _release(self, futures):
        """Tell the scheduler to forget ``futures`` now, whatever else refers to them.

        ``Future.release`` only drops one reference, and the scheduler
        forgets a key when the client's last reference is gone. An actor
        handle holds its own future, and the closures of its method calls
        refer to the handle in reference cycles, so the last reference goes
        only when Python's cycle collector runs (seconds to minutes later),
        and the shard's kernels stay on its worker until then. Cancelling
        the keys releases them on the scheduler at once; the workers then
        drop the actors and their memory.
        """
        futures = [f for f in futures if f is not None]
        if not futures:
            return
        try:
            self.client.cancel(futures, force=True)
        except Exception:  # the client or its scheduler is already gone
            pass

    def close(self):
        """Release the shards' actors at once (their workers free the memory).

        Later requests fail with a ``ValueError``; closing twice is harmless.
        """
        self._closed = True
        self._release(self._futures)
        self._futures = [None] * len(self._futures)
        self._actors = [None] * len(self._actors)

    def __repr__(self):
        return (
            f"ShardedStorage(n_kernels={self.n_kernels}, n_samples={self.n_samples}, "
            f"n_shards={self.n_shards}, storage={self._storage!r})"
        )


class _Failed:
    """A request that could not be sent because the worker was gone."""

    def __init__(self, exc):
        self.exc = exc

    def result(self, timeout=None):
        raise self.exc


def _is_lost(exc):
    """Whether ``exc`` says that a worker (or the connection to it) was lost."""
    if isinstance(exc, (ShardLostError, OSError)):
        return True
    msg = str(exc).lower()
    return isinstance(exc, RuntimeError) and ("lost" in msg or "closed" in msg)
