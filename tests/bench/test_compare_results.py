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
            "<!-- second -->\n| c |\n|---|\n| x |\n")
    tabs = R.from_markdown(text)
    assert [t["title"] for t in tabs] == ["First", "second"]
    assert tabs[0]["columns"] == ["a", "b"] and tabs[0]["rows"] == [["1", "2"], ["3", "4"]]
    assert tabs[1]["rows"] == [["x"]]
    out = tmp_path / "s.json"
    code = R.main([str(out), "--", sys.executable, "-c", f"print({text!r})"])
    assert code == 0 and R.read(out)["tables"] == tabs
    assert R.main([str(out), "--", sys.executable, "-c", "raise SystemExit(3)"]) == 3
