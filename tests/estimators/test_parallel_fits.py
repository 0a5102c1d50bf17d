"""Independent fits as parallel tasks: the same models as the serial loop (DESIGN section 11).

One-vs-one pairs of MKLClassifier and MKBoostClassifier run through
joblib with ``n_jobs`` (local processes) or inside
``joblib.parallel_backend("dask")`` (tasks on a module-scoped
``LocalCluster(n_workers=2, processes=True)``). The fitted models must equal
the serial ones (weights, dual coefficients, biases to 1e-10 relative;
labels exactly), a worker killed during a pair must give a retried task
with the same model, and bad ``n_jobs`` values are refused naming the
argument.
"""

import os
import signal
import sys
import warnings

import joblib
import numpy as np
import pytest
import sklearn.base

from mklopt import MKBoostClassifier, MKLClassifier, datasets
from mklopt._parallel import check_n_jobs, parallel_map
from mklopt.kernels import poly, rbf
from tests._cluster import KillOnce, local_client, no_hang, wait_for_workers

distributed = pytest.importorskip("distributed")


def rel(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


@pytest.fixture(scope="module")
def data():
    """Three satellite classes, 20 samples each (3 pairs), standardised."""
    X, y = datasets.load("satellite")
    rng = np.random.default_rng(0)
    keep = np.unique(y)[:3]
    idx = np.concatenate([rng.choice(np.flatnonzero(y == c), 20, replace=False) for c in keep])
    X = X[idx]
    return (X - X.mean(0)) / X.std(0), y[idx]


SPECS = [rbf(0.5), rbf(2.0), rbf(8.0), poly(2), rbf(1.0, [0, 1, 2])]


def mkl(**kw):
    return MKLClassifier(kernels=SPECS, C=10.0, **kw)


def boost(**kw):
    return MKBoostClassifier(kernels=SPECS, n_rounds=6, variant="D2", random_state=3, **kw)


def assert_same_mkl(a, b, X):
    assert rel(b.weights_, a.weights_) <= 1e-10
    assert rel(b.intercept_, a.intercept_) <= 1e-10
    for sa, sb, ca, cb in zip(a.support_, b.support_, a.dual_coef_, b.dual_coef_):
        np.testing.assert_array_equal(sa, sb)
        assert rel(cb, ca) <= 1e-10
    np.testing.assert_array_equal(b.n_oracle_calls_, a.n_oracle_calls_)
    np.testing.assert_array_equal(b.predict(X), a.predict(X))


def assert_equivalent_mkl(a, b, X):
    """Two fits of the same problem through different kernel storages.

    Pairs on a cluster build banks of their own, equal to the shared
    bank's views up to rounding. A pair starts from its parent pair's
    weights, so rounding-level differences move the path (not the
    certificate): each pair's certified intervals [lower, value] of the
    optimum must overlap, and the models must predict alike.
    """
    for ra, rb in zip(a.result_, b.result_):
        slack = 1e-3 * abs(ra.value)  # inner solves: a share of tol=1e-2
        assert ra.lower <= rb.value + slack and rb.lower <= ra.value + slack
        assert ra.converged and rb.converged
    np.testing.assert_array_equal(b.predict(X), a.predict(X))


def assert_same_boost(a, b, X):
    assert rel(b.weights_, a.weights_) <= 1e-10
    np.testing.assert_array_equal(b.n_fits_, a.n_fits_)
    for ea, eb in zip(a.ensemble_, b.ensemble_):
        assert len(ea) == len(eb)
        for ra, rb in zip(ea.rounds, eb.rounds):
            for la, lb in zip(ra.learners, rb.learners):
                np.testing.assert_array_equal(la.support, lb.support)
                np.testing.assert_allclose(lb.coef, la.coef, rtol=1e-10)
    assert rel(b.decision_function(X), a.decision_function(X)) <= 1e-10
    np.testing.assert_array_equal(b.predict(X), a.predict(X))


class _Independent(MKLClassifier):
    """Serial pairs without warm starts: what parallel pairs compute."""

    def _parents(self, plan, task, problems):
        return None


@pytest.fixture(scope="module")
def serial(data):
    X, y = data
    return mkl().fit(X, y), boost().fit(X, y)


@pytest.fixture(scope="module")
def independent(data):
    """The serial fit with each pair from the method's own start, as parallel pairs run."""
    X, y = data
    return _Independent(kernels=SPECS, C=10.0).fit(X, y)


def test_serial_pairs_start_warm_and_certify_the_same_optima(data, serial, independent):
    X, _ = data
    # one by one, pairs start from a neighbour's weights: other paths, same certificates
    assert_equivalent_mkl(independent, serial[0], X)


@pytest.fixture(scope="module")
def client():
    with local_client() as c:
        yield c


# ---------------------------------------------------------------- the helper
def test_parallel_map_keeps_the_order_and_checks_n_jobs():
    tasks = [(k, 10 * k) for k in range(7)]
    want = [a + b for a, b in tasks]
    assert parallel_map(_add, tasks) == want
    assert parallel_map(_add, tasks, n_jobs=2) == want
    assert parallel_map(_add, [], n_jobs=2) == []
    assert check_n_jobs(None) is None and check_n_jobs(-1) == -1
    with pytest.raises(ValueError, match="n_jobs=0 runs nothing"):
        check_n_jobs(0)
    with pytest.raises(TypeError, match="n_jobs must be None or an int"):
        check_n_jobs(2.0)
    with pytest.raises(TypeError, match="n_jobs must be None or an int"):
        check_n_jobs(True)


def _add(a, b):
    return a + b


def test_without_joblib_serial_fits_work_and_parallel_ones_say_what_to_install(
    data, serial, monkeypatch
):
    X, y = data
    monkeypatch.setitem(sys.modules, "joblib", None)  # import joblib fails
    a = mkl(n_jobs=1).fit(X, y)
    assert_same_mkl(serial[0], a, X)
    with pytest.raises(ImportError, match=r"n_jobs=2 .* pip install joblib"):
        mkl(n_jobs=2).fit(X, y)


@pytest.mark.parametrize("make", [mkl, boost], ids=["mkl", "mkboost"])
def test_bad_n_jobs_is_refused_before_fitting(data, make):
    X, y = data
    with pytest.raises(ValueError, match="n_jobs=0"):
        make(n_jobs=0).fit(X, y)
    with pytest.raises(TypeError, match="n_jobs must be None or an int"):
        make(n_jobs="dask").fit(X, y)


# ---------------------------------------------------------------- local processes
def test_pairs_in_local_processes_equal_the_serial_fit(data, serial):
    X, y = data
    assert_same_mkl(serial[0], mkl(n_jobs=2).fit(X, y), X)
    assert_same_boost(serial[1], boost(n_jobs=2).fit(X, y), X)


def test_binary_problems_and_clones_keep_n_jobs(data):
    X, y = data
    two = np.isin(y, np.unique(y)[:2])
    a = mkl().fit(X[two], y[two])
    b = mkl(n_jobs=2).fit(X[two], y[two])  # one pair: run in this process
    assert rel(b.weights_, a.weights_) <= 1e-10
    assert sklearn.base.clone(mkl(n_jobs=3)).n_jobs == 3


def test_time_limit_holds_for_pairs_in_other_processes(data):
    X, y = data
    from mklopt.estimators._sklearn import ConvergenceWarning
    from mklopt.stopping import NoPointError

    # In the workers too, a limit that ends inside the first oracle call
    # stops it (and leaves no point to keep): the fit says so.
    with pytest.raises(NoPointError, match="time_limit"):
        mkl(n_jobs=2, time_limit=1e-6, tol=1e-12).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf = mkl(n_jobs=2, time_limit=600.0).fit(X, y)
    assert np.all(clf.n_oracle_calls_ >= 1)


# ---------------------------------------------------------------- Dask tasks
def test_pairs_as_dask_tasks_equal_the_serial_fit(client, data, serial):
    X, y = data
    with joblib.parallel_backend("dask"):
        a = mkl().fit(X, y)  # n_jobs=None: the backend decides
        b = boost(n_jobs=-1).fit(X, y)
    assert_same_mkl(serial[0], a, X)
    assert_same_boost(serial[1], b, X)


def test_dask_pairs_report_progress_as_they_end(client, data, serial, capsys, monkeypatch):
    """verbose=1: one line per pair task, written here as each task ends, ranks 1..3."""
    import re

    monkeypatch.setitem(sys.modules, "tqdm", None)  # plain lines
    X, y = data
    with joblib.parallel_backend("dask"):
        a = mkl(verbose=1).fit(X, y)
    err = capsys.readouterr().err
    ranks = re.findall(r"^\[MKLClassifier\] pair (\d) of 3 ", err, re.M)
    assert ranks == ["1", "2", "3"], err
    assert_same_mkl(serial[0], a, X)


class _RecordTask:
    """A callback that writes the key of the Dask task it runs in to a file."""

    def __init__(self, folder):
        self.folder = str(folder)

    def __call__(self, progress):
        key = distributed.get_worker().get_current_task()
        with open(os.path.join(self.folder, f"{key}.txt"), "w") as fh:
            fh.write(key)


def test_pair_tasks_are_named_after_their_pair(client, data, serial, tmp_path):
    X, y = data
    with no_hang(600), joblib.parallel_backend("dask"):
        b = mkl(callback=_RecordTask(tmp_path)).fit(X, y)
    assert_same_mkl(serial[0], b, X)
    names = sorted(p.stem.rsplit("-", 1)[0] for p in tmp_path.glob("*.txt"))
    assert names == ["mklopt-pair-0-vs-1", "mklopt-pair-0-vs-2", "mklopt-pair-1-vs-2"]


def test_a_worker_killed_during_a_pair_gives_a_retried_task(client, data, serial, tmp_path):
    X, y = data
    marker = tmp_path / "killed"
    try:
        with no_hang(600), joblib.parallel_backend("dask"):
            b = mkl(callback=KillOnce(marker)).fit(X, y)
        assert marker.exists()  # a worker did die mid-fit
        assert_same_mkl(serial[0], b, X)
    finally:
        wait_for_workers(client, 2)
    assert client.submit(sum, [1, 2], pure=False).result() == 3  # still usable


def _kill_my_worker(progress):
    """A callback that kills the Dask worker it runs on (at the second oracle call)."""
    if progress.n_oracle_calls == 2:
        try:
            distributed.get_worker()
        except ValueError:
            return  # not on a worker
        os.kill(os.getpid(), signal.SIGKILL)


def _set_allowed_failures(n, dask_scheduler=None):
    old = dask_scheduler.allowed_failures
    dask_scheduler.allowed_failures = n
    return old


def test_a_pair_whose_workers_keep_dying_fails_the_fit_in_bounded_time(client, data):
    """Retries are Dask's (allowed-failures, here 0): then KilledWorker names the task."""
    X, y = data
    old = client.run_on_scheduler(_set_allowed_failures, 0)
    try:
        with no_hang(600), joblib.parallel_backend("dask"):
            with pytest.raises(distributed.KilledWorker, match="Attempted to run task"):
                mkl(callback=_kill_my_worker).fit(X, y)
    finally:
        client.run_on_scheduler(_set_allowed_failures, old)
        wait_for_workers(client, 2)
    assert client.submit(sum, [1, 2], pure=False).result() == 3  # still usable


# ---------------------------------------------------------------- bench splits
def _bench_runs(tmp_path, capsys, tag, *extra):
    from mklopt.cli import main

    out = tmp_path / tag
    argv = ["bench", "--protocol", "mkboost2013", "--datasets", "sonar", "--splits", "2"]
    argv += ["--methods", "lp2", "level"]
    code = main([*argv, "--out", str(out), "--quiet", *extra])
    err = capsys.readouterr().err
    assert code == 0, err
    import json

    return json.loads((out / "runs.json").read_text())["runs"]


def test_bench_splits_in_parallel_equal_the_serial_ones(client, tmp_path, capsys):
    serial = _bench_runs(tmp_path, capsys, "serial")
    local = _bench_runs(tmp_path, capsys, "local", "--n-jobs", "2")
    dask = _bench_runs(tmp_path, capsys, "dask", "--scheduler", client.scheduler.address)
    assert len(serial) == 4
    for other in (local, dask):
        for a, b in zip(serial, other):
            assert (a["split"], a["method"]) == (b["split"], b["method"])
            assert a["n_svm_calls"] == b["n_svm_calls"] and a["accuracy"] == b["accuracy"]
            assert abs(a["value"] - b["value"]) <= 1e-10 * abs(a["value"])


def test_bench_refuses_bad_parallel_options(tmp_path, capsys):
    from mklopt.cli import main

    code = main(["bench", "--n-jobs", "0", "--out", str(tmp_path), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "--n-jobs=0 runs nothing" in err


@pytest.mark.slow
def test_bench_refuses_an_unreachable_scheduler(tmp_path, capsys):
    from mklopt.cli import main

    code = main(["bench", "--scheduler", "tcp://127.0.0.1:1", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and "cannot connect to the Dask scheduler tcp://127.0.0.1:1" in err


def test_pairs_are_dispatched_largest_first_and_kept_in_pair_order(monkeypatch):
    # Unequal classes: pairs of different sizes. The tasks go out largest
    # first (a shorter makespan in parallel); the models stay in pair order.
    import mklopt.estimators._fit as core

    rng = np.random.default_rng(3)
    sizes = {0: 12, 1: 30, 2: 20, 3: 8}
    X = np.vstack([rng.normal(loc=c, size=(k, 2)) for c, k in sizes.items()])
    y = np.repeat(list(sizes), list(sizes.values()))
    waves = []
    real = core.parallel_map

    def spy(func, tasks, *args, **kwargs):
        waves.append([])

        def record():
            for t in tasks:
                waves[-1].append(t[3].rows.size)  # (name, plan, X, problem, start)
                yield t
        return real(func, record(), *args, **kwargs)

    monkeypatch.setattr(core, "parallel_map", spy)
    clf = MKLClassifier(kernels=[rbf(1.0), poly(2)], C=1.0).fit(X, y)
    # pairs go out in waves (each after the pair it starts from), largest first in each
    assert all(w == sorted(w, reverse=True) for w in waves)
    assert sum(len(w) for w in waves) == 6 and max(len(w) for w in waves) > 1
    monkeypatch.setattr(core, "parallel_map", real)
    ref = MKLClassifier(kernels=[rbf(1.0), poly(2)], C=1.0).fit(X, y)
    np.testing.assert_array_equal(clf.pairs_, ref.pairs_)
    np.testing.assert_array_equal(clf.weights_, ref.weights_)
    for (i, j), model in zip(clf.pairs_, clf.models_):
        # each model was fitted on its own pair's points
        assert model.result.alpha.size == sizes[i] + sizes[j]
