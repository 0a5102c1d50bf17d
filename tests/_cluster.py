"""A two-process Dask cluster for the tests that need one (sharded banks, parallel fits)."""

import contextlib
import os
import signal
from pathlib import Path

import mklopt


@contextlib.contextmanager
def local_client(**cluster_kwargs):
    """A ``Client`` on ``LocalCluster(n_workers=2, processes=True)``, closed on exit.

    ``cluster_kwargs`` go to ``LocalCluster`` (e.g. ``memory_limit="600MB"``).
    """
    import dask
    import distributed  # optional: the modules using this importorskip it first

    # A LocalCluster closes a worker's nanny for good when, 15 s (its
    # lost-worker-timeout) after any removal of a worker of that name, no
    # worker of the name is registered. The fault tests kill the same
    # worker again and again: under load, a second kill's restart was
    # still under way when the first kill's timer fired, the nanny was
    # closed, and every later test met a one-worker cluster (the scatters
    # and placements the tests assert then differ, and waits for two
    # workers time out). A killed worker here is always restarted by its
    # nanny, so the cluster never gives a name up while the module runs.
    # Dask's Active Memory Manager is off, as Dask's documentation of
    # ``scatter(broadcast=True)`` asks: its ReduceReplicas policy drops the
    # extra copies of a broadcast bank every 2 s while no task waits on
    # them, so the copies a test found on the workers depended on how slowly
    # the machine ran (on a busy one, the bank was on one worker only).
    settings = {"distributed.deploy.lost-worker-timeout": "1 day",
                "distributed.scheduler.active-memory-manager.start": False}
    with dask.config.set(settings):
        with _cluster(distributed, cluster_kwargs) as cluster, distributed.Client(cluster) as c:
            yield c


def _cluster(distributed, cluster_kwargs):
    # Workers are new interpreters: make them import the mklopt under test
    # (a source tree may shadow an installed copy only on this side).
    root = str(Path(mklopt.__file__).resolve().parents[1])
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = root + ("" if old is None else os.pathsep + old)
    try:
        return distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=50,
            **cluster_kwargs,
        )
    finally:
        if old is None:
            os.environ.pop("PYTHONPATH")
        else:
            os.environ["PYTHONPATH"] = old


class Hang(Exception):
    """Raised by :func:`no_hang` when its block outlives its time."""


@contextlib.contextmanager
def no_hang(seconds):
    """Fail (raise :class:`Hang`) instead of blocking when the block runs over ``seconds``.

    SIGALRM interrupts the main thread's waits on Dask (they wait in slices
    with timeouts, so the handler runs), which turns a hang into a failed
    test rather than a stuck CI job.
    """
    import signal

    def handler(signum, frame):
        raise Hang(f"still running after {seconds} s")

    old = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def shards_on_workers(client):
    """``(actors held by the workers, mklopt-shard tasks the scheduler knows)``."""

    def n_actors(dask_worker):
        return len(dask_worker.state.actors)

    def shard_tasks(dask_scheduler):
        return [str(k) for k in dask_scheduler.tasks if str(k).startswith("mklopt-shard")]

    return sum(client.run(n_actors).values()), client.run_on_scheduler(shard_tasks)


#: How long a test waits for a cluster event (a worker's death seen by the
#: scheduler, a restarted worker joining) before it fails. Generous: on a
#: loaded 2-core machine a restarted worker takes tens of seconds to import
#: mklopt and numba, and an event that never happens still fails the test.
EVENT_SECONDS = 300.0


def wait_for(predicate, what, seconds=EVENT_SECONDS):
    """Return once ``predicate()`` is true; fail (AssertionError) after ``seconds``.

    The polling interval is short and the bound generous: the test waits on
    the event, not on a guess of how long it takes.
    """
    import time

    end = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError(f"{what}: not after {seconds} s")
        time.sleep(0.05)


def workers_of(client):
    """The addresses of the workers the scheduler knows, as a set.

    Asked of the scheduler, not read from ``client.scheduler_info()``, whose
    cached identity the client's periodic refresh can empty in between.
    """
    from mklopt.kernels.sharded import _workers_info

    return set(_workers_info(client))


def wait_for_workers(client, n=2, seconds=EVENT_SECONDS):
    """Wait until ``n`` workers are up (a killed one restarted by its nanny)."""
    client.wait_for_workers(n, timeout=seconds)


def kill_worker(client, address, seconds=EVENT_SECONDS):
    """SIGKILL the worker at ``address``, and return once the scheduler has removed it.

    Waiting for the removal fixes the order of events: whatever the test
    does next meets a cluster that knows the worker is gone, however slowly
    a loaded machine delivers the news.
    """
    pid = client.run(os.getpid, workers=[address])[address]
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: address not in workers_of(client), f"worker {address} removed")


def kill_last_holder(client, future, seconds=EVENT_SECONDS):
    """Kill the one worker holding ``future``'s data, so that the data is lost.

    A task that ran on another worker fetched its own copy of its input
    (the scheduler moves tasks off a busy worker, as when the first round
    compiles numba there), so the data may be on several workers: all but
    one copy are dropped first. Returns the killed worker's address.
    """
    client.replicate([future], n=1)
    wait_for(lambda: len(client.who_has([future])[future.key]) == 1,
             "the data on one worker only", seconds)
    (holder,) = client.who_has([future])[future.key]
    kill_worker(client, holder, seconds)
    return holder


def wait_released(client, seconds=2.0):
    """``shards_on_workers`` once it is ``(0, [])`` or ``seconds`` have passed."""
    import time

    end = time.monotonic() + seconds
    while True:
        held = shards_on_workers(client)
        if held == (0, []) or time.monotonic() > end:
            return held
        time.sleep(0.05)


class KillOnce:
    """A fit callback that kills the Dask worker it runs on, at its second oracle call.

    Only the first time over all processes: ``marker`` (a file path) records
    that a worker was killed. On the client (not a worker) it does nothing;
    with ``address``, only on the worker at that address.
    """

    def __init__(self, marker, address=None):
        self.marker = str(marker)
        self.address = address

    def __call__(self, progress):
        import distributed

        if progress.n_oracle_calls == 2 and not os.path.exists(self.marker):
            try:
                worker = distributed.get_worker()
            except ValueError:
                return  # not on a worker
            if self.address is not None and worker.address != self.address:
                return
            with open(self.marker, "w") as fh:
                fh.write(str(os.getpid()))
            os.kill(os.getpid(), signal.SIGKILL)


@contextlib.contextmanager
def first_scatter_to_one_worker(client):
    """Within the block, ``client``'s first scatter reaches one worker only: yields
    ``(holder, calls)``, that worker's address and the keywords of every scatter.

    As if the other workers had joined after the scatter (one restarted after
    a crash holds no copy of what was scattered before).
    """
    wait_for_workers(client, 2)
    holder = sorted(workers_of(client))[0]
    real = client.scatter
    calls = []

    def scatter(data, **kw):
        calls.append(kw)
        if len(calls) == 1:
            return real(data, workers=[holder], broadcast=False, hash=False)
        return real(data, **kw)

    client.scatter = scatter
    try:
        yield holder, calls
    finally:
        del client.scatter
        wait_for_workers(client, 2)
