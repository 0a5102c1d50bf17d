"""The Python around an oracle call and a Level step, per call (item 4 of the multiclass issue).

For each case, the thread CPU time of the runs is split into the oracle
calls, HiGHS's ``run()``, HiGHS's other calls (the model edits between two
runs: ``addRows`` for a new cut, ``changeColsBounds`` for the working set,
``passModel`` at a run's start, and the solution's copy-out), ECOS's
``csolve()`` and the rest: every other Python line of the driver, the
method and the estimator (per-run set-up included), divided by the number
of oracle calls. Thread CPU time, so that a busy second core does not
count; medians over ``--repeats`` after a warm-up.

Two "rest" columns are printed: without HiGHS's other calls (the Python
alone) and with them (as the seventh round measured it, when only ``run()``
was counted as the solver). The timers' own cost (each timed call pays two
``thread_time()`` reads and a wrapper) is measured on an empty function
and taken out of the rest; it is printed as the last column.

Cases:

* ``toy m=17`` and ``toy m=50``: ``SmoothQuadraticOracle.random(m, dim=20,
  seed)`` for seeds 0-9, Level to a relative gap of 1e-6 (at most 100
  calls): the oracle costs almost nothing, so the rest is the method and
  the driver. The ten oracles are built before the clock starts (until the
  eleventh round they were built inside it, and their construction,
  0.15 ms at m = 17 and 0.4 ms at m = 50, about 6 and 13 µs per call, was
  counted in the rest); the last column prints that construction per
  call, for comparison with the earlier tables.
* ``digits fit``: ``MKLClassifier().fit`` on scikit-learn's digits (50 %
  split, 45 one-vs-one pairs, 17 kernels); the rest also holds each pair's
  set-up and model.

    python benchmarks/bench_step_overhead.py --repeats 5
    python benchmarks/bench_step_overhead.py --repeats 5 --phases   # where the rest goes

``--whole-fit`` looks at the digits fit as a whole instead: every jitted
function that Python calls in mklopt (numba dispatchers at module level)
is timed as well, and so is each pair's run of the driver
(``mklopt.driver._run``). It prints the Python per oracle call inside the
runs (the oracle's own Python included: its jitted work, HiGHS and ECOS
taken out), the Python per pair outside them (the pair's bank view,
method, model, and the estimator around it) and the fit's Python per call
in all. Each timed jitted call adds its wrapper's cost (about a µs) to
the Python.

    python benchmarks/bench_step_overhead.py --repeats 5 --whole-fit

``--phases`` splits the rest further, solver time taken out of each part:
Level's projection (``CutModel.project_level``), the LP's column generation
(``CutModel._column_generation``), the best point and the report
(``_mb_offer``, ``_mb_make_report``) and everything else (the driver loop,
the cut's bookkeeping, the estimator). Its timers cost a few µs more per
call, which the rest then includes.
"""

import argparse
import sys
import time
import types
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import mklopt.methods._cut_model as cm  # noqa: E402
import mklopt.methods._highs as mh  # noqa: E402
from mklopt import MKLClassifier, solve  # noqa: E402
from mklopt.methods import LevelBundle  # noqa: E402
from mklopt.oracles._base import DualOracle as OracleBase  # noqa: E402
from mklopt.stopping import DualityGap, MaxIter  # noqa: E402
from mklopt.testing import SmoothQuadraticOracle  # noqa: E402

CLOCK = {"oracle": 0.0, "highs": 0.0, "highs_edit": 0.0, "ecos": 0.0, "jit": 0.0, "calls": 0,
         "timed": 0}
#: HiGHS's calls besides run() that the cut model makes (model edits, status, solution).
HIGHS_OTHER = ("addRows", "changeColsBounds", "passModel", "getModelStatus", "getSolution",
               "getObjectiveValue", "clearModel", "setOptionValue")
_depth = [0]
#: The jitted calls' own nesting (--whole-fit): they are timed inside oracle calls too.
_jit_depth = [0]


def _timed(kind, fn, depth=_depth):
    def run(*args, **kwargs):
        if depth[0]:  # inside a timed part already (an oracle calling an oracle)
            return fn(*args, **kwargs)
        depth[0] += 1
        CLOCK["timed"] += 1
        t0 = time.thread_time()
        try:
            return fn(*args, **kwargs)
        finally:
            CLOCK[kind] += time.thread_time() - t0
            depth[0] -= 1
    return run


def _instrument():
    """Time HiGHS's run, ECOS's csolve and every oracle call (class-level wrappers)."""
    real_highs = mh._h._Highs

    # The timed functions are built once: the class attributes are them.
    Highs = type("Highs", (real_highs,), {
        "run": _timed("highs", real_highs.run),
        **{name: _timed("highs_edit", getattr(real_highs, name))
           for name in HIGHS_OTHER if hasattr(real_highs, name)},
    })

    mh._h = types.SimpleNamespace(**{k: getattr(mh._h, k) for k in dir(mh._h)
                                     if not k.startswith("__")})
    mh._h._Highs = Highs
    if cm._ecos is not None:
        real_csolve = cm._ecos.csolve
        cm._ecos = types.SimpleNamespace(csolve=_timed("ecos", real_csolve),
                                         __file__=cm._ecos.__file__)
    for cls in (OracleBase, SmoothQuadraticOracle):
        _count_calls(cls)


PHASES = {"projection": 0.0, "column generation": 0.0, "best point and report": 0.0}


def _solver_clock():
    return CLOCK["highs"] + CLOCK["highs_edit"] + CLOCK["ecos"]


def _phase(name, fn):
    """``fn`` whose thread time, solver calls inside taken out, adds to ``PHASES[name]``."""
    def run(*args, **kwargs):
        t0, s0 = time.thread_time(), _solver_clock()
        try:
            return fn(*args, **kwargs)
        finally:
            PHASES[name] += (time.thread_time() - t0) - (_solver_clock() - s0)
    return run


def _instrument_phases():
    from mklopt.methods._base import MethodBase
    from mklopt.methods._cut_model import CutModel

    CutModel.project_level = _phase("projection", CutModel.project_level)
    CutModel._column_generation = _phase("column generation", CutModel._column_generation)
    MethodBase._mb_offer = _phase("best point and report", MethodBase._mb_offer)
    MethodBase._mb_make_report = _phase("best point and report", MethodBase._mb_make_report)


def _count_calls(cls):
    """Count and time the calls of ``cls`` (an oracle class) that no other oracle made."""
    timed = _timed("oracle", cls.__call__)

    def call(self, *args, **kwargs):
        if not _depth[0]:
            CLOCK["calls"] += 1
        return timed(self, *args, **kwargs)

    cls.__call__ = call

def _toy_oracles(m):
    return [SmoothQuadraticOracle.random(m, dim=20, seed=seed) for seed in range(10)]


def _toys(oracles):
    for oracle in oracles:
        solve(oracle, LevelBundle(), stop=DualityGap(1e-6) | MaxIter(100))


def _digits():
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    X, y = load_digits(return_X_y=True)
    X_tr, _, y_tr, _ = train_test_split(X, y, train_size=0.5, random_state=0, stratify=y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        MKLClassifier().fit(X_tr, y_tr)


def _timer_cost():
    """Thread CPU seconds one timed call adds around the call it times (median of 7)."""
    def noop():
        return None

    timed = _timed("calibration", noop)
    CLOCK["calibration"] = 0.0
    costs = []
    for _ in range(7):
        n = 20000
        t0 = time.thread_time()
        for _ in range(n):
            timed()
        t1 = time.thread_time()
        for _ in range(n):
            noop()
        t2 = time.thread_time()
        # a timed call's total minus the bare call, minus what the clock itself counted inside
        costs.append(((t1 - t0) - (t2 - t1)) / n)
    del CLOCK["calibration"]
    return float(np.median(costs))


def measure(case, repeats, timer_cost):
    if case.startswith("toy"):
        m = int(case.split("=")[1])

        def prepare():
            return _toy_oracles(m)

        run = _toys
    else:
        def prepare():
            return None

        def run(_):
            _digits()
    run(prepare())  # warm-up (numba, HiGHS pool)
    rows = []
    for _ in range(repeats):
        for k in CLOCK:
            CLOCK[k] = 0
        for k in PHASES:
            PHASES[k] = 0.0
        # The toy oracles are built before the clock starts: their set-up
        # (0.15-0.4 ms each) is neither a call nor a step (see the notes).
        t0 = time.thread_time()
        made = prepare()
        setup = time.thread_time() - t0
        t0 = time.thread_time()
        run(made)
        total = time.thread_time() - t0
        n = CLOCK["calls"]
        timers = timer_cost * CLOCK["timed"]
        solvers = CLOCK["highs"] + CLOCK["highs_edit"] + CLOCK["ecos"]
        rest = total - CLOCK["oracle"] - solvers - timers
        parts = [1e6 * PHASES[k] / n for k in PHASES]
        rows.append((n, 1e6 * CLOCK["highs"] / n, 1e6 * CLOCK["highs_edit"] / n,
                     1e6 * CLOCK["ecos"] / n, 1e6 * rest / n,
                     1e6 * (rest + CLOCK["highs_edit"]) / n, 1e6 * timers / n,
                     1e6 * setup / n, *parts, 1e6 * rest / n - sum(parts)))
    rows = np.array(rows)
    return np.median(rows, axis=0)


RUNS = {"seconds": 0.0, "inside": 0.0}


def _jit_clock():
    return CLOCK["jit"] + _solver_clock()


def _instrument_whole_fit():
    """Time every Python-to-numba call of mklopt, and each run of the driver."""
    import importlib
    import pkgutil

    from numba.core.registry import CPUDispatcher

    import mklopt
    import mklopt.driver as driver

    for info in pkgutil.walk_packages(mklopt.__path__, "mklopt."):
        if info.name.endswith("__main__"):
            continue
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # an optional extra's module
            continue
        for name, value in list(vars(module).items()):
            if isinstance(value, CPUDispatcher):
                setattr(module, name, _timed("jit", value, _jit_depth))
    real_run = driver._run

    def run(*args, **kwargs):
        t0, j0 = time.thread_time(), _jit_clock()
        try:
            return real_run(*args, **kwargs)
        finally:
            RUNS["seconds"] += time.thread_time() - t0
            RUNS["inside"] += _jit_clock() - j0

    driver._run = run


def whole_fit(repeats):
    """The digits fit's Python per call inside the runs, per pair outside them, per call in all."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    _instrument_whole_fit()
    X, y = load_digits(return_X_y=True)
    X_tr, _, y_tr, _ = train_test_split(X, y, train_size=0.5, random_state=0, stratify=y)

    def fit():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return MKLClassifier().fit(X_tr, y_tr)

    fit()  # warm-up
    rows = []
    for _ in range(repeats):
        for k in CLOCK:
            CLOCK[k] = 0
        RUNS.update(seconds=0.0, inside=0.0)
        t0 = time.thread_time()
        n_pairs = len(fit().models_)
        total = time.thread_time() - t0
        n = CLOCK["calls"]
        runs_python = RUNS["seconds"] - RUNS["inside"]
        rows.append((1e3 * total, n, 1e6 * runs_python / n,
                     1e6 * ((total - RUNS["seconds"]) - (_jit_clock() - RUNS["inside"])) / n_pairs,
                     1e6 * (total - _jit_clock()) / n))
    print("| case | fit ms (thread CPU) | oracle calls | Python per call inside the runs µs "
          "| Python outside the runs, per pair µs | the fit's Python per call µs |")
    print("|---|---|---|---|---|---|")
    ms, n, inside, pair, every = np.median(np.array(rows), axis=0)
    print(f"| digits fit ({n_pairs} pairs) | {ms:.1f} | {n:.0f} | **{inside:.0f}** | {pair:.0f} "
          f"| {every:.0f} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--cases", nargs="+", default=["toy m=17", "toy m=50", "digits fit"])
    ap.add_argument("--phases", action="store_true",
                    help="split the rest into the projection, the LP, the report and the rest")
    ap.add_argument("--whole-fit", action="store_true",
                    help="the digits fit's Python per call with every jitted call taken out")
    args = ap.parse_args()
    _instrument()
    if args.whole_fit:
        whole_fit(args.repeats)
        return
    if args.phases:
        _instrument_phases()
    timer_cost = _timer_cost()
    if args.phases:
        print("| case | oracle calls | rest µs/call | " + " | ".join(PHASES)
              + " | driver and the rest |")
        print("|---|---|---|" + "---|" * (len(PHASES) + 1))
    else:
        print("| case | oracle calls | HiGHS run µs/call | HiGHS other calls µs/call "
              "| ECOS csolve µs/call | rest µs/call | rest with HiGHS's other calls µs/call "
              "| timers taken out µs/call | toy oracles' set-up, not in the rest, µs/call |")
        print("|---|---|---|---|---|---|---|---|---|")
    for case in args.cases:
        n, hi, he, ec, rest, rest_he, timers, setup, *parts = measure(case, args.repeats,
                                                                      timer_cost)
        if args.phases:
            print(f"| {case} | {n:.0f} | {rest:.0f} | "
                  + " | ".join(f"{p:.0f}" for p in parts) + " |", flush=True)
        else:
            print(f"| {case} | {n:.0f} | {hi:.0f} | {he:.0f} | {ec:.0f} | **{rest:.0f}** "
                  f"| {rest_he:.0f} | {timers:.0f} | {setup:.0f} |", flush=True)


if __name__ == "__main__":
    main()
