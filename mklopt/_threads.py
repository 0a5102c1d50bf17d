"""The number of numba threads of each call of a parallel kernel, chosen from measured times.

Why. A parallel region of numba's OpenMP layer is as slow as its slowest
thread, and after it the workers spin before they sleep. On a machine whose
other cores are busy (another CPU-bound job on the shared 2-core VM), a
worker waits for a time slice and spins on a core the main thread needs:
satellite's quadratic forms (86 calls of about 3.5 ms on one thread) took
48 ms a call on two threads beside two CPU-bound processes; beside one, the
whole fit took 2.2 s on two threads against 1.5 s on one, while on a quiet
machine two threads made it 0.95 s against 1.34 s (docs/benchmarks.md,
"Threads on busy cores"). No
size threshold serves both, so each call site keeps the time per unit of
work of its last call on one thread and on all threads, runs on the faster,
and now and then tries the other (at doubling intervals while it confirms
the choice, so that a slow setting is rarely paid for). Calls below the
site's ``min_work`` always run on one thread: starting threads costs more
than they save on small products.

Every kernel behind a :class:`CallThreads` gives the same bits on any
number of threads (its work is split into a fixed number of chunks that are
summed in order), so the choice changes times, never answers. The
measurements are per process and shared by concurrent fits; a race between
two threads only blurs a timing. ``numba.set_num_threads`` is thread-local,
so the setting of one call does not leak into another thread's.
"""

from __future__ import annotations

import time
from contextlib import contextmanager

import numba

__all__ = ["CallThreads"]

#: Longest interval (in calls above ``min_work``) between two tries of the setting not chosen.
MAX_PROBE_INTERVAL = 64


class CallThreads:
    """The thread count of each call of one parallel kernel.

    Parameters
    ----------
    name : str
        The call site, for the reader of a profile.
    min_work : float
        Work units (the site's own measure, e.g. kernel entries) below which
        a call runs on one thread and is not timed.

    Examples
    --------
    >>> site = CallThreads("example", min_work=100)
    >>> with site(10) as threads:  # a small call: one thread
    ...     threads
    1
    """

    def __init__(self, name, min_work):
        self.name = name
        self.min_work = float(min_work)
        self.reset()

    def reset(self):
        """Forget every measurement (the next large calls try both settings again)."""
        self._rate = {}  # threads -> seconds per unit of work of the last call so run
        self._count = 0  # calls above min_work since the last try of the other setting
        self._interval = 4

    def choose(self, work):
        """The threads for a call of ``work`` units (1 up to ``numba.get_num_threads()``)."""
        most = numba.get_num_threads()
        if work < self.min_work or most < 2:
            return 1
        par, one = self._rate.get(most), self._rate.get(1)
        if par is None:
            return most
        if one is None:
            return 1
        best, other = (most, 1) if par < one else (1, most)
        self._count += 1
        if self._count >= self._interval:
            self._count = 0
            return other
        return best

    def _record(self, threads, rate):
        most = numba.get_num_threads()
        before = self._rate.get(1) is not None and self._rate.get(most) is not None
        was_best = before and (self._rate[most] < self._rate[1]) == (threads == most)
        self._rate[threads] = rate
        if not before:
            return
        now_best = (self._rate[most] < self._rate[1]) == (threads == most)
        if not was_best and not now_best:
            # A try of the other setting confirmed the choice: try it less often.
            self._interval = min(2 * self._interval, MAX_PROBE_INTERVAL)
        elif not was_best and now_best:
            self._interval = 4  # the load changed: watch it more closely

    @contextmanager
    def __call__(self, work):
        """Run the body on the chosen threads (yielded), timing it when ``work >= min_work``."""
        threads = self.choose(work)
        old = numba.get_num_threads()
        if threads != old:
            numba.set_num_threads(threads)
        t0 = time.perf_counter()
        try:
            yield threads
        finally:
            seconds = time.perf_counter() - t0
            if threads != old:
                numba.set_num_threads(old)
        if work >= self.min_work and old >= 2:
            self._record(threads, seconds / work)
