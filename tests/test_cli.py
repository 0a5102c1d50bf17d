"""The ``mklopt`` command line end to end: bench, fit, predict and their errors."""

import argparse
import csv
import gzip
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import mklopt
from mklopt import datasets
from mklopt.bench import PROTOCOLS
from mklopt.cli import build_parser, main
from mklopt.methods import PRESETS, method_names
from mklopt.persist import load_model


def _write_csv(path, X, y, names=None, label="label"):
    names = names or [f"x{i}" for i in range(X.shape[1])]
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow([*names, label])
        for row, lab in zip(X, y, strict=True):
            w.writerow([*(repr(float(v)) for v in row), lab])
    return str(path)


def _run(capsys, *argv):
    """Run the CLI in-process; return (exit status, stdout, stderr)."""
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exc:  # argparse: --help and usage errors
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def _one_error_line(err, command):
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"mklopt {command}: error: "), err
    assert "Traceback" not in err
    return lines[0]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """The breast data set split in two CSV files, labels as names."""
    X, y = datasets.load("breast")
    idx = np.random.default_rng(0).permutation(X.shape[0])
    tr, te = idx[:200], idx[200:320]
    labels = np.where(y > 0, "malignant", "benign")
    folder = tmp_path_factory.mktemp("cli")
    names = [f"feature_{i}" for i in range(X.shape[1])]
    return {
        "train": _write_csv(folder / "train.csv", X[tr], labels[tr], names, "diagnosis"),
        "test": _write_csv(folder / "test.csv", X[te], labels[te], names, "diagnosis"),
        "X_train": X[tr],
        "X_test": X[te],
        "y_test": labels[te],
        "folder": folder,
    }


@pytest.fixture(scope="module")
def model(data):
    path = data["folder"] / "model.npz"
    code = main(
        [
            "fit",
            data["train"],
            "--label",
            "diagnosis",
            "--kernels",
            "mkboost",
            "--C",
            "10",
            "--model",
            str(path),
        ]
    )
    assert code == 0
    return path


# --------------------------------------------------------------------- bench
def test_bench_writes_tables_and_figures(tmp_path, capsys, monkeypatch):
    from mklopt import cli
    from mklopt.bench import runs as bench_runs

    # The first split says each method as soon as it ends, and warms each up
    # just before timing it: after install, a line comes after one method's
    # compiling, not after all of them. It runs the default fit's method
    # (level) first, whatever the order asked; the table keeps that order.
    events = []
    real_warm, real_line = bench_runs.warm_up, cli._bench_method
    monkeypatch.setattr(bench_runs, "warm_up",
                        lambda keys, *a, **k: events.append(("warm", *keys))
                        or real_warm(keys, *a, **k))
    monkeypatch.setattr(cli, "_bench_method",
                        lambda run, *a: events.append(("line", run.method)) or real_line(run, *a))
    out = tmp_path / "bench"
    code, stdout, err = _run(
        capsys,
        "bench",
        "--methods",
        "lp2",
        "level",
        "--splits",
        "1",
        "--datasets",
        "sonar",
        "--out",
        out,
    )
    assert code == 0, err
    for name in ("runs.json", "summary.csv", "table.md"):
        assert (out / name).stat().st_size > 0
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert pngs and all((out / p).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)
    runs = json.loads((out / "runs.json").read_text())
    assert runs["protocol"] == "level2008"
    assert {r["method"] for r in runs["runs"]} == {"level", "lp2"}
    for r in runs["runs"]:
        assert r["dataset"] == "sonar" and 0.5 < r["accuracy"] <= 1.0
    table = (out / "table.md").read_text()
    assert "| sonar |" in table and "Level" in table and table in stdout + "\n"
    assert table.index("Lp p=2") < table.index("Level")  # the order asked
    assert [r["method"] for r in runs["runs"]] == ["lp2", "level"]
    with open(out / "summary.csv") as fh:
        assert len(list(csv.DictReader(fh))) == 2
    assert "sonar split 0" in err  # progress line
    assert events == [("warm", "level"), ("line", "level"), ("warm", "lp2"), ("line", "lp2")]
    lines = [line for line in err.splitlines() if "compiling mklopt" not in line]
    assert "sonar split 0: level " in lines[0]


def test_bench_bad_arguments(tmp_path, capsys):
    code, _, err = _run(capsys, "bench", "--datasets", "iris", "--out", tmp_path)
    assert code == 2 and "unknown data set 'iris'" in _one_error_line(err, "bench")
    code, _, err = _run(capsys, "bench", "--methods", "nope", "--out", tmp_path)
    assert code == 2 and "unknown method" in _one_error_line(err, "bench")
    code, _, err = _run(capsys, "bench", "--splits", "0", "--out", tmp_path)
    assert code == 2 and "--splits" in _one_error_line(err, "bench")
    code, _, err = _run(capsys, "bench", "--splits", "many")
    assert code == 2 and "invalid int value" in _one_error_line(err, "bench")


def test_bench_scale_protocol_runs_a_case_in_its_own_process(tmp_path, capsys):
    out = tmp_path / "bench"
    code, stdout, err = _run(capsys, "bench", "--protocol", "scale", "--cases", "sonar-300",
                             "--quiet", "--out", out)
    assert code == 0, err
    (r,) = json.loads((out / "scale" / "results.json").read_text())
    assert r["case"] == "sonar-300" and "error" not in r
    assert r["converged"] and r["rel_gap"] <= 1e-2 and r["n_kernels"] == 300
    assert 0.5 < r["accuracy"] <= 1.0 and r["peak_rss_gib"] > 0
    assert "| sonar-300 |" in stdout
    code, _, err = _run(capsys, "bench", "--protocol", "scale", "--cases", "letter-huge",
                        "--out", out)
    assert code == 2 and "unknown case(s) letter-huge" in _one_error_line(err, "bench")
    code, _, err = _run(capsys, "bench", "--cases", "sonar-300", "--out", out)
    assert code == 2 and "--protocol scale" in _one_error_line(err, "bench")


# ---------------------------------------------------------------- fit/predict
def test_fit_predict_end_to_end(data, model, tmp_path, capsys):
    pred_path = tmp_path / "pred.csv"
    code, _, err = _run(capsys, "predict", model, data["test"], "--out", pred_path)
    assert code == 0, err
    lines = pred_path.read_text().split()
    assert lines[0] == "prediction" and len(lines) == 1 + len(data["y_test"])
    assert set(lines[1:]) <= {"benign", "malignant"}
    acc = np.mean(np.array(lines[1:]) == data["y_test"])
    assert acc > 0.85
    assert f"accuracy on {data['test']}: {acc:.4f}" in err

    # the reloaded model standardises by itself and gives the CLI's predictions
    clf, meta = load_model(model)
    assert meta["standardize"] is None and clf.get_params()["standardize"] is True
    np.testing.assert_allclose(clf.scaler_mean_, data["X_train"].mean(axis=0), rtol=1e-12)
    np.testing.assert_array_equal(clf.predict(data["X_test"]), lines[1:])
    assert meta["label"] == "diagnosis" and meta["feature_names"][0] == "feature_0"
    assert len(clf.kernel_specs_) == 17

    # stdout by default; a file without the label column is fine
    unlabeled = tmp_path / "unlabeled.csv"
    with open(data["test"]) as src, open(unlabeled, "w") as dst:
        for line in src:
            dst.write(line.rsplit(",", 1)[0] + "\n")
    code, out, err = _run(capsys, "predict", model, unlabeled)
    assert code == 0, err
    assert out.split() == lines and "accuracy" not in err


def test_predict_reads_gzipped_windows_csv(data, model, tmp_path, capsys):
    gz = tmp_path / "test.csv.gz"
    with open(data["test"], "rb") as fh:
        gz.write_bytes(gzip.compress(fh.read().replace(b"\n", b"\r\n")))
    code, out, err = _run(capsys, "predict", model, data["test"])
    code_gz, out_gz, err_gz = _run(capsys, "predict", model, gz)
    assert code == code_gz == 0, err_gz
    assert out_gz == out and "accuracy on" in err_gz


def test_fit_multiclass_grid_and_methods(tmp_path, capsys):
    X, y = datasets.load("sonar")
    X = X[:90, :4]
    labels = np.array(["a", "b", "c"])[np.arange(90) % 3]
    train = _write_csv(tmp_path / "three.csv", X, labels)
    model = tmp_path / "three.model"
    code, out, err = _run(
        capsys,
        "fit",
        train,
        "--method",
        "mirror",
        "--groups",
        "features",
        "--kernels",
        "grid",
        "--max-iter",
        "30",
        "--model",
        model,
    )
    assert code == 0, err
    assert "3 classes" in out and "3 one-vs-one pairs" in out
    clf, _ = load_model(model)
    assert clf.weights_.shape == (3, 13 * 5)
    code, out, err = _run(capsys, "predict", model, train)
    assert code == 0 and set(out.split()[1:]) <= {"a", "b", "c"}

    code, out, err = _run(
        capsys, "fit", train, "--method", "lp", "--p", "1.5", "--no-standardize", "--model", model
    )
    assert code == 0, err
    clf, meta = load_model(model)
    assert clf.get_params()["p"] == 1.5 and meta["standardize"] is None
    assert clf.scaler_mean_ is None and clf.get_params()["standardize"] is False


def test_fit_elastic_net(data, tmp_path, capsys):
    model = tmp_path / "enet.npz"
    code, out, err = _run(capsys, "fit", data["train"], "--label", "diagnosis",
                          "--elastic-net", "0.5", "--model", model)
    assert code == 0, err
    clf, meta = load_model(model)
    assert clf.get_params()["elastic_net"] == 0.5 and meta["params"]["elastic_net"] == 0.5
    code, out, err = _run(capsys, "fit", data["train"], "--label", "diagnosis",
                          "--method", "elastic_net", "--model", model)
    assert code != 0 and "--elastic-net LAM" in err
    code, out, err = _run(capsys, "fit", data["train"], "--label", "diagnosis",
                          "--method", "level", "--elastic-net", "0.5", "--model", model)
    assert code != 0 and "'elastic_net', 'spg'" in err


def test_fit_errors(data, tmp_path, capsys):
    model = tmp_path / "m.npz"
    bad = [
        (["fit", tmp_path / "missing.csv", "--model", model], "no such file"),
        (["fit", data["train"], "--label", "class", "--model", model], "no column named 'class'"),
        (
            ["fit", data["train"], "--label", "diagnosis", "--C", "-1", "--model", model],
            "C must be > 0",
        ),
        (
            ["fit", data["train"], "--label", "diagnosis", "--p", "2", "--model", model],
            "--p is only used",
        ),
        (
            [
                "fit",
                data["train"],
                "--label",
                "diagnosis",
                "--method",
                "lp",
                "--p",
                "1",
                "--model",
                model,
            ],
            "p must be > 1",
        ),
        (
            ["fit", data["train"], "--label", "diagnosis", "--model", tmp_path / "no" / "m.npz"],
            "cannot write the model",
        ),
        (
            ["fit", data["train"], "--label", "diagnosis", "--method", "newton", "--model", model],
            "invalid choice",
        ),
        (["fit", data["train"], "--label", "diagnosis"], "required: --model"),
    ]
    for argv, message in bad:
        code, _, err = _run(capsys, *argv)
        assert code == 2, argv
        assert message in _one_error_line(err, "fit"), (argv, err)
    assert not model.exists()


@pytest.mark.parametrize(
    "content, message",
    [
        ("a,b,label\n1,2,x\n1,oops,y\n", "line 3, column 'b' is not a number: 'oops'"),
        ("a,b,label\n1,,x\n1,2,y\n", "line 2, column 'b' is empty"),
        ("a,b,label\n1,2,x\n1,2\n", "line 3: 2 fields"),
        ("a,b,label\n1,nan,x\n1,2,y\n", "NaN or infinite"),
        ("a,b,label\n1,2,0.5\n1,2,1.5\n", "non-integer numbers"),
        ("a,b,label\n1,2,x\n3,4,x\n", "only one class"),
        ("", "is empty"),
        ("a,b,label\n", "no data rows"),
        ("a,a,label\n1,2,x\n", "repeated column names"),
        ("label\nx\ny\n", "no feature columns"),
    ],
)
def test_bad_csv_files(tmp_path, capsys, content, message):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    code, _, err = _run(capsys, "fit", path, "--model", tmp_path / "m.npz")
    assert code == 2
    assert message in _one_error_line(err, "fit")


def test_binary_file_as_csv(tmp_path, capsys):
    path = tmp_path / "bin.csv"
    path.write_bytes(bytes(range(256)) * 4)
    code, _, err = _run(capsys, "fit", path, "--model", tmp_path / "m.npz")
    assert code == 2 and "cannot read" in _one_error_line(err, "fit")


def test_predict_errors(data, model, tmp_path, capsys):
    other = _write_csv(tmp_path / "other.csv", np.ones((3, 2)), ["a", "b", "a"])
    junk = tmp_path / "junk.npz"
    junk.write_bytes(np.random.default_rng(1).bytes(500))
    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(model.read_bytes()[:-300])
    no_meta = tmp_path / "no_meta.npz"
    np.savez(no_meta, weights=np.ones(3))
    evil = tmp_path / "evil.npz"
    np.savez(evil, metadata=np.array([{"format": "mklopt-model"}], dtype=object))
    bad = [
        ([tmp_path / "missing.npz", data["test"]], "does not exist"),
        ([junk, data["test"]], "is not an mklopt model file"),
        ([truncated, data["test"]], "truncated or corrupt"),
        ([no_meta, data["test"]], "no metadata"),
        ([evil, data["test"]], "pickled Python objects"),
        ([data["test"], data["test"]], "is not an mklopt model file"),
        ([model, tmp_path / "missing.csv"], "no such file"),
        ([model, other], "differ from the model's"),
        ([model, data["test"], "--out", tmp_path / "no" / "p.csv"], "cannot write"),
    ]
    for argv, message in bad:
        code, out, err = _run(capsys, "predict", *argv)
        assert code == 2, argv
        assert message in _one_error_line(err, "predict"), (argv, err)
        assert out == ""


# ---------------------------------------------------------------------- help
@pytest.mark.parametrize("command", ["bench", "fit", "predict"])
def test_help_of_every_subcommand(capsys, command):
    code, out, _ = _run(capsys, command, "--help")
    assert code == 0
    assert out.startswith(f"usage: mklopt {command}")
    if command == "fit":
        for option in ("--label", "--method", "--kernels", "--C", "--model", "--no-standardize"):
            assert option in out


def test_top_level_help_and_usage_errors(capsys):
    code, out, _ = _run(capsys, "--help")
    assert code == 0 and all(c in out for c in ("bench", "fit", "predict"))
    code, _, err = _run(capsys)
    assert code == 2 and err.strip().startswith("mklopt: error:")
    assert len(err.strip().splitlines()) == 1
    code, _, err = _run(capsys, "frobnicate")
    assert code == 2 and "invalid choice" in err and len(err.strip().splitlines()) == 1


# ----------------------------------------------------------------- processes
def test_python_dash_m_and_console_script(data, model, tmp_path):
    # The script and the subprocess import the mklopt under test, not another install.
    root = os.path.dirname(os.path.dirname(os.path.abspath(mklopt.__file__)))
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "PYTHONPATH": root}
    r = subprocess.run(
        [sys.executable, "-m", "mklopt", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert r.returncode == 0 and r.stdout.startswith("usage: mklopt")
    script = shutil.which("mklopt")
    if script is None:
        pytest.skip("the mklopt console script is not on PATH")
    r = subprocess.run(
        [script, "predict", str(model), data["test"]],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[0] == "prediction" and "accuracy" in r.stderr
    r = subprocess.run(
        [script, "predict", str(tmp_path / "missing.npz"), data["test"]],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.startswith("mklopt predict: error: ")


def test_bench_mkboost_protocol(tmp_path, capsys):
    out = tmp_path / "boost"
    code, stdout, err = _run(
        capsys,
        "bench",
        "--protocol",
        "mkboost2013",
        "--datasets",
        "wdbc",
        "--methods",
        "level",
        "mkboost-s1",
        "--splits",
        "1",
        "--out",
        out,
        "--quiet",
    )
    assert code == 0, err
    runs = json.loads((out / "runs.json").read_text())["runs"]
    by = {r["method"]: r for r in runs}
    assert set(by) == {"level", "mkboost-s1"}
    assert by["level"]["n_kernels"] == 17 and by["level"]["converged"]
    assert 0 < by["mkboost-s1"]["n_svm_calls"] <= 17 * 100
    assert by["mkboost-s1"]["accuracy"] > 0.9 and by["level"]["accuracy"] > 0.9


# --------------------------------------------------------- regression, one-class
def _write_features(path, X):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow([f"x{i}" for i in range(X.shape[1])])
        for row in X:
            w.writerow([repr(float(v)) for v in row])
    return str(path)


def test_fit_predict_regression_and_one_class(tmp_path, capsys):
    from mklopt import MKLOneClass, MKLRegressor

    X, y = datasets.load("diabetes")
    train = _write_csv(tmp_path / "tr.csv", X[:300], y[:300], label="progression")
    test = _write_csv(tmp_path / "te.csv", X[300:], y[300:], label="progression")
    model = tmp_path / "reg.npz"
    code, out, err = _run(capsys, "fit", train, "--task", "regression", "--label", "progression",
                          "--kernels", "mkboost", "--model", model)
    assert code == 0, err
    assert "training R2" in out
    reg, meta = load_model(model)
    assert isinstance(reg, MKLRegressor) and meta["label"] == "progression"
    preds = tmp_path / "p.csv"
    code, _, err = _run(capsys, "predict", model, test, "--out", preds)
    assert code == 0, err
    got = np.loadtxt(preds, skiprows=1)
    np.testing.assert_allclose(got, reg.predict(X[300:]), rtol=1e-12)
    r2 = float(err.split("R2 on")[1].split(":")[1].split()[0])
    assert r2 == pytest.approx(reg.score(X[300:], y[300:]), abs=1e-4)
    assert r2 > 0.3

    Xw, yw = datasets.load("wdbc")
    benign = Xw[yw == -1]
    train = _write_features(tmp_path / "benign.csv", benign[:200])
    test = _write_features(tmp_path / "all.csv", Xw)
    model = tmp_path / "oc.npz"
    code, out, err = _run(capsys, "fit", train, "--task", "one-class", "--nu", "0.1",
                          "--model", model)
    assert code == 0, err
    oc, _ = load_model(model)
    assert isinstance(oc, MKLOneClass) and oc.nu == 0.1
    code, out, err = _run(capsys, "predict", model, test)
    assert code == 0, err
    got = np.array(out.split()[1:], dtype=int)
    np.testing.assert_array_equal(got, oc.predict(Xw))
    # malignant rows are mostly flagged, benign training rows mostly kept
    assert np.mean(got[yw == 1] == -1) > 0.5 and np.mean(got[yw == -1][:200] == 1) > 0.8


def test_task_errors_name_the_option(tmp_path, capsys):
    X, y = datasets.load("diabetes")
    labelled = _write_csv(tmp_path / "d.csv", X[:40], y[:40])
    bad = y[:40].astype(object)
    bad[3] = "high"
    words = _write_csv(tmp_path / "w.csv", X[:40], bad)
    m = tmp_path / "m.npz"
    cases = [
        (["fit", labelled, "--task", "one-class", "--model", m], "--label"),
        (["fit", words, "--task", "regression", "--model", m], "must hold numbers"),
        (["fit", labelled, "--task", "regression", "--epsilon", "-1", "--model", m],
         "epsilon must be >= 0"),
        (["fit", labelled, "--task", "regression", "--nu", "0.5", "--model", m],
         "--nu is only used with --task one-class"),
        (["fit", _write_features(tmp_path / "f.csv", X[:40]), "--task", "one-class",
          "--nu", "1.5", "--model", m], r"nu must lie in \(0, 1\]"),
    ]
    for argv, message in cases:
        code, _, err = _run(capsys, *argv)
        assert code == 2
        line = _one_error_line(err, "fit")
        assert re.search(message, line), line


# ------------------------------------------------------------- one registry
def _subcommand_option(command, dest):
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return next(a for a in sub.choices[command]._actions if a.dest == dest)


def test_fit_method_choices_are_the_registry_names():
    option = _subcommand_option("fit", "method")
    choices = option.choices
    # "auto" is the estimators' default (level or working_set by the number of kernels)
    assert option.default == "auto"
    assert sorted(choices) == sorted(["auto", *method_names(oracle_kind="dual")])
    assert {"level", "silp", "simplemkl", "mirror", "lp"} <= set(choices)
    assert "mkboost" not in choices  # not a dual method: MKLClassifier cannot run it


def test_bench_protocols_and_methods_come_from_the_registry(tmp_path, capsys):
    assert _subcommand_option("bench", "protocol").choices == sorted(PROTOCOLS)
    for proto in PROTOCOLS.values():
        assert set(proto.methods) <= set(PRESETS)
    code, _, err = _run(capsys, "bench", "--methods", "lp3", "--out", tmp_path)
    line = _one_error_line(err, "bench")
    # the presets, then every registered method at its defaults (plugins included)
    known = line.split("choose from ")[1].split(", ")
    assert code == 2 and set(PRESETS) | set(method_names()) == set(known), line


def test_cli_imports_without_the_posix_resource_module():
    # Windows has no ``resource``: the console script must still import.
    import subprocess
    import sys

    code = "import sys; sys.modules['resource'] = None; import mklopt.cli; print('ok')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_fit_names_the_largest_kernels_by_the_csv_columns(tmp_path, capsys):
    X, y = datasets.load("sonar")
    keep = np.random.default_rng(0).permutation(len(y))[:80]
    names = ["left ear", "right ear", "nose", "tail"]
    train = _write_csv(tmp_path / "named.csv", X[keep, :4], np.where(y[keep] > 0, "m", "r"),
                       names=names)
    model = tmp_path / "named.model"
    code, out, err = _run(capsys, "fit", train, "--kernels", "grid", "--max-iter", "30",
                          "--model", model)
    assert code == 0, err
    line = next(s for s in out.splitlines() if s.startswith("largest kernel weights: "))
    clf, meta = load_model(model)
    # the saved metadata names the kernels by the columns, as the printed line does
    assert meta["kernel_names"][13] == "rbf(0.125)[left ear]"
    W = np.atleast_2d(clf.weights_).mean(axis=0)
    top = [k for k in np.argsort(-W, kind="stable")[:5] if W[k] > 0]
    assert line == "largest kernel weights: " + ", ".join(
        f"{meta['kernel_names'][k]} {W[k]:.3f}" for k in top)
    assert any(f"[{n}]" in line for n in names)  # single-column kernels among the largest
