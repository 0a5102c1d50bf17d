"""The Python around an oracle call and a Level step, per call (item 4 of the multiclass issue).

For each case, the thread CPU time of the runs is split into the oracle
calls, HiGHS's ``run()``, ECOS's ``csolve()`` and the rest: every other
Python line of the driver, the method and the estimator (per-run set-up
included), divided by the number of oracle calls. Thread CPU time, so that
a busy second core does not count; medians over ``--repeats`` after a
warm-up.

Cases:

* ``toy m=17`` and ``toy m=50``: ``SmoothQuadraticOracle.random(m, dim=20,
  seed)`` for seeds 0-9, Level to a relative gap of 1e-6 (at most 100
  calls): the oracle costs almost nothing, so the rest is the method and
  the driver.
* ``digits fit``: ``MKLClassifier().fit`` on scikit-learn's digits (50 %
  split, 45 one-vs-one pairs, 17 kernels); the rest also holds each pair's
  set-up and model.

    python benchmarks/bench_step_overhead.py --repeats 5
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

CLOCK = {"oracle": 0.0, "highs": 0.0, "ecos": 0.0, "calls": 0}
_depth = [0]


def _timed(kind, fn):
    def run(*args, **kwargs):
        if _depth[0]:  # inside a timed part already (an oracle calling an oracle)
            return fn(*args, **kwargs)
        _depth[0] += 1
        t0 = time.thread_time()
        try:
            return fn(*args, **kwargs)
        finally:
            CLOCK[kind] += time.thread_time() - t0
            _depth[0] -= 1
    return run


def _instrument():
    """Time HiGHS's run, ECOS's csolve and every oracle call (class-level wrappers)."""
    real_highs = mh._h._Highs

    class Highs(real_highs):
        def run(self):
            return _timed("highs", super().run)()

    mh._h = types.SimpleNamespace(**{k: getattr(mh._h, k) for k in dir(mh._h)
                                     if not k.startswith("__")})
    mh._h._Highs = Highs
    if cm._ecos is not None:
        real_csolve = cm._ecos.csolve
        cm._ecos = types.SimpleNamespace(csolve=_timed("ecos", real_csolve),
                                         __file__=cm._ecos.__file__)
    for cls in (OracleBase, SmoothQuadraticOracle):
        _count_calls(cls)


def _count_calls(cls):
    """Count and time the calls of ``cls`` (an oracle class) that no other oracle made."""
    timed = _timed("oracle", cls.__call__)

    def call(self, *args, **kwargs):
        if not _depth[0]:
            CLOCK["calls"] += 1
        return timed(self, *args, **kwargs)

    cls.__call__ = call

def _toys(m):
    for seed in range(10):
        oracle = SmoothQuadraticOracle.random(m, dim=20, seed=seed)
        solve(oracle, LevelBundle(), stop=DualityGap(1e-6) | MaxIter(100))


def _digits():
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    X, y = load_digits(return_X_y=True)
    X_tr, _, y_tr, _ = train_test_split(X, y, train_size=0.5, random_state=0, stratify=y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        MKLClassifier().fit(X_tr, y_tr)


def measure(case, repeats):
    run = {"toy m=17": lambda: _toys(17), "toy m=50": lambda: _toys(50),
           "digits fit": _digits}[case]
    run()  # warm-up (numba, HiGHS pool)
    rows = []
    for _ in range(repeats):
        for k in CLOCK:
            CLOCK[k] = 0
        t0 = time.thread_time()
        run()
        total = time.thread_time() - t0
        n = CLOCK["calls"]
        rest = total - CLOCK["oracle"] - CLOCK["highs"] - CLOCK["ecos"]
        rows.append((n, 1e6 * CLOCK["highs"] / n, 1e6 * CLOCK["ecos"] / n, 1e6 * rest / n))
    rows = np.array(rows)
    return np.median(rows, axis=0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--cases", nargs="+", default=["toy m=17", "toy m=50", "digits fit"])
    args = ap.parse_args()
    _instrument()
    print("| case | oracle calls | HiGHS run µs/call | ECOS csolve µs/call | rest µs/call |")
    print("|---|---|---|---|---|")
    for case in args.cases:
        n, hi, ec, rest = measure(case, args.repeats)
        print(f"| {case} | {n:.0f} | {hi:.0f} | {ec:.0f} | **{rest:.0f}** |", flush=True)


if __name__ == "__main__":
    main()
