"""The compare protocol, the one results format, and the README's generated tables."""

import json
import runpy
import sys
from pathlib import Path

import numpy as np
import pytest

from mklopt.bench import results as R
from mklopt.cli import main as cli_main

ROOT = Path(__file__).resolve().parents[2]
TABLES = ROOT / "benchmarks" / "tables.py"


def _tables(*args):
    """``benchmarks/tables.py`` with these arguments: its exit status."""
    return runpy.run_path(str(TABLES))["main"]([str(a) for a in args])


def test_results_round_trip_and_schema(tmp_path):
    path = R.write(tmp_path / "r" / "x.json", "x", "cmd --a",
                   [R.table("T", ["a", "b"], [[1, 2.5]])], [{"k": 1}])
    data = R.read(path)
    env = data["environment"]
    assert data["name"] == "x" and data["source"] == "measured" and data["records"] == [{"k": 1}]
    for key in ("date", "commit", "machine", "load_average", "versions"):
        assert key in env
    assert env["versions"]["numpy"] == np.__version__
    md = R.render_markdown(data)
    assert "`cmd --a`" in md and "| a | b |" in md and "| 1 | 2.5 |" in md
    data["schema"] = 99
    Path(path).write_text(json.dumps(data))
    with pytest.raises(ValueError, match="schema 99"):
        R.read(path)


def test_peak_memory_sees_an_allocation_and_forgets_earlier_peaks():
    big, _, _ = R.peak_memory_mb(lambda: np.ones(2**24).sum())  # 128 MB, freed on return
    small, how, out = R.peak_memory_mb(lambda: np.ones(2**21).sum())  # 16 MB
    assert out == 2**21
    assert big >= 100
    if how == "peak RSS":  # the high-water mark was reset: the earlier 128 MB are not counted
        assert small < 60


def test_tables_renders_blocks_and_check_catches_hand_edits(tmp_path):
    res = tmp_path / "results"
    R.write(res / "a.json", "a", "run a", [R.table("", ["x"], [["7"]])])
    readme = tmp_path / "README.md"
    readme.write_text("intro\n<!-- results: a.json -->\nstale\n<!-- end results -->\nend\n")
    assert _tables("--readme", readme, "--results", res, "--check") == 1
    assert _tables("--readme", readme, "--results", res) == 0
    text = readme.read_text()
    assert "stale" not in text and "| 7 |" in text and text.startswith("intro\n")
    assert text.endswith("<!-- end results -->\nend\n")
    assert _tables("--readme", readme, "--results", res, "--check") == 0
    readme.write_text(text.replace("| 7 |", "| 8 |"))  # a figure typed by hand
    assert _tables("--readme", readme, "--results", res, "--check") == 1


def test_the_benchmarks_readme_is_its_results_files():
    assert _tables("--check") == 0


@pytest.mark.slow
def test_compare_runs_every_estimator_on_the_same_split(tmp_path, capsys):
    code = cli_main(["bench", "--protocol", "compare", "--datasets", "sonar", "--methods", "svc",
                     "average", "mkl", "easymkl", "--repeats", "1", "--quiet",
                     "--out", str(tmp_path)])
    assert code == 0
    data = R.read(tmp_path / "compare.json")
    recs = {r["estimator"]: r for r in data["records"]}
    try:
        import MKLpy  # noqa: F401
    except Exception:
        assert set(recs) == {"svc", "average", "mkl"}
        assert "easymkl skipped: MKLpy not importable" in data["tables"][0]["notes"]
    else:
        assert set(recs) == {"svc", "average", "mkl", "easymkl"}
    assert len({r["n_train"] for r in recs.values()}) == 1  # one split for all
    rows = {r[2]: r for r in data["tables"][0]["rows"]}
    assert rows["svc"][5] == "1.0x" and rows["svc"][7] == "1.0x"
    for r in recs.values():
        assert 0.6 < r["accuracy"] <= 1.0 and r["fit_1"] > 0 and r["fit_default"] > 0
        assert len(r["seconds_1"]) == len(r["seconds_default"]) == 1
    assert data["command"].startswith("mklopt bench --protocol compare --datasets sonar")
    assert "| sonar |" in capsys.readouterr().out


def test_uniform_average_is_the_mean_of_the_same_kernels():
    from mklopt import MKLClassifier, datasets
    from mklopt.bench import compare as C

    X, y, kernels = C.load("ionosphere")
    X_tr, _, y_tr, _ = datasets.split(X, y, 0.5, seed=0, stratify=True)
    avg = C.UniformAverage(kernels).fit(X_tr, y_tr)
    single = avg.bank_.single()
    np.testing.assert_allclose(avg.bank_.bank.combine(avg.w_), np.mean(single, axis=0),
                               rtol=1e-12, atol=1e-12)
    assert len(single) == MKLClassifier().fit(X_tr, y_tr).n_kernels_
    for K in single:  # each kernel has a unit mean diagonal, as MKLClassifier's
        assert abs(np.mean(np.diag(K)) - 1.0) < 1e-12


def test_multi_view_set_puts_each_band_in_its_own_kernels():
    from mklopt.bench import compare as C

    X, y, specs = C.load("satellite-bands")
    assert X.shape[1] == 36 and len(specs) == 4 * 17
    views = {tuple(s.features) for s in specs}
    assert sorted(views) == [tuple(range(b, 36, 4)) for b in range(4)]


def test_compare_without_scikit_learn_says_what_to_install(monkeypatch, capsys):
    import mklopt.cli as cli

    monkeypatch.setattr(cli, "optional", lambda name: None)
    code = cli_main(["bench", "--protocol", "compare", "--datasets", "sonar"])
    assert code != 0
    assert "pip install scikit-learn" in capsys.readouterr().err


def test_compare_refuses_unknown_sets_and_estimators(capsys):
    assert cli_main(["bench", "--protocol", "compare", "--datasets", "letter"]) != 0
    assert "choose from digits" in capsys.readouterr().err
    assert cli_main(["bench", "--protocol", "compare", "--methods", "level"]) != 0
    assert "unknown estimator" in capsys.readouterr().err


def test_a_scripts_markdown_tables_become_a_results_file(tmp_path, capsys):
    text = ("noise\n**First**\n| a | b |\n|---|---:|\n| 1 | 2 |\n| 3 | 4 |\nprose\n"
            "<!-- second -->\n| c |\n|---|\n| x |\n## Third (a heading)\n\n| d |\n|---|\n| y |\n")
    tabs = R.from_markdown(text)
    assert [t["title"] for t in tabs] == ["First", "second", "Third (a heading)"]
    assert tabs[0]["columns"] == ["a", "b"] and tabs[0]["rows"] == [["1", "2"], ["3", "4"]]
    assert tabs[1]["rows"] == [["x"]]
    out = tmp_path / "s.json"
    code = R.main([str(out), "--", sys.executable, "-c", f"print({text!r})"])
    assert code == 0 and R.read(out)["tables"] == tabs
    assert R.main([str(out), "--", sys.executable, "-c", "raise SystemExit(3)"]) == 3


def test_tables_renders_every_page_and_check_covers_each(tmp_path, capsys):
    res = tmp_path / "results"
    R.write(res / "a.json", "a", "run a", [R.table("", ["x"], [["7"]])])
    R.write(res / "b.json", "b", "run b", [R.table("", ["y"], [["9"]])])
    one, two = tmp_path / "README.md", tmp_path / "benchmarks.md"
    one.write_text("<!-- results: a.json -->\n<!-- end results -->\n")
    two.write_text("# docs\n<!-- results: b.json -->\nold\n<!-- end results -->\n")
    pages = ["--page", one, "--page", two, "--results", res]
    assert _tables(*pages, "--check") == 1
    err = capsys.readouterr().err
    assert f"{one} is not current" in err and f"{two} is not current" in err
    assert _tables(*pages) == 0
    assert "| 7 |" in one.read_text() and "| 9 |" in two.read_text()
    assert _tables(*pages, "--check") == 0
    two.write_text(two.read_text().replace("| 9 |", "| 8 |"))  # a hand edit on the second page
    assert _tables(*pages, "--check") == 1
    assert f"{two} is not current" in capsys.readouterr().err
    # a results file that no page renders is named
    assert _tables("--page", one, "--results", res, "--check") == 0
    assert "no block in README.md: b.json" in capsys.readouterr().err


def test_the_default_pages_are_the_readme_and_the_docs_page():
    pages = runpy.run_path(str(TABLES))["PAGES"]
    assert [p.relative_to(ROOT).as_posix() for p in pages] == [
        "benchmarks/README.md", "docs/benchmarks.md"]
    for p in pages:
        assert "<!-- results: " in p.read_text()


class _FakeMKL:
    """Stands in for MKLpy's EasyMKL: records what it is given, predicts class codes."""

    seen = []

    def __init__(self, learner=None, multiclass_strategy="ova"):
        from sklearn.svm import SVC

        self.learner = SVC() if learner is None else learner
        self.multiclass_strategy = multiclass_strategy

    def fit(self, KL, Y):
        _FakeMKL.seen.append(("fit", [np.shape(K) for K in KL], np.asarray(Y).copy()))
        print("MKLpy prints here")  # as its one-vs-one vote does
        return self

    def predict(self, KL):
        _FakeMKL.seen.append(("predict", [np.shape(K) for K in KL], None))
        print((len(KL[0]), 2))
        return np.arange(len(KL[0])) % 3  # codes 0 .. 2


def test_mklpy_rows_get_the_list_of_kernels_and_their_labels_back(monkeypatch, capsys):
    import types

    from mklopt import datasets
    from mklopt.bench import compare as C

    algorithms = types.SimpleNamespace(EasyMKL=_FakeMKL)
    fake = types.ModuleType("MKLpy")
    fake.algorithms = algorithms
    monkeypatch.setitem(sys.modules, "MKLpy", fake)
    monkeypatch.setattr(_FakeMKL, "seen", [])
    X, y, kernels = C.load("digits")
    keep = np.isin(y, [3, 5, 8])  # three classes whose labels are not 0, 1, 2
    X, y = X[keep][:150], y[keep][:150]
    X_tr, X_te, y_tr, y_te = datasets.split(X, y, 0.5, seed=0, stratify=True)
    model = C.MKLpyModel(kernels, "EasyMKL").fit(X_tr, y_tr)
    pred = model.predict(X_te)
    (_, fit_shapes, codes), (_, pred_shapes, _) = _FakeMKL.seen
    m = 17  # the default grid
    assert fit_shapes == [(len(y_tr), len(y_tr))] * m
    assert pred_shapes == [(len(y_te), len(y_tr))] * m
    assert sorted(set(codes)) == [0, 1, 2] and np.array_equal(np.array([3, 5, 8])[codes], y_tr)
    assert np.array_equal(pred, np.array([3, 5, 8])[np.arange(len(y_te)) % 3])
    assert model.model_.multiclass_strategy == "ovo"
    assert "MKLpy prints" not in capsys.readouterr().out  # the protocol's output stays clean
    # the same kernels as MKLClassifier's bank: unit mean diagonal, standardised features
    K0 = model.bank_.single()[0]
    assert abs(np.mean(np.diag(K0)) - 1.0) < 1e-12 and model.bank_.scaler is not None


def test_a_list_of_specs_is_evaluated_on_the_features_as_given_like_mkl():
    from mklopt import MKLClassifier
    from mklopt.bench import compare as C

    X, y, specs = C.load("satellite-bands")
    X, y = X[:120], y[:120]
    bank = C._Bank(X, specs)
    assert bank.scaler is None and bank.m == len(specs)
    # MKLClassifier does not standardise a list of specs either (a few of
    # them show it: all 68 took the stored-products path, two minutes of
    # compiling in a fresh clone)
    clf = MKLClassifier(kernels=specs[:4]).fit(X, y)
    assert getattr(clf, "scaler_mean_", None) is None
    assert C._Bank(X, "all_features").scaler is not None


def test_mklpy_rows_run_or_say_why_not(tmp_path):
    from mklopt import datasets
    from mklopt.bench import compare as C

    reason = C._mklpy_reason()
    try:
        import MKLpy  # noqa: F401
    except Exception:
        assert reason.startswith("MKLpy not importable (") and "pip install MKLpy" in reason
        records, skipped = C.run(["sonar"], ["svc", "easymkl", "averagemkl"], repeats=1)
        assert skipped == {"easymkl": reason, "averagemkl": reason}
        assert [r["estimator"] for r in records] == ["svc"]
        return
    assert reason is None
    X, y, kernels = C.load("sonar")
    X_tr, X_te, y_tr, y_te = datasets.split(X, y, 0.5, seed=0, stratify=True)
    for algorithm in ("EasyMKL", "AverageMKL"):
        model = C.MKLpyModel(kernels, algorithm).fit(X_tr, y_tr)
        pred = model.predict(X_te)
        assert pred.shape == y_te.shape and set(pred) <= set(y_tr)
        assert model.score(X_te, y_te) > 0.6


def test_blas_threads_sets_torch_threads_when_torch_is_imported(monkeypatch):
    import types

    calls = []
    torch = types.SimpleNamespace(get_num_threads=lambda: 4,
                                  set_num_threads=lambda n: calls.append(n))
    monkeypatch.setitem(sys.modules, "torch", torch)
    with R.blas_threads(1):
        assert calls == [1]
    assert calls == [1, 4]
    with R.blas_threads(None):
        pass
    assert calls == [1, 4]


def test_tables_names_a_block_whose_results_file_is_missing(tmp_path, capsys):
    page = tmp_path / "README.md"
    page.write_text("<!-- results: gone.json -->\n<!-- end results -->\n")
    (tmp_path / "results").mkdir()
    assert _tables("--page", page, "--results", tmp_path / "results", "--check") == 1
    assert "names a missing results file" in capsys.readouterr().err


def test_precomputed_row_fits_mkl_on_the_kernels_easymkl_gets():
    """On a binary set the stacked matrices are MKLClassifier's own kernels: the same model."""
    from mklopt import MKLClassifier, datasets
    from mklopt.bench import compare as C

    X, y, kernels = C.load("ionosphere")
    X_tr, X_te, y_tr, y_te = datasets.split(X, y, 0.5, seed=0, stratify=True)
    pre = C.factories(kernels, X.shape[1])["mkl-precomputed"]().fit(X_tr, y_tr)
    own = MKLClassifier(kernels=kernels).fit(X_tr, y_tr)
    assert pre.model_.kernels == "precomputed" and pre.model_.n_kernels_ == own.n_kernels_
    d_pre = pre.model_.decision_function(np.stack(pre.bank_.single(X_te)))
    d_own = own.decision_function(X_te)
    # the same problem (its kernels in another order): the same optimum, to solver tolerance
    assert np.abs(d_pre - d_own).max() <= 1e-6 * np.abs(d_own).max()
    w_pre, w_own = pre.model_.kernel_weights_["weight"], own.kernel_weights_["weight"]
    np.testing.assert_allclose(np.sort(w_pre), np.sort(w_own), atol=1e-6)
    assert pre.score(X_te, y_te) == own.score(X_te, y_te)
