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
    import distributed  # optional: the modules using this importorskip it first

    # Workers are new interpreters: make them import the mklopt under test
    # (a source tree may shadow an installed copy only on this side).
    root = str(Path(mklopt.__file__).resolve().parents[1])
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = root + ("" if old is None else os.pathsep + old)
    try:
        cluster = distributed.LocalCluster(
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
    client = distributed.Client(cluster)
    try:
        yield client
    finally:
        client.close()
        cluster.close()


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
    client.wait_for_workers(2, timeout=60)
    holder = sorted(client.scheduler_info()["workers"])[0]
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
        client.wait_for_workers(2, timeout=60)
