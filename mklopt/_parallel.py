"""Independent fits in parallel through joblib.

One-vs-one pairs and benchmark splits are independent, so they can run at
the same time. mklopt follows scikit-learn's convention: an ``n_jobs``
argument handed to :class:`joblib.Parallel`, which also honours a backend
chosen by the caller, such as ``joblib.parallel_backend("dask")`` to send
the fits to a Dask cluster as tasks. Each fit runs exactly the code of the
serial loop on the same inputs, and the results come back in the serial
order, so the answers do not depend on ``n_jobs`` or the backend.

Inside ``joblib.parallel_backend("dask")`` the fits are submitted to the
backend's Dask client directly, one task per fit, named after what it runs
(``mklopt-pair-3-vs-7-<token>``, see :func:`task_names`), rather than
through joblib's Dask backend: a task that fails for good (its workers kept
dying, Dask's ``KilledWorker``) then fails the whole call at once, where
joblib's backend was seen to wait for it for ever. A worker lost while it
runs a fit is Dask's business: the scheduler runs the task again elsewhere,
up to ``distributed.scheduler.allowed-failures`` times.

joblib is not a dependency of the core (it comes with scikit-learn and
with Dask's joblib support): it is imported (through :mod:`mklopt._optional`)
only here, and only needed when ``n_jobs`` asks for more than one job. With
``n_jobs=None`` it is used when installed, so that a ``parallel_backend``
context applies (``None`` then means the context's choice, 1 outside any
context).
"""

from __future__ import annotations

import contextvars
import numbers
import os
import uuid
from concurrent.futures import CancelledError
from contextlib import contextmanager

import numba

from ._optional import optional

__all__ = ["check_n_jobs", "client_map", "parallel_map", "task_names"]

_JOBLIB_HINT = "install it with pip install joblib (it comes with scikit-learn)"


def check_n_jobs(n_jobs, name="n_jobs"):
    """Validate ``n_jobs``: None or a non-zero int (negative counts back from the CPUs).

    Raises
    ------
    TypeError, ValueError
        Naming the argument.
    """
    if n_jobs is None:
        return None
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, numbers.Integral):
        raise TypeError(
            f"{name} must be None or an int (1 for serial, -1 for all cores), got "
            f"{type(n_jobs).__name__} {n_jobs!r}"
        )
    if n_jobs == 0:
        raise ValueError(
            f"{name}=0 runs nothing; use None or 1 for serial, k > 1 for k jobs, -1 for all cores"
        )
    return int(n_jobs)


def _joblib(n_jobs, name):
    """joblib, or None when it is missing and not needed; an ImportError when needed."""
    joblib = optional("joblib")
    if joblib is None:
        if n_jobs in (None, 1):
            return None
        raise ImportError(
            f"{name}={n_jobs} runs fits in parallel through joblib, which is not installed; "
            f"{_JOBLIB_HINT}, or leave {name}=None"
        )
    return joblib


@contextmanager
def _worker_threads(parent_pid):
    """Match numba's threads to the worker a fit runs on.

    In the calling process (serial or threading backends) nothing changes.
    joblib's process backend already sets ``NUMBA_NUM_THREADS`` in its
    workers to the cores per job; on a Dask worker the numba threads are set
    to the worker's threads, so that several workers on one machine do not
    oversubscribe it (as the shards of a sharded bank do).
    """
    if os.getpid() == parent_pid:
        yield
        return
    threads = None
    distributed = optional("distributed")
    if distributed is not None:
        try:
            threads = int(distributed.get_worker().state.nthreads)
        except (ValueError, AttributeError):  # not on a Dask worker
            pass
    if threads is None:
        yield
        return
    old = numba.get_num_threads()
    numba.set_num_threads(max(1, min(threads, numba.config.NUMBA_NUM_THREADS)))
    try:
        yield
    finally:
        numba.set_num_threads(old)


_TASK_NAMES = contextvars.ContextVar("mklopt_task_names", default=None)


@contextmanager
def task_names(names):
    """Name the Dask tasks of the :func:`parallel_map` calls made in this block.

    Parameters
    ----------
    names : iterable of str
        One name per task, in the order of the tasks (for example
        ``"pair-3-vs-7"``); a task's key is ``mklopt-<name>-<token>``, shown
        by the dashboard and the scheduler. Tasks beyond the list are named
        ``fit-<k>``. Without Dask the names are not used.
    """
    token = _TASK_NAMES.set(list(names))
    try:
        yield
    finally:
        _TASK_NAMES.reset(token)


def _dask_client(joblib):
    """The client of an active ``joblib.parallel_backend("dask")`` context, else None."""
    try:
        backend = joblib.parallel.get_active_backend()[0]
    except (AttributeError, ImportError):  # pragma: no cover - very old joblib
        return None
    # joblib's Dask backend holds a distributed.Client; no other backend does.
    client = getattr(backend, "client", None)
    distributed = optional("distributed") if client is not None else None
    if distributed is None or not isinstance(client, distributed.Client):
        return None
    return client


def _scatter_shared(client, tasks):
    """``tasks`` with every argument object that several tasks share replaced by its future.

    The one-vs-one pairs of a fit share their plan, which holds the kernel
    bank of all training points: sent with each task it would travel once
    per pair. Scattered once to every worker (``broadcast``, so that a task
    retried on another worker finds a copy), it travels once; the workers
    receive the same object, so the tasks compute what they compute
    serially.
    """
    seen, shared = {}, {}
    for args in tasks:
        for a in args:
            if isinstance(a, (int, float, str, bool, type(None))):
                continue
            seen[id(a)] = seen.get(id(a), 0) + 1
    if len(tasks) < 2:
        return tasks
    for args in tasks:
        for a in args:
            if seen.get(id(a), 0) > 1 and id(a) not in shared:
                shared[id(a)] = client.scatter(a, broadcast=True, hash=False)
    if not shared:
        return tasks
    return [tuple(shared.get(id(a), a) for a in args) for args in tasks]


def _on_dask(client, func, tasks, pid, on_done=None):
    """``parallel_map`` on a Dask cluster: one named task per fit, results in order."""
    names = _TASK_NAMES.get() or []
    token = uuid.uuid4().hex[:8]
    tasks = [tuple(args) for args in tasks]
    futures = []
    try:
        tasks = _scatter_shared(client, tasks)
        for k, args in enumerate(tasks):
            name = names[k] if k < len(names) else f"fit-{k}"
            # Submitted in order: the scheduler starts earlier tasks first
            # (the callers put the longest fits first).
            futures.append(
                client.submit(_call, func, args, pid, key=f"mklopt-{name}-{token}", pure=False)
            )
        if on_done is None:
            return client.gather(futures)
        distributed = optional("distributed")
        index = {f.key: k for k, f in enumerate(futures)}
        results = [None] * len(futures)
        for future, value in distributed.as_completed(futures, with_results=True):
            k = index[future.key]
            results[k] = value
            on_done(k, value)
        return results
    finally:
        # After an error (a KilledWorker, a fit that raised) or an interrupt,
        # nothing is left running on the cluster; after success this only
        # drops the results the workers still hold.
        client.cancel(futures)


def client_map(client, func, shared, tasks, names):
    """``[func(shared, *args) for args in tasks]`` as named tasks on a Dask client.

    ``shared`` (a large input every task reads, such as a kernel bank) is
    scattered to every worker once, not sent with each task; a copy on each
    worker lets a task whose worker died run again elsewhere (Dask retries
    it, up to ``distributed.scheduler.allowed-failures`` times, then raises
    ``KilledWorker`` naming it). A worker that joins after the scatter (one
    restarted after a crash) holds no copy, so the worker that died may
    have held the last one: Dask then cancels the tasks that read it, and
    they are submitted again on a new scatter, up to the same number of
    times. Task ``k`` is ``mklopt-<names[k]>-<token>`` on the dashboard.
    Whatever happens, nothing is left on the cluster.

    Returns
    -------
    list
        The results in the order of ``tasks``.

    Raises
    ------
    RuntimeError
        When the scattered input was lost more often than Dask would retry
        a task.
    """
    pid = os.getpid()
    tasks = list(tasks)
    token = uuid.uuid4().hex[:8]
    scattered = []

    def scatter():
        scattered.append(client.scatter(shared, broadcast=True, hash=False))
        return scattered[-1]

    def submit(k, big, attempt):
        key = f"mklopt-{names[k]}-{token}" + (f"-again-{attempt}" if attempt else "")
        return client.submit(_call_shared, func, big, tasks[k], pid, key=key, pure=False)

    try:
        results, _ = run_on_scattered(client, submit, list(names), scatter)
    finally:
        # Not cancelled with the tasks (cancelling a key cancels what
        # depends on it): released once they are gone.
        for big in scattered:
            big.release()
    return results


def run_on_scattered(client, submit, names, scatter=None, big=None):
    """Every task's result, the tasks that lost their scattered input run again.

    ``submit(k, big, attempt)`` submits task ``k`` (``names[k]`` in
    messages) reading the scattered future ``big`` and returns its future;
    ``attempt`` counts the rounds (0 first), for new task keys.
    ``scatter()`` scatters the input and returns its future, once at the
    start when ``big`` is None and again after each loss (None: the tasks
    read no scattered input, ``big`` stays None). When the last worker
    holding ``big`` dies, Dask cancels the tasks that read it
    (:func:`gather_surviving`): the lost future is released and those
    tasks are submitted again on a new scatter, up to
    :func:`scatter_retries` times. Whatever happens, no task of a round is
    left running.

    Returns
    -------
    results : list
        In the order of ``names``.
    big : Future or None
        The scattered input the last round read (the caller's to keep or
        release).

    Raises
    ------
    RuntimeError
        When the input was lost more often than that.
    """
    results = [None] * len(names)
    pending = list(range(len(names)))
    for attempt in range(scatter_retries() + 1):
        if big is None and scatter is not None:
            big = scatter()
        futures = []
        try:
            for k in pending:
                futures.append(submit(k, big, attempt))
            done, lost = gather_surviving(futures)
        finally:
            client.cancel(futures)
        for k, value in zip(pending, done, strict=True):
            results[k] = value
        if not lost:
            return results, big
        pending = [pending[i] for i in lost]
        if big is not None:
            big.release()
            big = None
    raise scatter_lost([names[k] for k in pending])


def scatter_retries():
    """How many times tasks whose scattered input was lost are submitted again.

    Dask's own number of retries for a task whose worker died
    (``distributed.scheduler.allowed-failures``, 3 by default).
    """
    dask = optional("dask")
    return int(dask.config.get("distributed.scheduler.allowed-failures", 3))


def scatter_lost(names):
    """The error when a scattered input was lost more often than :func:`scatter_retries`."""
    return RuntimeError(
        f"the input scattered to the Dask workers was lost {scatter_retries() + 1} times "
        f"(workers died holding its last copy) before tasks {names} could finish; check "
        "the workers' memory limits and logs"
    )


def gather_surviving(futures):
    """``(results, lost)``: the futures' results, and the indices of the cancelled ones.

    Dask cancels the tasks that read a scattered input when the last worker
    holding it dies (scattered data cannot be recomputed); the caller
    scatters the input again and submits those tasks again. Their entries
    in ``results`` are None. The first task that failed otherwise raises
    its error (a fit's exception, ``KilledWorker``).
    """
    distributed = optional("distributed")
    _wait_all(distributed, futures)
    results, lost = [None] * len(futures), []
    for k, future in enumerate(futures):
        if future.status == "cancelled":
            lost.append(k)
        else:
            results[k] = future.result()
    return results, lost


def _wait_all(distributed, futures):
    """Until every future is finished, failed or cancelled.

    ``distributed.wait`` raises as soon as one future is cancelled; the
    others may still be running, so wait for those too.
    """
    remaining = list(futures)
    while remaining:
        try:
            distributed.wait(remaining)
        except CancelledError:
            pass
        remaining = [f for f in remaining if f.status not in ("finished", "error", "cancelled")]


def _call_shared(func, shared, args, parent_pid):
    with _worker_threads(parent_pid):
        return func(shared, *args)


def _call(func, args, parent_pid):
    with _worker_threads(parent_pid):
        return func(*args)


def _call_indexed(k, func, args, parent_pid):
    return k, _call(func, args, parent_pid)


def _serially(func, tasks, on_done):
    """``[func(*args) for args in tasks]`` in this process, reporting each result."""
    results = []
    for k, args in enumerate(tasks):
        results.append(func(*args))
        if on_done is not None:
            on_done(k, results[-1])
    return results


def runs_in_parallel(n_jobs):
    """Whether :func:`parallel_map` with ``n_jobs`` would run tasks at the same time.

    ``n_jobs=None`` follows an active ``joblib.parallel_backend`` context
    (as scikit-learn's), so a fit inside ``parallel_backend("dask")`` runs
    in parallel too.
    """
    joblib = optional("joblib")
    if joblib is None:
        return n_jobs not in (None, 1)
    return joblib.effective_n_jobs(n_jobs) != 1


def parallel_map(func, tasks, n_jobs=None, name="n_jobs", n_tasks=None, on_done=None):
    """``[func(*args) for args in tasks]``, possibly in parallel through joblib.

    Parameters
    ----------
    func : callable
        Picklable (a module-level function or a bound method of a picklable
        object) when the backend runs other processes or machines.
    tasks : iterable of tuple
        Arguments of each call.
    n_jobs : int or None, default=None
        As scikit-learn's: ``None`` means 1 unless a
        ``joblib.parallel_backend`` context says otherwise, ``-1`` all cores.
    name : str, default="n_jobs"
        The argument's name, for the messages.
    n_tasks : int, optional
        The number of tasks when ``tasks`` is a generator, which is then
        consumed lazily (serially one task at a time, so that only one
        task's arguments exist at once).
    on_done : callable, optional
        ``on_done(k, result)`` in the calling process as each task ends
        (``k`` its position in ``tasks``), in the order they end: the hook
        of the estimators' progress lines.

    Returns
    -------
    list
        The results in the order of ``tasks``.
    """
    n_jobs = check_n_jobs(n_jobs, name)
    if n_tasks is None:
        tasks = list(tasks)
        n_tasks = len(tasks)
    joblib = _joblib(n_jobs, name)
    if joblib is None or n_tasks < 1:
        return _serially(func, tasks, on_done)
    pid = os.getpid()
    client = _dask_client(joblib)
    if client is not None:
        # On a cluster even one task runs there: as a named task, retried
        # when its worker dies, and off the client's memory.
        return _on_dask(client, func, tasks, pid, on_done)
    if n_tasks == 1:
        return _serially(func, tasks, on_done)
    # Every task is a whole fit (tens of milliseconds at least), so joblib's
    # automatic batching, which groups tasks that end quickly, only hurts:
    # two fits in one batch cannot go to two workers. joblib's default
    # pre-dispatch (2 n_jobs tasks ahead) keeps a lazy ``tasks`` from
    # holding every task's arguments at once.
    if on_done is None:
        parallel = joblib.Parallel(n_jobs=n_jobs, batch_size=1)
        return parallel(joblib.delayed(_call)(func, args, pid) for args in tasks)
    # Results as they end (joblib >= 1.4), each tagged with its position.
    parallel = joblib.Parallel(n_jobs=n_jobs, batch_size=1, return_as="generator_unordered")
    results = [None] * n_tasks
    for k, value in parallel(
        joblib.delayed(_call_indexed)(k, func, args, pid) for k, args in enumerate(tasks)
    ):
        results[k] = value
        on_done(k, value)
    return results
