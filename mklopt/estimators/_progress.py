"""What the estimators print while they fit, by their ``verbose`` level.

scikit-learn's convention: an integer ``verbose``, 0 (the default) prints
nothing, higher levels print more, to standard error.

* ``verbose=1``: one line (or one step of a progress bar) as each unit of
  work ends: a binary problem, a one-vs-one pair, or a (fold, pair, C)
  point of the cross-validated C path. Each says which unit, how many of
  how many, the elapsed time and an estimate of the time left, with the
  unit's relative gap and oracle calls.
* ``verbose=2``: also one line per oracle call: the value, the best
  point's relative gap, the calls so far and, when the kernels are
  computed as they are read (not stored), the kernel rows computed per
  second and the hit rate of the row cache in that call.

With tqdm installed (the ``progress`` extra) the level-1 lines are a tqdm
bar, and the level-2 lines are written above it. Without it they are plain
lines. Units run in parallel (``n_jobs``, a joblib backend, Dask) are
reported as they end, in the calling process; oracle-call lines of a unit
running in another process are printed by that process.

This is separate from the ``"mklopt"`` logger, which the driver writes at
INFO level, at most once a second, for any :func:`mklopt.solve` run:
``verbose`` does not configure logging, and logging does not print unless
the application configures it.

At ``verbose=0`` nothing here runs inside a fit: no callback is installed
and no counter is read.
"""

from __future__ import annotations

import contextvars
import math
import numbers
import sys
import time

from .._optional import optional

__all__ = ["check_verbose", "TaskProgress", "call_lines", "labelled", "PointTicker"]

#: Storages whose kernel rows are computed as they are read: their oracle
#: calls report rows per second (stored kernels only copy or sum rows).
_COMPUTED = ("on_the_fly", "sharded", "feature_map")


def check_verbose(verbose):
    """``verbose`` as an int >= 0 (``True``/``False`` are 1/0), or an error naming it."""
    if isinstance(verbose, bool):
        return int(verbose)
    if isinstance(verbose, numbers.Integral):
        if verbose < 0:
            raise ValueError(
                f"verbose must be >= 0 (0: silent, 1: a line per problem, 2: also a line per "
                f"oracle call), got {verbose!r}"
            )
        return int(verbose)
    raise TypeError(
        "verbose must be an int (0: silent, 1: a line per problem, 2: also a line per oracle "
        f"call), got {type(verbose).__name__} {verbose!r}"
    )


def _tqdm():
    """The ``tqdm`` module, or None without it (imported when a fit asks for it)."""
    return optional("tqdm")


def write(line):
    """Print ``line`` to standard error, above a tqdm bar if one is showing."""
    tq = _tqdm()
    if tq is not None:
        tq.tqdm.write(line, file=sys.stderr)
    else:
        print(line, file=sys.stderr, flush=True)


def _duration(seconds):
    """``"42.1 s"``, ``"3 min 5 s"`` or ``"2 h 10 min"``."""
    if not math.isfinite(seconds):
        return "?"
    if seconds < 60:
        return f"{seconds:.1f} s"
    if seconds < 3600:
        return f"{int(seconds // 60)} min {int(seconds % 60)} s"
    return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60)} min"


def _calls(n):
    return f"{n} oracle call" + ("" if n == 1 else "s")


def run_summary(result):
    """``"rel. gap 3.2e-03, 7 oracle calls"`` of a :class:`~mklopt.Result` (no gap if nan)."""
    parts = []
    gap = float(getattr(result, "rel_gap", math.nan))
    if not math.isnan(gap):
        parts.append(f"rel. gap {gap:.2e}")
    parts.append(_calls(int(result.n_oracle_calls)))
    if not result.converged:
        parts.append(f"not converged ({result.reason})")
    return ", ".join(parts)


def fold_summary(stats):
    """How a fold's C path went, from its ``stats`` (arrays of shape (n_Cs, n_pairs))."""
    return (f"max rel. gap {float(stats['rel_gap'].max()):.2e}, "
            + _calls(int(stats["n_oracle_calls"].sum())))


class TaskProgress:
    """Level-1 progress over ``total`` units of work, in the calling process.

    Parameters
    ----------
    verbose : int
        Nothing is shown below 1.
    name : str
        The estimator's name, the prefix of every line.
    total : int
        Units of work.
    unit : str
        What a unit is (``"pair"``, ``"path point"``), in the singular.
    """

    def __init__(self, verbose, name, total, unit):
        self.on = verbose >= 1 and total > 0
        self.name = name
        self.total = int(total)
        self.unit = unit
        self.done = 0
        self.t0 = time.perf_counter()
        self.bar = None
        #: units reported by :class:`PointTicker` per task, in this process
        self.ticked = {}
        if self.on:
            tq = _tqdm()
            if tq is not None:
                self.bar = tq.tqdm(total=self.total, desc=name, unit=unit, file=sys.stderr,
                                   dynamic_ncols=True)

    def advance(self, label, detail="", n=1):
        """``n`` more units ended; ``label`` says which, ``detail`` how they went."""
        if not self.on or n <= 0:
            return
        first = self.done + 1
        self.done += n
        if self.bar is not None:
            self.bar.set_postfix_str(f"{label}: {detail}" if detail else label, refresh=False)
            self.bar.update(n)
            return
        elapsed = time.perf_counter() - self.t0
        left = elapsed / self.done * (self.total - self.done)
        which = f"{first}" if n == 1 else f"{first}-{self.done}"
        units = self.unit if n == 1 else f"{self.unit}s"
        write(
            f"[{self.name}] {units} {which} of {self.total} ({label})"
            + (f": {detail}" if detail else "")
            + f"; elapsed {_duration(elapsed)}, ETA {_duration(left)}"
        )

    def close(self):
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class PointTicker:
    """Reports the units of one task as they end, when the task runs in this process.

    A task sent to another process gets a copy without the progress (the
    bar stays here); the caller then reports the task's units when its
    result comes back (:meth:`rest`).
    """

    def __init__(self, progress, task):
        self.progress = progress if progress is not None and progress.on else None
        self.task = task

    def __getstate__(self):
        return {"progress": None, "task": self.task}

    def __call__(self, label, detail=""):
        p = self.progress
        if p is not None:
            p.ticked[self.task] = p.ticked.get(self.task, 0) + 1
            p.advance(label, detail)

    @staticmethod
    def rest(progress, task, units, label, detail=""):
        """Report what of a finished task's ``units`` no ticker reported here."""
        left = units - progress.ticked.get(task, 0)
        progress.advance(label, detail, n=left)


# The unit of work running in this thread or process, named for the
# oracle-call lines (set by ``labelled`` where the unit starts, so that the
# name travels to the process that runs it).
_LABEL = contextvars.ContextVar("mklopt_progress_label", default="")


class labelled:  # noqa: N801 - used like a function
    """``fn`` called with the oracle-call lines of the call named ``label``.

    ``labelled(fn)(label, *args)`` runs ``fn(*args)``; picklable when
    ``fn`` is, so that the name goes with a task to another process.
    """

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, label, *args):
        token = _LABEL.set(label)
        try:
            return self.fn(*args)
        finally:
            _LABEL.reset(token)


class _CallLines:
    """A callback writing one line per oracle call, then calling the user's."""

    def __init__(self, name, label, oracle, callback, value_label):
        self.name = name
        self.label = label
        self.oracle = oracle
        self.callback = callback
        self.value_label = value_label
        self.offset = 0  # calls made before the run whose rows arrive here

    def before_run(self, value):
        """The line of a call made before the run (a path's hand-over call).

        The user's callback is not called (it sees the run's rows only); the
        run's calls are numbered after it.
        """
        self.offset += 1
        self._write(self.offset, value, math.nan, 0.0)

    def __call__(self, row):
        self._write(row.n_oracle_calls + self.offset, row.value, row.rel_gap, row.elapsed)
        if self.callback is not None:
            self.callback(row)

    def _write(self, n_calls, value, rel_gap, elapsed):
        where = f"[{self.name}{' ' + self.label if self.label else ''}]"
        parts = [
            f"{where} call {n_calls}",
            f"{self.value_label}={value:.6g}",
        ]
        if not math.isnan(rel_gap):  # boosting has no dual, hence no gap
            parts.append(f"rel. gap {rel_gap:.2e}")
        parts.append(f"elapsed {_duration(elapsed)}")
        stats = getattr(self.oracle, "last_stats", None)
        bank = getattr(self.oracle, "bank", None)
        storage = getattr(getattr(bank, "storage", None), "name", None)
        if stats is not None and storage in _COMPUTED:
            rate = stats.rows_per_second
            if math.isfinite(rate):
                parts.append(f"{rate:,.0f} kernel rows/s")
            seen = stats.rows_cached + stats.rows_computed
            if stats.n_blocks and seen:
                parts.append(f"row cache hits {stats.rows_cached / seen:.0%}")
        write(", ".join(parts))


def call_lines(verbose, name, oracle, callback=None, where="", value_label="J"):
    """The callback to give :func:`mklopt.solve`: ``callback`` itself below level 2.

    Parameters
    ----------
    verbose : int
    name : str
        The estimator's name.
    oracle : object
        The run's oracle; its ``last_stats`` gives the rows per second.
    callback : callable, optional
        The user's callback, called after the line.
    where : str
        Appended to the name of the unit running (e.g. ``"C=10"``).
    value_label : str
        What the value is (``"J"``; boosting's ``"exp loss"``).
    """
    if verbose < 2:
        return callback
    label = " ".join(s for s in (_LABEL.get(), where) if s)
    return _CallLines(name, label, oracle, callback, value_label)
