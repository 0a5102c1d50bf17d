"""Start-up: what ``import mklopt`` loads, compiling ahead of a fit, and saying so.

Each check runs in a fresh interpreter (``sys.modules`` and numba's
dispatchers of this test process are shared by every test).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import mklopt
from mklopt import _compile
from mklopt._interrupt import fit_run
from mklopt.stopping import NoPointError

ROOT = str(Path(mklopt.__file__).resolve().parents[1])


def run_python(code, **env):
    """``(stdout, stderr)`` of ``python -c code`` with the mklopt under test."""
    full = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    full.update(env)
    out = subprocess.run([sys.executable, "-c", code], env=full, capture_output=True,
                         text=True, timeout=1800)
    assert out.returncode == 0, out.stderr
    return out.stdout, out.stderr


def test_import_mklopt_loads_neither_numba_nor_scipy_optimize_nor_the_data_sets():
    code = """
import json, sys
import mklopt
heavy = ["scipy.optimize", "numba", "numba.core.compiler", "mklopt.datasets", "sklearn"]
before = [m for m in heavy if m in sys.modules]
names = {n: type(getattr(mklopt, n)).__name__ for n in mklopt.__all__}
print(json.dumps([before, names, [m for m in heavy if m in sys.modules]]))
"""
    before, names, after = json.loads(run_python(code)[0])
    assert before == []
    # every public name still resolves, on first access
    assert set(names) == set(mklopt.__all__)
    assert names["solve"] == "function" and names["datasets"] == "module"
    assert names["MKLClassifier"] == names["KernelBank"] == "type"
    assert "numba" in after and "mklopt.datasets" in after


def test_predicting_from_a_saved_model_imports_nothing_only_fitting_needs(tmp_path):
    # As after a plain install (no scikit-learn, which imports scipy.sparse
    # itself): loading a model file and predicting imports neither ECOS,
    # scipy.sparse nor scipy.optimize, which only fits use.
    model = tmp_path / "sonar.npz"
    code = f"""
import json, sys
sys.modules["sklearn"] = None  # a plain install: ``import sklearn`` fails
from mklopt import MKLClassifier, datasets
from mklopt.kernels import linear, rbf
from mklopt.persist import save_model
X, y = datasets.load("sonar")
save_model(MKLClassifier(kernels=[rbf(4.0), linear()]).fit(X, y), {str(model)!r})
"""
    run_python(code)
    code = f"""
import json, sys
sys.modules["sklearn"] = None
import numpy as np
from mklopt.persist import load_model
clf, _ = load_model({str(model)!r})
pred = clf.predict(np.zeros((3, 60)))
heavy = ["ecos", "scipy.sparse", "scipy.optimize", "scipy.linalg", "sklearn"]
print(json.dumps([pred.shape[0], [m for m in heavy if sys.modules.get(m) is not None]]))
"""
    n, loaded = json.loads(run_python(code)[0])
    assert n == 3
    assert loaded == []


def test_the_default_fit_loads_highs_without_scipy_optimize_and_linprog_still_works():
    # The level method's LPs go to SciPy's HiGHS bindings, loaded without
    # running scipy.optimize's __init__; a later import of scipy.optimize
    # uses that same module, and linprog's HiGHS path answers. numba's
    # BLAS check finds scipy.linalg.cython_blas loaded on its own, and
    # scipy.linalg imported later works with it.
    code = """
import json, sys
sys.modules["sklearn"] = None  # a plain install (scikit-learn imports scipy.optimize)
from mklopt import MKLClassifier, datasets
from mklopt.methods import _highs
X, y = datasets.load("ionosphere")
clf = MKLClassifier().fit(X[:120], y[:120])
heavy = ["ecos", "scipy.sparse", "scipy.optimize", "scipy.linalg"]
loaded = [m for m in heavy if sys.modules.get(m) is not None]
core = _highs._core()
blas = sys.modules["scipy.linalg.cython_blas"]
import numba
import numpy as np
import scipy.linalg
import scipy.optimize
from scipy.optimize._highspy import _core
lp = scipy.optimize.linprog([1.0, 2.0], A_ub=[[-1.0, -1.0]], b_ub=[-1.0],
                            bounds=[(0, None)] * 2, method="highs")
# numba's BLAS calls go through the cython_blas loaded on its own
A = np.arange(12.0).reshape(3, 4)
dot = numba.njit(lambda a: a @ a.T)(A)
from scipy.linalg import cython_blas
print(json.dumps([loaded, core is _core, blas is cython_blas, lp.status, lp.fun,
                  float(np.abs(dot - A @ A.T).max()), scipy.linalg.solve(A[:, :3] @ A[:, :3].T + np.eye(3), A[:, 3]).size,
                  float(clf.gap_)]))
"""
    loaded, same, same_blas, status, fun, err, solved, gap = json.loads(run_python(code)[0])
    assert loaded == []
    assert same and same_blas
    assert status == 0 and abs(fun - 1.0) < 1e-12
    assert err == 0.0 and solved == 3
    assert gap <= 0.01


def test_dir_lists_the_lazy_names():
    assert set(mklopt.__all__) <= set(dir(mklopt))
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        mklopt.nope  # noqa: B018


def test_after_prepare_the_default_fit_and_predict_compile_and_load_nothing_more():
    # The signatures prepare() compiles are the ones the default fit and its
    # predict call: they add no overload to any of mklopt's dispatchers.
    code = """
import importlib, json, pkgutil
import mklopt._jit as J
from numba.core.registry import CPUDispatcher
from mklopt import MKLClassifier, datasets
from mklopt._compile import prepare

X, y = datasets.load("ionosphere")
prepare("MKLClassifier")
mods = [importlib.import_module(f"mklopt._jit.{m.name}") for m in pkgutil.iter_modules(J.__path__)]
disps = {f"{m.__name__}.{k}": v for m in mods for k, v in vars(m).items()
         if isinstance(v, CPUDispatcher)}
before = {k: len(d.overloads) for k, d in disps.items()}
clf = MKLClassifier().fit(X, y)
clf.predict(X[:50])
new = sorted(k for k, d in disps.items() if len(d.overloads) > before[k])
print(json.dumps([new, float(clf.result_.rel_gap)]))
"""
    new, gap = json.loads(run_python(code)[0].splitlines()[-1])
    assert new == []
    assert gap <= 1e-2


def test_after_the_bench_plan_its_first_split_compiles_none_of_the_plan_again():
    # prepare("bench") runs before the first split's bank is built; its
    # signatures are the ones the split calls (a wrong one would compile twice).
    code = """
import json
from mklopt._compile import _bench_first_split, _dispatcher, prepare
from mklopt.bench import runs

prepare("bench")
disps = {f"{m}.{n}": _dispatcher(m, n) for m, n, *_ in _bench_first_split()}
before = {k: len(d.overloads) for k, d in disps.items()}
split, _ = runs.run_split("ionosphere", 0, ["level"], max_iter=8)
new = sorted(k for k, d in disps.items() if len(d.overloads) > before[k])
print(json.dumps([new, split[0].n_kernels]))
"""
    new, n_kernels = json.loads(run_python(code)[0].splitlines()[-1])
    assert new == []
    assert n_kernels > 400  # the protocol's bank: the threaded builder's size


def test_the_compile_message_comes_once_and_only_when_compiling(tmp_path):
    # Two primitives compiled in a fresh cache, with the threshold at zero:
    # one line. A second process loads them from the same cache: no line.
    code = """
import logging
from numba import types as t
import mklopt._compile as C
C.SAY_AFTER = 0.0
C.watch()
from mklopt._jit import cuts
cuts.renormalise.compile((t.Array(t.float64, 1, "C"), t.float64))
cuts.scatter_normalised.compile((t.Array(t.float64, 1, "C"), t.Array(t.int64, 1, "C"), t.int64))
print(C.compile_seconds())
"""
    cache = str(tmp_path / "numba-cache")
    out1, first = run_python(code, NUMBA_CACHE_DIR=cache)
    out2, second = run_python(code, NUMBA_CACHE_DIR=cache)
    assert float(out1) > 0.0 and float(out2) == 0.0  # compiled, then loaded
    said = [line for line in first.splitlines() if "compiling mklopt's kernels" in line]
    assert len(said) == 1
    assert "first run after install" in said[0] and "cached afterwards" in said[0]
    assert "compiling mklopt's kernels" not in second


def test_a_no_point_error_says_when_compiling_took_the_time(monkeypatch):
    clock = iter([0.0, 6.0])
    monkeypatch.setattr(_compile, "prepare", lambda name: 0.0)
    monkeypatch.setattr(_compile, "compile_seconds", lambda: next(clock))
    with pytest.raises(NoPointError, match=r"stopped early\. 6 s of it went to compiling"):
        with fit_run("MKLClassifier", 10.0):
            raise NoPointError("stopped early.")
    # without compiling, the error is left as it was
    clock = iter([0.0, 0.0])
    with pytest.raises(NoPointError, match=r"^stopped early\.$"):
        with fit_run("MKLClassifier", 10.0):
            raise NoPointError("stopped early.")


def test_compile_note_only_for_compiling_that_mattered():
    assert _compile.compile_note(0.2, 10.0) == ""
    assert "3 s of it" in _compile.compile_note(3.0, 10.0)
    assert "mklopt compile" in _compile.compile_note(30.0)


@pytest.mark.slow
def test_a_first_fit_after_install_keeps_its_time_limit_for_the_problem(tmp_path):
    # An empty numba cache (a first run after install): the compiling
    # happens before the time limit starts, and the fit returns a
    # certified model, saying once that it compiles.
    code = """
import json
from mklopt import MKLClassifier, datasets
X, y = datasets.load("ionosphere")
clf = MKLClassifier(time_limit=10, verbose=1).fit(X, y)
print(json.dumps([clf.result_.reason, float(clf.result_.rel_gap)]))
"""
    out, err = run_python(code, NUMBA_CACHE_DIR=str(tmp_path / "numba-cache"))
    reason, gap = json.loads(out.splitlines()[-1])
    assert gap <= 1e-2, (reason, gap)
    assert err.count("compiling mklopt's kernels") == 1


def test_mklopt_compile_reports_each_path_and_fails_on_a_failed_one(monkeypatch, capsys):
    from mklopt.cli import main

    ran = []

    def boom():
        raise RuntimeError("no such path")

    monkeypatch.setattr(_compile, "_paths", lambda: [("first", lambda: ran.append(1)),
                                                     ("second", boom)])
    assert main(["compile"]) == 2
    err = capsys.readouterr().err
    assert ran == [1]
    assert "[1/2] first:" in err and "[2/2] second: failed (RuntimeError: no such path)" in err
    assert "could not compile the path(s): second" in err


@pytest.mark.slow
def test_mklopt_compile_runs_every_path(capsys):
    from mklopt.cli import main

    assert main(["compile"]) == 0
    err = capsys.readouterr().err
    n = len(_compile._paths())
    assert f"[{n}/{n}]" in err and "failed" not in err


def test_prepare_deals_the_plan_to_two_processes_in_balance():
    items = _compile._default_fit()
    lanes = _compile._lanes(items, 2)
    load = [_compile.HELPER_START * j for j in (0, 1)]
    for item, lane in zip(items, lanes):
        load[lane] += item[3]
    assert set(lanes) == {0, 1}
    # within one primitive of each other (the heaviest first to the lighter)
    assert abs(load[0] - load[1]) <= max(w for *_, w in items)
    assert _compile._lanes(items, 1) == [0] * len(items)


def test_a_cached_process_starts_no_compile_helper(monkeypatch):
    # Every later process (the cache filled) must not pay a helper's start.
    import subprocess

    def refuse(*a, **k):
        raise AssertionError("a helper was started with everything cached")

    monkeypatch.setattr(subprocess, "Popen", refuse)
    monkeypatch.setattr(_compile, "_cached", lambda disp: True)
    items = _compile._default_fit()
    lanes = _compile._lanes(items, 2)
    assert _compile._start_helpers("MKLClassifier", items, lanes, 2) == []
    assert lanes == [0] * len(items)  # everything is loaded here


def test_compile_jobs_follow_the_environment_and_the_cores(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    monkeypatch.setenv("MKLOPT_COMPILE_JOBS", "1")
    assert _compile._jobs() == 1
    monkeypatch.setenv("MKLOPT_COMPILE_JOBS", "3")
    assert _compile._jobs() == 3
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert _compile._jobs() == 1  # never more processes than cores


@pytest.mark.slow
def test_on_an_empty_cache_a_helper_compiles_part_of_the_plan_and_this_process_loads_it(
        tmp_path):
    code = """
import json
import mklopt._compile as C
C.prepare("MKLClassifier")
items = C._default_fit()
lanes = C._lanes(items, 2)
stats = [C._dispatcher(m, n).stats for m, n, *_ in items]
loaded = [bool(sum(s.cache_hits.values())) for s in stats]
print(json.dumps([lanes, loaded, C._jobs()]))
"""
    out, _ = run_python(code, NUMBA_CACHE_DIR=str(tmp_path / "numba-cache"),
                        MKLOPT_COMPILE_JOBS="2")
    lanes, loaded, jobs = json.loads(out.splitlines()[-1])
    weights = [w for *_, w in _compile._default_fit()]
    if jobs == 1:  # one core: no helper, everything compiles here
        assert not any(loaded)
        return
    # The helper's share came from the cache, this process's own was compiled
    # here. A primitive that another one of the other lane calls may be
    # compiled inside that one first (numba compiles a callee with its
    # caller, and the two processes race): the heaviest of each lane, and
    # most of the helper's weight, are checked.
    own = [i for i, lane in enumerate(lanes) if lane == 0]
    helper = [i for i, lane in enumerate(lanes) if lane == 1]
    assert not loaded[max(own, key=weights.__getitem__)]
    assert loaded[max(helper, key=weights.__getitem__)]
    assert sum(weights[i] for i in helper if loaded[i]) >= 0.75 * sum(weights[i] for i in helper)
    assert sum(weights[i] for i in own if loaded[i]) <= 0.25 * sum(weights[i] for i in own)
