"""Compiling mklopt's numba kernels ahead of the work, and saying so when it is slow.

numba compiles each jitted primitive the first time it is called with a
signature and caches the machine code on disk (``cache=True``). A first
run after install therefore spends tens of seconds compiling before any
work; every later process loads the cache in a fraction of a second. This
module keeps that cost visible and out of the user's budget:

- :func:`watch` listens to numba's compile events (``numba.core.event``):
  when a process has compiled for about :data:`SAY_AFTER` seconds it says
  so once, on the ``"mklopt"`` logger (a warning, so that it reaches
  stderr when logging is not configured) and, inside :func:`echo` (an
  estimator at ``verbose >= 1``, ``mklopt bench``), also on stderr;
- :func:`prepare` compiles (or loads from the cache) what an estimator's
  default fit uses, with the signatures the fit calls them with, before
  the fit's ``time_limit`` starts (:func:`mklopt._interrupt.fit_run`);
- :func:`compile_all` (``mklopt compile``) runs every estimator path on a
  tiny problem, with a line per path, so that images and cluster workers
  start with a full cache;
- :func:`compile_seconds` is the process's compile time so far, with which
  a fit stopped by its ``time_limit`` before any point tells how much of the
  limit went to compiling.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import sys
import threading
import time

__all__ = ["SAY_AFTER", "watch", "echo", "prepare", "compile_all", "compile_seconds",
           "compile_note"]

log = logging.getLogger("mklopt")

#: Seconds of compiling after which the process says what it is doing.
SAY_AFTER = 2.0

#: Seconds the default fit's kernels take to compile on a 2-core machine,
#: rounded up: the estimate of the message when nothing better is known.
#: Measured: 19.1 s in a quiet process (docs/benchmarks.md, "What compiles
#: on the default fit's path"), 24.1 s under load (benchmarks/README.md at
#: commit 89ee8cc, "First contact").
REFERENCE_SECONDS = 30.0

_ECHO = contextvars.ContextVar("mklopt_compile_echo", default=False)


class _State:
    """The process's compile bookkeeping (one per process, behind a lock)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.depth = 0
        self.started = 0.0
        self.spent = 0.0  # seconds of outermost compiles that ended
        self.said = False
        self.timer = None
        self.plan = None  # (done weight, total weight) while prepare() runs
        self.installed = False


_state = _State()


def compile_seconds():
    """Seconds this process has spent compiling numba code since :func:`watch`."""
    s = _state
    with s.lock:
        ongoing = time.perf_counter() - s.started if s.depth else 0.0
        return s.spent + ongoing


@contextlib.contextmanager
def echo(on=True):
    """Within the block, the compile message also goes to stderr (``on``)."""
    token = _ECHO.set(bool(on))
    try:
        yield
    finally:
        _ECHO.reset(token)


def _estimate(elapsed):
    plan = _state.plan
    if plan is not None and plan[0] > 0:
        done, total = plan
        return max(elapsed, elapsed * total / done)
    return max(elapsed, REFERENCE_SECONDS)


def message(seconds):
    """The one line said when a process compiles for long."""
    return (f"compiling mklopt's kernels (first run after install, about {seconds:.0f} s; "
            "cached afterwards)")


def _say(echo_on):
    s = _state
    with s.lock:
        if s.said or s.depth == 0:
            return
        s.said = True
        elapsed = s.spent + time.perf_counter() - s.started
    line = message(_estimate(elapsed))
    visible = not log.hasHandlers()  # logging's last resort prints warnings to stderr
    log.warning(line)
    if echo_on and not visible:
        print(line, file=sys.stderr, flush=True)


def watch():
    """Listen to numba's compile events (once per process; importing numba if needed)."""
    s = _state
    if s.installed:
        return
    from numba.core import event

    class _Listener(event.Listener):
        def on_start(self, ev):
            with s.lock:
                s.depth += 1
                if s.depth > 1:
                    return
                s.started = time.perf_counter()
                if s.said:
                    return
                s.timer = threading.Timer(max(0.0, SAY_AFTER - s.spent), _say,
                                          args=(_ECHO.get(),))
                s.timer.daemon = True
                s.timer.start()

        def on_end(self, ev):
            with s.lock:
                s.depth -= 1
                if s.depth:
                    return
                s.spent += time.perf_counter() - s.started
                if s.timer is not None:
                    s.timer.cancel()
                    s.timer = None

    with s.lock:
        if s.installed:
            return
        event.register("numba:compile", _Listener())
        s.installed = True


def compile_note(seconds, limit=None):
    """A sentence for an error whose cause was ``seconds`` of compiling, or ``""``."""
    if seconds < 1.0 and (limit is None or seconds < 0.25 * limit):
        return ""
    return (f" {seconds:.0f} s of it went to compiling mklopt's numba kernels (a first run "
            "after install); they are cached now, so a run again will not pay it: run "
            "again, or run `mklopt compile` once ahead.")


# ---------------------------------------------------------------- prepare
def _default_fit():
    """``[(module, function, signature, weight)]``: what ``MKLClassifier().fit`` calls.

    And its ``predict`` (the combined cross kernel): a first ``predict``
    after install, in the fitting process or a later one, then loads it
    instead of compiling it for about 4 s; the helper process compiles it
    alongside the fit's share. The signatures are those the default fit
    and predict call the primitives with (``benchmarks/bench_compile.py``
    lists them; a test checks that a fit and a predict after
    :func:`prepare` compile nothing more). ``weight`` is the
    primitive's measured share of the compile time in per cent of CPU
    seconds (the first one also starts numba's CPU target), for the
    estimate and for dealing the plan to processes; the list runs roughly
    from the cheapest, so that the estimate starts early.
    """
    from numba import types as t

    def a(dtype, ndim, ro=False):
        return t.Array(dtype, ndim, "C", readonly=ro)

    f8, i8, b1 = t.float64, t.int64, t.boolean
    F1, F2, F3, I1, B1 = a(f8, 1), a(f8, 2), a(f8, 3), a(i8, 1), a(b1, 1)
    rF1, rF2, rF3, rI1 = a(f8, 1, True), a(f8, 2, True), a(f8, 3, True), a(i8, 1, True)
    return [
        ("cuts", "scatter_normalised", (F1, I1, i8), 5.5),
        ("smo", "smo_violation", (rF1, rF1, F1, F1), 1.7),
        ("smo", "smo_rho", (rF1, rF1, F1, F1), 1.7),
        ("cuts", "renormalise", (F1, f8), 1.7),
        ("cuts", "model_value", (F2, F1, F1), 1.0),
        ("cuts", "price_kernels", (F2, F1, F1, B1), 3.4),
        ("smo", "smo_gradient", (F2, rI1, rF1, rF1, F1, F1), 3.1),
        ("cuts", "check_cut_lp", (F1, F1, B1, F2, F1, f8, f8, f8, f8), 2.5),
        ("cuts", "level_socp", (F2, F1, I1, rF1, f8), 3.0),
        ("combine", "combine_kernels", (rF3, F1, F2, I1), 5.8),
        ("feasible", "repair_box_equality", (F1, rF1, rF1, f8, f8, F1), 3.2),
        ("groups", "raw_traces", (rF2, I1, I1, I1, I1, I1, F1, F1, F1), 3.5),
        ("cuts", "kkt_grow", (F2, F1, rF1, B1), 12.0),
        ("groups", "kernel_sym_serial",
         (rF2, F2, I1, I1, I1, I1, I1, F1, F1, F1, I1, I1, F3, I1), 26.9),
        ("smo", "smo_solve", (F2, rI1, rF1, rF1, F1, F1, f8, i8, b1, I1), 25.2),
        ("groups", "combined_cross", (rF2, F2, I1, I1, I1, I1, I1, F1, F1, F1, I1, F2, I1), 18.0),
    ]


def _bench_first_split():
    """The plan of ``mklopt bench``'s first split: the default fit's and the bank's.

    The protocol's bank (455 kernels on ionosphere) is built by the
    threaded builder, which the default fit's bank is too small for, and
    the split's warm-up takes ``quad_forms`` and the projection onto the
    simplex. Dealt to two
    processes with the rest, a first ``mklopt bench`` prints its first line
    after about half of the compile time (measured in
    ``benchmarks/README.md``, "First contact"). Weights in the units of
    :func:`_default_fit` (about 5.5 per second of compiling).
    """
    from numba import types as t

    items = _default_fit()
    F1, I1 = t.Array(t.float64, 1, "C"), t.Array(t.int64, 1, "C")
    rF3 = t.Array(t.float64, 3, "C", readonly=True)
    sym = next(sig for _, name, sig, _ in items if name == "kernel_sym_serial")
    return items + [
        ("combine", "quad_forms", (rF3, F1, I1, I1, F1, I1), 1.8),
        ("projections", "project_simplex", (F1, t.float64, F1), 8.0),
        ("groups", "kernel_sym", sym, 40.0),
    ]


#: The estimators whose default fit :func:`prepare` knows, and ``"bench"``:
#: the first split of ``mklopt bench``.
_PLANS = {"MKLClassifier": _default_fit, "bench": _bench_first_split}
_prepared = set()


def _dispatcher(module, name):
    import importlib

    return getattr(importlib.import_module(f"mklopt._jit.{module}"), name)


#: Processes that :func:`prepare` compiles in when numba's cache is empty:
#: this one and ``JOBS - 1`` helpers, at most one per available core (the
#: environment variable ``MKLOPT_COMPILE_JOBS`` overrides; ``1`` compiles
#: everything here). numba compiles under one global lock per process, so
#: threads would not compile side by side; processes do, and share the
#: result through the on-disk cache.
JOBS = 2

#: The weight (a primitive's share of compile time, as in :func:`_default_fit`)
#: of a helper process's start: importing numba and mklopt's kernels, and
#: numba's CPU target.
HELPER_START = 12.0

#: Seconds :func:`prepare` waits for a helper before compiling its share itself.
HELPER_WAIT = 600.0


def _jobs():
    import os

    env = os.environ.get("MKLOPT_COMPILE_JOBS", "")
    want = int(env) if env.strip().isdigit() else JOBS
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    if getattr(sys, "frozen", False) or not sys.executable:
        return 1  # no interpreter to start a helper with
    return max(1, min(want, cores))


def _cached(disp):
    """Whether numba's cache holds an index for ``disp`` (``True`` when it cannot tell)."""
    import os

    try:
        return os.path.exists(disp._cache._cache_file._index_path)
    except AttributeError:  # no file cache, or numba's internals changed
        return True


def _lanes(items, jobs):
    """Deal ``items`` to ``jobs`` processes, heaviest first to the least loaded.

    Lane 0 is this process; the others pay :data:`HELPER_START` first.
    Returns a lane number per item.
    """
    load = [0.0] + [HELPER_START] * (jobs - 1)
    lane = [0] * len(items)
    for i in sorted(range(len(items)), key=lambda i: -items[i][3]):
        j = min(range(jobs), key=load.__getitem__)
        lane[i] = j
        load[j] += items[i][3]
    return lane


def _compile_items(items):
    for module, name, sig, _ in items:
        disp = _dispatcher(module, name)
        overloads = getattr(disp, "overloads", None)  # None: replaced (a test's wrapper)
        if overloads is not None and tuple(sig) not in overloads:
            disp.compile(tuple(sig))


def _helper_main(estimator, picks):
    """A helper process's work: compile ``picks`` (indices into the plan) into the cache."""
    items = _PLANS[estimator]()
    _compile_items([items[int(i)] for i in picks])


def _start_helpers(estimator, items, lanes, jobs):
    """Start a helper process per lane above 0 whose primitives are not cached yet.

    The lanes of helpers not started are set to 0 (in place).
    """
    import subprocess

    helpers = []
    for j in range(1, jobs):
        picks = [i for i, lane in enumerate(lanes) if lane == j]
        if all(_cached(_dispatcher(m, n)) for m, n, *_ in (items[i] for i in picks)):
            for i in picks:
                lanes[i] = 0
            continue
        code = ("import sys; from mklopt._compile import _helper_main; "
                "_helper_main(sys.argv[1], sys.argv[2:])")
        try:
            proc = subprocess.Popen([sys.executable, "-c", code, estimator, *map(str, picks)],
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
        except OSError:
            for i in picks:
                lanes[i] = 0
            continue
        helpers.append(proc)
    return helpers


def prepare(estimator="MKLClassifier", progress=None):
    """Compile, or load from numba's cache, what ``estimator``'s default fit calls.

    A no-op after the first time in a process, and for an estimator whose
    plan is not known (its kernels then compile inside its fit, where
    :func:`watch` still says so). ``progress(k, n, name)``, when given, is
    called before each primitive.

    When the cache is empty (a first run after install) and more than one
    core is available, a helper process compiles part of the plan into the
    cache meanwhile (:data:`JOBS`), and this process then loads that part:
    the wall time is about that of the larger share instead of the sum.

    Returns
    -------
    seconds : float
        Spent here (0 when there was nothing to do).
    """
    plan = _PLANS.get(estimator)
    if plan is None or estimator in _prepared:
        return 0.0
    if _disabled():
        _prepared.add(estimator)
        return 0.0
    watch()
    t0 = time.perf_counter()
    items = plan()
    jobs = _jobs()
    lanes = _lanes(items, jobs)
    helpers = _start_helpers(estimator, items, lanes, jobs) if jobs > 1 else []
    if not helpers:
        lanes = [0] * len(items)
    # this process's share first (in the plan's order, so that the estimate
    # starts early), then the helpers' share, loaded from the cache
    order = ([i for i in range(len(items)) if lanes[i] == 0]
             + [i for i in range(len(items)) if lanes[i] != 0])
    total = sum(items[i][3] for i in order if lanes[i] == 0)
    done = 0.0
    try:
        for k, i in enumerate(order):
            module, name, sig, weight = items[i]
            if lanes[i] != 0 and helpers:
                _wait(helpers)
                helpers = []
            if progress is not None:
                progress(k, len(items), f"{module}.{name}")
            with _state.lock:
                _state.plan = (done, total) if lanes[i] == 0 else None
            _compile_items([items[i]])
            if lanes[i] == 0:
                done += weight
    finally:
        for proc in helpers:  # interrupted: the helpers' work is not needed
            proc.kill()
            proc.wait()
        with _state.lock:
            _state.plan = None
    _prepared.add(estimator)
    return time.perf_counter() - t0


def _wait(helpers):
    """Wait for the helpers (at most :data:`HELPER_WAIT` s); a late one is stopped."""
    import subprocess

    end = time.perf_counter() + HELPER_WAIT
    for proc in helpers:
        try:
            proc.wait(timeout=max(0.0, end - time.perf_counter()))
        except subprocess.TimeoutExpired:
            proc.kill()  # what it did not cache compiles here
            proc.wait()


def _disabled():
    from numba.core import config

    return bool(config.DISABLE_JIT)


# ---------------------------------------------------------------- compile_all
def _paths():
    """``[(name, run)]``: every estimator path on a tiny problem (what ``mklopt compile`` runs)."""
    import numpy as np

    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 3))
    y = np.where(X[:, 0] + 0.3 * rng.standard_normal(40) > 0, 1, -1)
    y3 = np.digitize(X[:, 1], [-0.4, 0.4])
    t = X[:, 0] + 0.1 * rng.standard_normal(40)

    def clf(**kw):
        from mklopt import MKLClassifier

        return lambda: MKLClassifier(max_iter=5, **kw).fit(X, y)

    def quiet(fn):
        def run():
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fn()
        return run

    def regressor():
        from mklopt import MKLRegressor

        MKLRegressor(max_iter=5).fit(X, t)

    def one_class():
        from mklopt import MKLOneClass

        MKLOneClass(max_iter=5).fit(X)

    def boost():
        from mklopt import MKBoostClassifier

        MKBoostClassifier(n_rounds=3).fit(X, y)

    def multiclass():
        from mklopt import MKLClassifier

        MKLClassifier(max_iter=5).fit(X, y3)

    def precomputed():
        from mklopt import MKLClassifier

        G = X @ X.T
        sq = np.diag(G)
        K = np.stack([G, np.exp(-0.5 * (sq[:, None] + sq[None, :] - 2.0 * G))])
        MKLClassifier(kernels="precomputed", max_iter=5).fit(K, y)

    paths = [("MKLClassifier, default fit", lambda: prepare("MKLClassifier"))]
    paths.append(("MKLClassifier, default fit (the rest)", clf()))
    paths += [(f"MKLClassifier(method={m!r})", clf(method=m))
              for m in ("silp", "simplemkl", "mirror", "spg", "working_set", "active_set",
                        "exact")]
    paths.append(("MKLClassifier(method='lp', p=2)", clf(method="lp", p=2.0)))
    paths += [
        ("MKLClassifier(storage='on_the_fly')", clf(storage="on_the_fly")),
        ("MKLClassifier(loss='logistic')", clf(loss="logistic")),
        ("MKLClassifier on three classes", multiclass),
        ("MKLClassifier(kernels='precomputed')", precomputed),
        ("MKLRegressor", regressor),
        ("MKLOneClass", one_class),
        ("MKBoostClassifier", boost),
        ("mklopt bench, the first split's plan", lambda: prepare("bench")),
    ]
    return [(name, quiet(run)) for name, run in paths]


def compile_all(write=None):
    """Compile the kernels of every estimator path (``mklopt compile``).

    ``write(line)`` receives a line per path (default: stderr). A path that
    fails (e.g. an optional dependency missing) is reported and skipped.

    Returns
    -------
    failed : list of str
        The paths that raised.
    """
    if write is None:
        def write(line):
            print(line, file=sys.stderr, flush=True)
    watch()
    with _state.lock:
        _state.said = True  # this command says it itself
    paths = _paths()
    failed = []
    t0 = time.perf_counter()
    for k, (name, run) in enumerate(paths, 1):
        t = time.perf_counter()
        c = compile_seconds()
        try:
            run()
        except Exception as exc:  # noqa: BLE001 - reported, the others still compile
            failed.append(name)
            write(f"[{k}/{len(paths)}] {name}: failed ({type(exc).__name__}: {exc})")
            continue
        write(f"[{k}/{len(paths)}] {name}: {time.perf_counter() - t:.1f} s "
              f"({compile_seconds() - c:.1f} s compiling)")
    write(f"compiled mklopt's kernels in {time.perf_counter() - t0:.1f} s; later processes "
          "load them from numba's cache")
    return failed
