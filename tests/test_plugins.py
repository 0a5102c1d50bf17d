"""Entry points: a package's methods and oracles reach the estimators and the CLI.

The package is examples/plugin (``mkl_extras``), never installed: a test
writes its ``*.dist-info`` (METADATA and entry_points.txt, as pip would)
into a temporary folder on the path, which importlib.metadata reads as an
installed distribution. Nothing inside mklopt names the plugin.
"""

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from mklopt import plugins

ROOT = pathlib.Path(__file__).resolve().parent.parent
PLUGIN = ROOT / "examples" / "plugin"


def _dist_info(folder, entry_points, name="mkl_extras"):
    info = folder / f"{name}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(entry_points)
    return folder


GOOD = """[mklopt.methods]
bb_spg = mkl_extras.bb_spg

[mklopt.oracles]
kernel_ridge = mkl_extras.kernel_ridge
"""


def _env(*paths):
    path = os.pathsep.join([str(ROOT), *map(str, paths)])
    return {**os.environ, "PYTHONPATH": path}


def _csv(path, n=60, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1] ** 2 + 0.05 * rng.normal(size=n)
    rows = ["a,b,c,label"] + [",".join(f"{v:.10g}" for v in (*x, t)) for x, t in zip(X, y)]
    path.write_text("\n".join(rows) + "\n")
    return X, y


def test_mklopt_fit_runs_a_plugin_oracle_and_method(tmp_path):
    site = _dist_info(tmp_path / "site", GOOD)
    X, y = _csv(tmp_path / "train.csv")
    env = _env(PLUGIN, site)
    fit = subprocess.run(
        [sys.executable, "-m", "mklopt", "fit", str(tmp_path / "train.csv"), "--task",
         "regression", "--loss", "kernel_ridge", "--method", "bb_spg", "--C", "10",
         "--tol", "1e-6", "--kernels", "grid", "--model", str(tmp_path / "m.npz")],
        env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )
    assert fit.returncode == 0, fit.stderr
    assert "fitted regression bb_spg" in fit.stdout
    pred = subprocess.run(
        [sys.executable, "-m", "mklopt", "predict", str(tmp_path / "m.npz"),
         str(tmp_path / "train.csv")],
        env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )
    assert pred.returncode == 0, pred.stderr
    r2 = float(pred.stderr.split("R2 on")[1].split(": ")[1].split()[0])
    assert r2 > 0.8, pred.stderr
    # the model file names the plugin's oracle and method; the same fit made
    # in this process with the modules imported by hand predicts the same
    sys.path.insert(0, str(PLUGIN))
    try:
        import mkl_extras.bb_spg  # noqa: F401
        import mkl_extras.kernel_ridge  # noqa: F401

        from mklopt import MKLRegressor
        from mklopt.persist import load_model

        back, meta = load_model(tmp_path / "m.npz")
        assert meta["params"]["loss"] == "kernel_ridge"
        assert meta["params"]["method"] == "bb_spg"
        here = MKLRegressor(loss="kernel_ridge", method="bb_spg", C=10.0, tol=1e-6).fit(X, y)
        np.testing.assert_allclose(back.predict(X), here.predict(X), rtol=1e-9, atol=1e-9)
    finally:
        sys.path.remove(str(PLUGIN))
        # leave the registries as they were, for the tests that list their names
        from mklopt.methods import METHODS
        from mklopt.tasks import ORACLES

        METHODS.pop("bb_spg", None)
        ORACLES.pop(("regression", "kernel_ridge"), None)
        for mod in [m for m in sys.modules if m.startswith("mkl_extras")]:
            del sys.modules[mod]


def test_entry_points_feed_the_registries_in_process(tmp_path, monkeypatch):
    from mklopt.methods import METHODS, get_method, method_names
    from mklopt.tasks import ORACLES, oracle_names

    site = _dist_info(tmp_path / "site", GOOD.replace("mkl_extras", "mkl_extras_ep"),
                      name="mkl_extras_ep")
    # a copy of the package under another name, so that this test imports it afresh
    pkg = tmp_path / "src" / "mkl_extras_ep"
    pkg.mkdir(parents=True)
    for f in (PLUGIN / "mkl_extras").glob("*.py"):
        (pkg / f.name).write_text(f.read_text().replace('"bb_spg"', '"bb_spg_ep"')
                                  .replace('"kernel_ridge"', '"kernel_ridge_ep"'))
    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(plugins, "_loaded", {})
    try:
        assert "bb_spg_ep" in method_names(oracle_kind="dual")
        assert get_method("bb_spg_ep").__module__ == "mkl_extras_ep.bb_spg"
        assert "kernel_ridge_ep" in oracle_names("regression")
        assert [ep.name for ep in plugins.loaded("mklopt.methods")] == ["bb_spg"]
        # bench runs a method without a preset at its defaults, under its name
        from mklopt.methods import get_preset

        preset = get_preset("bb_spg_ep")
        assert preset.label == "bb_spg_ep" and type(preset.make()).__name__ == "BBSPG"
    finally:
        METHODS.pop("bb_spg_ep", None)
        ORACLES.pop(("regression", "kernel_ridge_ep"), None)
        for mod in [m for m in sys.modules if m.startswith("mkl_extras_ep")]:
            del sys.modules[mod]


def test_a_broken_plugin_is_named(tmp_path, monkeypatch):
    site = _dist_info(tmp_path / "site", "[mklopt.methods]\nbroken = no_such_module_xyz\n",
                      name="broken_extras")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(plugins, "_loaded", {})
    from mklopt.methods import get_method

    with pytest.raises(plugins.PluginError,
                       match=r"mklopt.methods plugin 'broken' = 'no_such_module_xyz' "
                             r"\(from broken_extras\) failed to load: ModuleNotFoundError"):
        get_method("level")
    # the command line says it in one line, exit status 2
    proc = subprocess.run([sys.executable, "-m", "mklopt", "fit", "--help"],
                          env=_env(site), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "plugin 'broken'" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.slow
def test_mklopt_bench_runs_a_plugin_method(tmp_path):
    site = _dist_info(tmp_path / "site", GOOD)
    proc = subprocess.run(
        [sys.executable, "-m", "mklopt", "bench", "--datasets", "sonar", "--methods", "bb_spg",
         "level", "--splits", "1", "--quiet", "--out", str(tmp_path / "out")],
        env=_env(PLUGIN, site), capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    row = next(line for line in proc.stdout.splitlines() if "| bb_spg |" in line)
    assert row.rstrip().endswith("| 1/1 |")  # converged to the protocol's gap
