"""Progress lines during one long oracle call (an estimator's ``verbose=2``).

``verbose=2`` prints a line after every oracle call. A call over many
points with kernels computed on the fly can take minutes or hours, and
would print nothing until it ends. Inside :func:`heartbeat` (entered by an
estimator's ``fit`` at ``verbose >= 2``) the row path of the SVM solver
runs a :class:`Beat` thread while each call is running: every
:data:`PERIOD` seconds it prints how long the call has run, the kernel rows
computed so far and their rate, the row cache's hit rate, and how long
computing every row once takes at that rate (a lower bound on a call).
The thread only reads counters the solver updates anyway; nothing is added
to the jitted loops.
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
import threading
import time

__all__ = ["PERIOD", "heartbeat", "Beat"]

#: Seconds between two lines of a running call.
PERIOD = 10.0

_NAME = contextvars.ContextVar("mklopt_heartbeat", default=None)


@contextlib.contextmanager
def heartbeat(verbose, name):
    """Lines from long oracle calls inside this block, when ``verbose >= 2``.

    ``name`` prefixes the lines (the estimator's class name). Any other
    ``verbose`` (an invalid one included: the fit rejects it) does nothing.
    """
    on = isinstance(verbose, int) and not isinstance(verbose, bool) and verbose >= 2
    token = _NAME.set(name) if on else None
    try:
        yield
    finally:
        if token is not None:
            _NAME.reset(token)


def _write(line):
    from .estimators._progress import write

    write(line)


def _duration(seconds):
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


class Beat:
    """A thread that reports on one running call of the row path (see the module notes).

    Parameters
    ----------
    stats : SolveStats
        The call's statistics, updated by the solver (``rows_computed``).
    cache : RowCache or None
        Its row cache (``n_hits``, ``n_misses`` since construction).
    n : int
        Rows of the problem.
    """

    def __init__(self, stats, cache, n):
        self.name = _NAME.get()
        self.stats, self.cache, self.n = stats, cache, int(n)
        self._done = threading.Event()
        self._t0 = time.perf_counter()
        self._hits0 = 0 if cache is None else cache.n_hits
        self._miss0 = 0 if cache is None else cache.n_misses
        self._thread = None
        if self.name is not None:
            self._thread = threading.Thread(target=self._run, daemon=True,
                                            name="mklopt-heartbeat")
            self._thread.start()

    def line(self):
        """The progress line of the call so far."""
        elapsed = time.perf_counter() - self._t0
        rows = int(self.stats.rows_computed)
        rate = rows / elapsed if elapsed > 0 else 0.0
        parts = [f"[{self.name}] oracle call running for {_duration(elapsed)}",
                 f"{rows:,} kernel rows computed ({rate:,.0f} rows/s)"]
        if self.cache is not None:
            hits = self.cache.n_hits - self._hits0
            served = hits + self.cache.n_misses - self._miss0
            if served:
                parts.append(f"row cache hits {100.0 * hits / served:.0f} %")
        if rate > 0:
            parts.append(f"every one of the {self.n:,} rows once takes "
                         f"{_duration(self.n / rate)} at this rate")
        return ", ".join(parts)

    def _run(self):
        while not self._done.wait(PERIOD):
            try:
                _write(self.line())
            except Exception:  # pragma: no cover - never break a solve for a progress line
                sys.stderr.write("mklopt: a progress line failed\n")

    def stop(self):
        """End the thread (the call is over)."""
        self._done.set()
        if self._thread is not None:
            self._thread.join()
