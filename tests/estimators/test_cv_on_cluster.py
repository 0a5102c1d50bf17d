"""The CV estimators on a Dask cluster: folds as named tasks, the bank sent once, retried folds.

A module-scoped ``LocalCluster(n_workers=2, processes=True)``. Each fold's
warm-started C path runs the serial code on a worker, so the scores, the
path values and the chosen C must be those of the fit without a client
(with BLAS on one thread, as Dask's workers run it); a worker killed in the
middle of a fold must give a retried task and the same answer.
"""

import warnings

import numpy as np
import pytest

from mklopt import MKLClassifierCV, MKLRegressorCV, datasets
from mklopt.kernels import linear, poly, rbf
from tests._cluster import (
    KillOnce,
    first_scatter_to_one_worker,
    local_client,
    no_hang,
    wait_for_workers,
)

distributed = pytest.importorskip("distributed")
threadpoolctl = pytest.importorskip("threadpoolctl")

SPECS = [rbf(1.0), rbf(8.0), poly(2), linear()]
CS = [0.1, 1.0, 10.0]


@pytest.fixture(scope="module")
def client():
    with local_client() as c:
        yield c


@pytest.fixture(scope="module")
def three_classes():
    X, y = datasets.load("satellite")
    rng = np.random.default_rng(1)
    keep = np.flatnonzero(np.isin(y, np.unique(y)[:3]))
    keep = np.sort(rng.choice(keep, 120, replace=False))
    X = X[keep]
    return (X - X.mean(axis=0)) / X.std(axis=0), y[keep]


def _cv(cv=3, **kw):
    return MKLClassifierCV(Cs=CS, cv=cv, kernels=SPECS, tol=1e-2, formulations=None, **kw)


def _fit(est, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(X, y)


@pytest.fixture(scope="module")
def serial(three_classes):
    X, y = three_classes
    with threadpoolctl.threadpool_limits(1):
        return _fit(_cv(), X, y)


def _assert_same(a, b):
    for k in range(3):
        key = f"split{k}_test_score"
        np.testing.assert_array_equal(b.cv_results_[key], a.cv_results_[key])
    np.testing.assert_allclose(b.path_value_, a.path_value_, rtol=1e-10)
    assert b.best_C_ == a.best_C_
    np.testing.assert_allclose(b.weights_, a.weights_, rtol=1e-10, atol=1e-14)


def test_folds_are_named_tasks_on_a_bank_scattered_once(client, three_classes, serial):
    X, y = three_classes
    scattered = []
    real = client.scatter

    def spy(data, **kw):
        scattered.append(kw)
        return real(data, **kw)

    client.scatter = spy
    try:
        with no_hang(600), distributed.get_task_stream(client) as stream:
            cv = _fit(_cv(client=client), X, y)
    finally:
        del client.scatter
    _assert_same(serial, cv)
    keys = [str(t["key"]) for t in stream.data]
    folds = sorted(k.rsplit("-", 1)[0] for k in keys if k.startswith("mklopt-fold-"))
    # the first fold's path guides the others: it runs here, the others there
    assert folds == ["mklopt-fold-1", "mklopt-fold-2"]
    assert len(scattered) == 1 and scattered[0]["broadcast"]  # the bank, once, to every worker


def test_a_worker_killed_during_a_fold_gives_a_retried_task(client, three_classes, serial,
                                                              tmp_path):
    X, y = three_classes
    marker = tmp_path / "killed"
    try:
        with no_hang(600):
            cv = _fit(_cv(client=client, callback=KillOnce(marker)), X, y)
        assert marker.exists()  # a worker did die in the middle of a fold
        _assert_same(serial, cv)
    finally:
        wait_for_workers(client, 2)
    assert client.submit(sum, [1, 2], pure=False).result() == 3  # still usable


def test_a_worker_killed_with_the_last_copy_of_the_bank_gives_retried_tasks(
        client, three_classes, tmp_path):
    # A worker that joins after the scatter (one restarted after a crash)
    # holds no copy of the bank: here the first scatter reaches one worker
    # only, and that worker dies during the one fold sent to the cluster
    # (cv=2: the first fold runs here), before any other worker read the
    # bank. Dask cannot recompute scattered data and cancels the fold; it
    # runs again on a new scatter.
    X, y = three_classes
    with threadpoolctl.threadpool_limits(1):
        serial = _fit(_cv(cv=2), X, y)
    marker = tmp_path / "killed"
    with first_scatter_to_one_worker(client) as (holder, calls), no_hang(600):
        cv = _fit(_cv(cv=2, client=client, callback=KillOnce(marker, holder)), X, y)
    assert marker.exists()  # the bank's only holder did die in a fold
    assert len(calls) == 2  # and the bank was scattered again
    for k in range(2):
        key = f"split{k}_test_score"
        np.testing.assert_array_equal(cv.cv_results_[key], serial.cv_results_[key])
    assert cv.best_C_ == serial.best_C_


def test_regressor_cv_on_the_cluster_equals_the_serial_fit(client):
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, (90, 3))
    y = np.sin(X[:, 0]) + 0.3 * X[:, 1] ** 2 + 0.1 * rng.standard_normal(90)
    kw = dict(Cs=CS, cv=3, kernels=[rbf(0.5), poly(2), linear()], tol=1e-2)
    with threadpoolctl.threadpool_limits(1):
        a = _fit(MKLRegressorCV(**kw), X, y)
    with no_hang(600), distributed.get_task_stream(client) as stream:
        b = _fit(MKLRegressorCV(**kw, client=client), X, y)
    for k in range(3):
        key = f"split{k}_test_score"
        np.testing.assert_allclose(b.cv_results_[key], a.cv_results_[key], rtol=1e-10)
    assert b.best_C_ == a.best_C_
    keys = {str(t["key"]).rsplit("-", 1)[0] for t in stream.data}
    assert {"mklopt-fold-1", "mklopt-fold-2"} <= keys and "mklopt-fold-0" not in keys


def test_cv_refuses_client_with_n_jobs_or_a_bad_client(client, three_classes):
    X, y = three_classes
    with pytest.raises(ValueError, match="client and n_jobs=2 cannot be combined"):
        _cv(client=client, n_jobs=2).fit(X, y)
    with pytest.raises(TypeError, match="client must be a dask.distributed.Client"):
        _cv(client="tcp://localhost:8786").fit(X, y)
    from sklearn.base import clone

    assert clone(_cv(client=client)).client is client
