"""``mklopt fit`` on a .npy/.npz stack of precomputed kernels, and ``mklopt predict`` on one."""

import re

import numpy as np
import pytest

from mklopt import KernelBank, MKLClassifier, datasets
from mklopt.kernels import linear, rbf
from mklopt.persist import load_model

from .test_cli import _one_error_line, _run


@pytest.fixture(scope="module")
def stacks(tmp_path_factory):
    X, y = datasets.load("satellite")
    rng = np.random.default_rng(0)
    keep = np.sort(rng.choice(np.flatnonzero(np.isin(y, np.unique(y)[:3])), 150, replace=False))
    X, y = X[keep], y[keep]
    K = KernelBank.from_specs(X, [rbf(1.0), rbf(8.0), linear()], normalize=None).blocks(
        np.arange(3), np.arange(150), np.arange(150))
    tr, te = np.arange(100), np.arange(100, 150)
    folder = tmp_path_factory.mktemp("stacks")
    K_tr, K_te = K[:, tr][:, :, tr], K[:, te][:, :, tr]
    np.save(folder / "train.npy", K_tr)
    np.save(folder / "y.npy", y[tr])
    np.savez(folder / "train.npz", **{f"k{k}": K_tr[k] for k in range(3)}, label=y[tr])
    np.savez(folder / "test.npz", kernels=K_te, label=y[te])
    np.save(folder / "test.npy", K_te)
    return {"folder": folder, "K_tr": K_tr, "K_te": K_te, "y_tr": y[tr], "y_te": y[te]}


def test_fit_and_predict_a_stack_equal_the_estimator(stacks, capsys):
    f = stacks["folder"]
    code, out, err = _run(capsys, "fit", f / "train.npy", "--labels", f / "y.npy", "--C", "10",
                          "--model", f / "m.npz")
    assert code == 0, err
    assert "3 precomputed kernels of 100 samples, 3 classes" in out
    ref = MKLClassifier(kernels="precomputed", C=10.0).fit(stacks["K_tr"], stacks["y_tr"])
    clf, meta = load_model(f / "m.npz")
    np.testing.assert_allclose(clf.weights_, ref.weights_, atol=1e-12)
    code, out, err = _run(capsys, "predict", f / "m.npz", f / "test.npz")
    assert code == 0, err
    pred = np.array(out.splitlines()[1:])
    np.testing.assert_array_equal(pred, ref.predict(stacks["K_te"]).astype(str))
    acc = np.mean(pred == stacks["y_te"].astype(str))
    assert f"accuracy on {f / 'test.npz'}: {acc:.4f} (50 rows)" in err
    # The same kernels as one 2-D array each, labels inside the archive.
    code, _, err = _run(capsys, "fit", f / "train.npz", "--C", "10", "--model", f / "m2.npz")
    assert code == 0, err
    clf2, _ = load_model(f / "m2.npz")
    np.testing.assert_array_equal(clf2.weights_, clf.weights_)
    code, _, err = _run(capsys, "predict", f / "m2.npz", f / "test.npy", "--labels",
                        f / "y.npy")  # the 100 training labels for 50 test rows
    assert code == 2 and "50 samples but there are 100 labels" in _one_error_line(err, "predict")


def test_a_stack_takes_the_formulation_options_as_features_do(stacks, capsys):
    # --loss and --p reach the estimator for a kernel stack too (they were
    # once dropped there: a logistic fit came out as the hinge loss's)
    f = stacks["folder"]
    code, _, err = _run(capsys, "fit", f / "train.npy", "--labels", f / "y.npy", "--C", "10",
                        "--loss", "logistic", "--model", f / "logistic.npz")
    assert code == 0, err
    clf, meta = load_model(f / "logistic.npz")
    assert clf.loss == "logistic"
    ref = MKLClassifier(kernels="precomputed", C=10.0, loss="logistic").fit(
        stacks["K_tr"], stacks["y_tr"])
    np.testing.assert_allclose(clf.weights_, ref.weights_, atol=1e-12)
    code, _, err = _run(capsys, "fit", f / "train.npy", "--labels", f / "y.npy",
                        "--method", "lp", "--p", "1.5", "--model", f / "lp.npz")
    assert code == 0, err
    assert load_model(f / "lp.npz")[0].p == 1.5


@pytest.mark.parametrize("make, args, message", [
    (lambda K, y: K[0], (), r"shape \(100, 100\).*K\[None\]"),
    (lambda K, y: K[:, :, :-1], (), "square"),
    (lambda K, y: K + np.triu(np.ones_like(K[0]), 1)[None], (), "bad.npy .*not symmetric"),
    (lambda K, y: K - 5.0 * np.eye(K.shape[1])[None], (), "bad.npy .*positive semi-definite"),
    (lambda K, y: K[:, :-1, :-1], (), "99 samples but there are 100 labels"),
    (lambda K, y: K.astype(str), (), "kernel matrices must be numbers"),
    (lambda K, y: K, ("--task", "regression"), "classifier"),
    (lambda K, y: K, ("--kernels", "grid"), "--kernels does not apply"),
])
def test_bad_training_stacks(stacks, tmp_path, capsys, make, args, message):
    path = tmp_path / "bad.npy"
    np.save(path, make(stacks["K_tr"], stacks["y_tr"]))
    code, _, err = _run(capsys, "fit", path, "--labels", stacks["folder"] / "y.npy", *args,
                        "--model", tmp_path / "m.npz")
    assert code == 2
    line = _one_error_line(err, "fit")
    assert re.search(message, line), line


def test_labels_errors(stacks, tmp_path, capsys):
    f = stacks["folder"]
    code, _, err = _run(capsys, "fit", f / "train.npy", "--model", tmp_path / "m.npz")
    assert code == 2 and "no labels" in _one_error_line(err, "fit")
    code, _, err = _run(capsys, "fit", f / "train.npz", "--labels", f / "y.npy", "--model",
                        tmp_path / "m.npz")
    assert code == 2 and "give one of them" in _one_error_line(err, "fit")
    np.savez(tmp_path / "mixed.npz", a=stacks["K_tr"], b=stacks["K_tr"][0])
    code, _, err = _run(capsys, "fit", tmp_path / "mixed.npz", "--labels", f / "y.npy",
                        "--model", tmp_path / "m.npz")
    assert code == 2 and "one 2-D kernel matrix per array" in _one_error_line(err, "fit")


def test_predict_checks_the_test_stack(stacks, tmp_path, capsys):
    f = stacks["folder"]
    assert _run(capsys, "fit", f / "train.npy", "--labels", f / "y.npy", "--model",
                tmp_path / "m.npz")[0] == 0
    np.save(tmp_path / "short.npy", stacks["K_te"][:, :, :-1])
    code, _, err = _run(capsys, "predict", tmp_path / "m.npz", tmp_path / "short.npy")
    assert code == 2
    assert "the model needs (3, n_test, 100)" in _one_error_line(err, "predict")
    np.save(tmp_path / "two.npy", stacks["K_te"][:2])
    code, _, err = _run(capsys, "predict", tmp_path / "m.npz", tmp_path / "two.npy")
    assert code == 2 and "(3, n_test, 100)" in _one_error_line(err, "predict")
    csv = tmp_path / "x.csv"
    csv.write_text("a,label\n1,2\n")
    code, _, err = _run(capsys, "predict", tmp_path / "m.npz", csv)
    assert code == 2 and "precomputed kernels" in _one_error_line(err, "predict")
