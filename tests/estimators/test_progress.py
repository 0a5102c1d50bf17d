"""``verbose``: what every estimator prints while it fits, and that it is a proper parameter."""

import pickle
import re
import sys
import warnings

import numpy as np
import pytest

from mklopt import (
    MKBoostClassifier,
    MKLClassifier,
    MKLClassifierCV,
    MKLOneClass,
    MKLRegressor,
    MKLRegressorCV,
    datasets,
)
from mklopt._parallel import parallel_map
from mklopt.estimators import ConvergenceWarning
from mklopt.estimators._progress import PointTicker, TaskProgress, check_verbose
from mklopt.kernels import linear, rbf
from mklopt.persist import load_model, save_model

SPECS = [rbf(1.0), rbf(4.0), linear()]


@pytest.fixture(scope="module")
def three():
    """Three classes, 90 points: three one-vs-one pairs."""
    X, y = datasets.load("sonar")
    idx = np.random.default_rng(0).permutation(X.shape[0])[:90]
    X, y = X[idx, :8], y[idx]
    y = np.where(y > 0, "rock", np.where(X[:, 0] > np.median(X[:, 0]), "mine-a", "mine-b"))
    return X, y


@pytest.fixture(scope="module")
def reg():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    return X, np.sin(X[:, 0]) + 0.1 * rng.normal(size=60)


@pytest.fixture
def no_tqdm(monkeypatch):
    """tqdm not installed: its import fails."""
    monkeypatch.setitem(sys.modules, "tqdm", None)


def _fit(est, X, y=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # progress is what is tested
        return est.fit(X, y) if y is not None else est.fit(X)


def _lines(text):
    return [ln for ln in text.splitlines() if ln.strip()]


def _unit_lines(err, name):
    """The level-1 lines: ``[name] <unit> i of N (...)``; returns (i, N) per line."""
    found = re.findall(rf"^\[{name}\] [a-z ]+? (\d+)(?:-(\d+))? of (\d+) ", err, re.M)
    return [(int(a), int(b or a), int(n)) for a, b, n in found]


def _call_lines(err, name):
    return [ln for ln in err.splitlines() if re.match(rf"^\[{name}[^\]]*\] call \d+, ", ln)]


def _covers(units, total):
    """The reported units are 1..total, each once, in order, each with N = total."""
    seen = []
    for a, b, n in units:
        assert n == total
        seen.extend(range(a, b + 1))
    return seen == list(range(1, total + 1))


# ---------------------------------------------------------------- level 0 and 1
ESTIMATORS = {
    "classifier": (lambda v: MKLClassifier(kernels=SPECS, C=10.0, verbose=v), "three", 3),
    "mkboost": (lambda v: MKBoostClassifier(kernels=SPECS, n_rounds=4, random_state=0,
                                            verbose=v), "three", 3),
    "regressor": (lambda v: MKLRegressor(kernels=SPECS, verbose=v), "reg", 1),
    "one_class": (lambda v: MKLOneClass(kernels=SPECS, nu=0.3, verbose=v), "oc", 1),
    "classifier_cv": (lambda v: MKLClassifierCV(Cs=[1.0, 10.0], cv=2, kernels=SPECS,
                                                formulations=None, verbose=v), "three", 2 * 2 * 3),
    "regressor_cv": (lambda v: MKLRegressorCV(Cs=[1.0, 10.0], cv=2, kernels=SPECS,
                                              formulations=None, verbose=v), "reg", 2 * 2),
    # the default formulations: per pair p = 1, 2, inf (3 paths each) and
    # L1 shared (one path), every (fold, C) with search="exhaustive"
    "classifier_cv_formulations": (lambda v: MKLClassifierCV(Cs=[1.0, 10.0], cv=2,
                                                             kernels=SPECS, verbose=v,
                                                             search="exhaustive"),
                                   "three", 2 * 2 * (3 * 3 + 1)),
}


def _data(kind, three, reg):
    if kind == "three":
        return three
    if kind == "reg":
        return reg
    return reg[0], None


@pytest.mark.parametrize("key", list(ESTIMATORS))
def test_silent_at_verbose_0(key, three, reg, capfd):
    make, kind, _ = ESTIMATORS[key]
    _fit(make(0), *_data(kind, three, reg))
    out, err = capfd.readouterr()
    assert out == "" and err == ""


@pytest.mark.parametrize("key", list(ESTIMATORS))
def test_verbose_1_lines_count_every_unit(key, three, reg, capsys, no_tqdm):
    make, kind, total = ESTIMATORS[key]
    est = _fit(make(1), *_data(kind, three, reg))
    out, err = capsys.readouterr()
    assert out == ""
    name = type(est).__name__
    units = _unit_lines(err, name)
    assert _covers(units, total), err
    unit_lines = [ln for ln in err.splitlines() if re.match(rf"^\[{name}\] [a-z ]+ \d", ln)]
    assert len(unit_lines) == len(units)
    assert all("elapsed" in ln and "ETA" in ln for ln in unit_lines)
    assert not _call_lines(err, name)  # oracle calls only at 2
    if key.endswith("_cv"):
        # the refit at the chosen C prints its own problems' lines
        inner = type(est.best_estimator_).__name__
        assert f"best C={est.best_C_:g}" in err
        assert _covers(_unit_lines(err, inner), 3 if key == "classifier_cv" else 1)


def test_verbose_1_lines_of_a_halving_search_count_the_points_solved(three, capsys, no_tqdm):
    # later rounds' survivors are not known in advance: N is an upper bound
    # until the last round starts, then exact
    est = _fit(MKLClassifierCV(Cs=[1.0, 10.0], cv=3, kernels=SPECS, verbose=1), *three)
    err = capsys.readouterr().err
    units = _unit_lines(err, type(est).__name__)
    solved = sum(int(p["evaluated"].sum()) for p in est.paths_)
    seen = [i for a, b, _ in units for i in range(a, b + 1)]
    assert seen == list(range(1, solved + 1)), err
    assert units[-1][2] == solved
    assert all(n >= solved for _, _, n in units)


def test_verbose_1_names_pairs_and_gaps(three, capsys, no_tqdm):
    X, y = three
    clf = _fit(MKLClassifier(kernels=SPECS, C=10.0, verbose=1), X, y)
    err = capsys.readouterr().err
    for (i, j), gap, calls in zip(clf.pairs_, clf.gap_, clf.n_oracle_calls_, strict=True):
        a, b = clf.classes_[[i, j]]
        line = next(ln for ln in err.splitlines() if f"('{a}' vs '{b}')" in ln)
        assert f"rel. gap {gap:.2e}" in line and f"{calls} oracle call" in line


# ---------------------------------------------------------------- level 2
def test_verbose_2_one_line_per_oracle_call(three, capsys, no_tqdm):
    X, y = three
    clf = _fit(MKLClassifier(kernels=SPECS, C=10.0, verbose=2), X, y)
    err = capsys.readouterr().err
    for (i, j), gap, calls in zip(clf.pairs_, clf.gap_, clf.n_oracle_calls_, strict=True):
        a, b = clf.classes_[[i, j]]
        mine = [ln for ln in _call_lines(err, "MKLClassifier") if f" '{a}' vs '{b}']" in ln]
        assert [int(re.search(r"call (\d+),", ln).group(1)) for ln in mine] == list(
            range(1, calls + 1))
        # the last call's best point is the pair's result
        assert f"rel. gap {gap:.2e}" in mine[-1]
    assert _covers(_unit_lines(err, "MKLClassifier"), 3)


def test_verbose_2_mkboost_reports_the_loss(three, capsys, no_tqdm):
    X, y = three
    clf = _fit(MKBoostClassifier(kernels=SPECS, n_rounds=4, random_state=0, verbose=2), X, y)
    lines = _call_lines(capsys.readouterr().err, "MKBoostClassifier")
    assert len(lines) == sum(len(h) for h in clf.history_)
    assert all("exp loss=" in ln and "rel. gap" not in ln for ln in lines)


def test_verbose_2_on_the_fly_reports_rows_and_cache(capsys, no_tqdm):
    """A row cache too small for the matrix: the row path, with its rate and hit rate."""
    X, y = datasets.load("sonar")
    clf = _fit(MKLClassifier(kernels=SPECS, C=10.0, storage="on_the_fly", cache_size=0.05,
                             verbose=2), X[:150], y[:150])
    lines = _call_lines(capsys.readouterr().err, "MKLClassifier")
    assert len(lines) == clf.n_oracle_calls_
    rates = [float(re.search(r", ([\d,]+) kernel rows/s", ln).group(1).replace(",", ""))
             for ln in lines]
    hits = [int(re.search(r"row cache hits (\d+)%", ln).group(1)) for ln in lines]
    assert all(r > 0 for r in rates)
    assert all(0 <= h <= 100 for h in hits)


def test_verbose_2_dense_has_no_rows_per_second(three, capsys, no_tqdm):
    X, y = three
    _fit(MKLClassifier(kernels=SPECS, storage="dense", verbose=2), X, y)
    lines = _call_lines(capsys.readouterr().err, "MKLClassifier")
    assert lines and not any("rows/s" in ln for ln in lines)


def test_verbose_2_cv_names_fold_and_C(reg, capsys, no_tqdm):
    X, y = reg
    _fit(MKLRegressorCV(formulations=None, Cs=[1.0, 10.0], cv=2, kernels=SPECS, verbose=2), X, y)
    lines = _call_lines(capsys.readouterr().err, "MKLRegressorCV")
    for k in (1, 2):
        for C in (1, 10):
            assert any(f"[MKLRegressorCV fold {k} of 2 C={C}] call 1," in ln for ln in lines)


def test_verbose_2_cv_numbers_every_call_of_a_path_point(reg, capsys, no_tqdm):
    # A path point's first call (the hand-over of the previous weights) is
    # made before its run: it has a line too, and the run's calls follow it,
    # so each point shows calls 1..N for the N its summary line reports,
    # including points that the hand-over call alone certifies.
    X, y = reg
    _fit(MKLRegressorCV(formulations=None, Cs=[1.0, 10.0, 100.0], cv=2, kernels=SPECS, verbose=2), X, y)
    err = capsys.readouterr().err
    points = re.findall(r"path point \d+ of \d+ \((fold \d+ of 2 C=\d+)\): rel\. gap \S+, "
                        r"(\d+) oracle calls?", err)
    assert len(points) == 6
    for where, n in points:
        got = [int(c) for c in re.findall(rf"\[MKLRegressorCV {where}\] call (\d+), ", err)]
        assert got == list(range(1, int(n) + 1)), (where, n, got)


def test_user_callback_still_called(three, capsys, no_tqdm):
    rows = []
    X, y = three
    clf = _fit(MKLClassifier(kernels=SPECS, verbose=2, callback=rows.append), X, y)
    assert len(rows) == int(np.sum(clf.n_oracle_calls_))


# ---------------------------------------------------------------- tqdm
def test_tqdm_bar_when_installed(three, capsys):
    pytest.importorskip("tqdm")
    X, y = three
    _fit(MKLClassifier(kernels=SPECS, verbose=2), X, y)
    err = capsys.readouterr().err
    assert "3/3" in err  # the bar's i/N
    assert not _unit_lines(err, "MKLClassifier")  # the bar replaces the lines
    assert _call_lines(err, "MKLClassifier")  # level-2 lines are written above it


def test_tqdm_cv_bar(reg, capsys):
    pytest.importorskip("tqdm")
    X, y = reg
    _fit(MKLRegressorCV(formulations=None, Cs=[1.0, 10.0], cv=2, kernels=SPECS, verbose=1), X, y)
    assert "4/4" in capsys.readouterr().err


# ---------------------------------------------------------------- parallel
def test_parallel_pairs_reported_as_they_end(three, capsys, no_tqdm):
    joblib = pytest.importorskip("joblib")
    X, y = three
    with joblib.parallel_backend("threading"):
        clf = _fit(MKLClassifier(kernels=SPECS, n_jobs=2, verbose=1), X, y)
    err = capsys.readouterr().err
    assert _covers(_unit_lines(err, "MKLClassifier"), 3)
    # parallel pairs run independently: those of an n_jobs=2 fit of any backend
    with joblib.parallel_backend("loky"):
        other = _fit(MKLClassifier(kernels=SPECS, n_jobs=2), X, y)
    np.testing.assert_allclose(clf.weights_, other.weights_, rtol=1e-10, atol=1e-12)


def test_cv_folds_in_other_processes_report_their_points(reg, capsys, no_tqdm):
    pytest.importorskip("joblib")
    X, y = reg
    _fit(MKLRegressorCV(formulations=None, Cs=[1.0, 10.0], cv=3, kernels=SPECS, n_jobs=2, verbose=1), X, y)
    err = capsys.readouterr().err
    units = _unit_lines(err, "MKLRegressorCV")
    # The first fold runs here (its path guides the others): a line per
    # point. Each other fold's two points arrive at once, when its process
    # returns.
    assert _covers(units, 6), err
    assert units[:2] == [(1, 1, 6), (2, 2, 6)], err
    assert all(b - a == 1 for a, b, _ in units[2:]), err


@pytest.mark.parametrize("n_jobs", [None, 2])
def test_parallel_map_on_done_once_per_task(n_jobs):
    if n_jobs is not None:
        joblib = pytest.importorskip("joblib")
        backend = joblib.parallel_backend("threading")
    else:
        import contextlib
        backend = contextlib.nullcontext()
    seen = []
    with backend:
        out = parallel_map(pow, [(k, 2) for k in range(7)], n_jobs,
                           on_done=lambda k, v: seen.append((k, v)))
    assert out == [k * k for k in range(7)]
    assert sorted(seen) == [(k, k * k) for k in range(7)]


def test_point_ticker_leaves_the_bar_behind():
    progress = TaskProgress(1, "X", 4, "point")
    ticker = pickle.loads(pickle.dumps(PointTicker(progress, 0)))
    assert ticker.progress is None
    ticker("a")  # a copy in another process reports nothing here
    assert progress.done == 0


# ---------------------------------------------------------------- the parameter
ALL = [MKLClassifier, MKLRegressor, MKLOneClass, MKBoostClassifier, MKLClassifierCV,
       MKLRegressorCV]


@pytest.mark.parametrize("cls", ALL)
def test_verbose_is_a_constructor_parameter(cls):
    from sklearn.base import clone

    est = cls()
    assert est.get_params()["verbose"] == 0
    est.set_params(verbose=2)
    assert clone(est).verbose == 2


@pytest.mark.parametrize("cls", ALL)
@pytest.mark.parametrize("bad, error", [(-1, ValueError), ("yes", TypeError), (1.5, TypeError)])
def test_bad_verbose_is_refused_by_name(cls, bad, error, reg):
    X, y = reg
    y = (y > 0).astype(int) if cls in (MKLClassifier, MKBoostClassifier, MKLClassifierCV) else y
    with pytest.raises(error, match="verbose"):
        cls(kernels=SPECS, verbose=bad).fit(X, *(() if cls is MKLOneClass else (y,)))


def test_check_verbose_accepts_bools_and_ints():
    assert check_verbose(True) == 1 and check_verbose(False) == 0
    assert check_verbose(np.int64(2)) == 2


def test_saved_model_keeps_verbose_and_old_files_load(three, tmp_path):
    X, y = three
    clf = _fit(MKLClassifier(kernels=SPECS, verbose=0), X, y)
    old = tmp_path / "old.npz"
    save_model(clf, old)  # verbose=0 is not written: the file an older version writes
    with np.load(old) as f:
        assert "verbose" not in str(f["metadata"])
    assert load_model(old)[0].verbose == 0
    clf.set_params(verbose=2)
    new = tmp_path / "new.npz"
    save_model(clf, new)
    loaded, meta = load_model(new)
    assert loaded.verbose == 2 and meta["params"]["verbose"] == 2
    np.testing.assert_array_equal(loaded.predict(X), clf.predict(X))


def test_cli_fit_verbose(three, tmp_path, capsys, no_tqdm):
    from mklopt.cli import main

    X, y = three
    path = tmp_path / "d.csv"
    header = ",".join(f"x{i}" for i in range(X.shape[1])) + ",label"
    rows = [",".join(repr(float(v)) for v in r) + f",{lab}" for r, lab in zip(X, y)]
    path.write_text("\n".join([header, *rows]) + "\n")
    model = tmp_path / "m.npz"
    assert main(["fit", str(path), "-vv", "--kernels", "grid", "--model", str(model)]) == 0
    err = capsys.readouterr().err
    assert _covers(_unit_lines(err, "MKLClassifier"), 3)
    assert _call_lines(err, "MKLClassifier")
    assert main(["fit", str(path), "--kernels", "grid", "--model", str(model)]) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("verbose", [1, 2])
def test_a_long_call_reports_while_it_runs_at_verbose_2(verbose, capsys, no_tqdm, monkeypatch):
    import mklopt._heartbeat as heartbeat
    from mklopt.stopping import NoPointError

    monkeypatch.setattr(heartbeat, "PERIOD", 0.2)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20000, 4))
    y = np.where(X[:, 0] > 0, 1, -1)
    # one call over 20,000 rows from a tiny cache takes far longer than the limit
    with pytest.raises(NoPointError, match="time_limit"):
        MKLClassifier(kernels=SPECS, storage="on_the_fly", cache_size=1.0, tol=1e-9,
                      time_limit=1.5, verbose=verbose).fit(X, y)
    running = [ln for ln in capsys.readouterr().err.splitlines()
               if ln.startswith("[MKLClassifier] oracle call running for")]
    if verbose == 1:
        assert running == []
    else:
        assert running, "no line while the call ran"
        assert all("kernel rows computed" in ln and "rows/s" in ln for ln in running)
        assert "every one of the 20,000 rows once takes" in running[-1]
