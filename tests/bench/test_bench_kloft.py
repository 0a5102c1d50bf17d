"""The kloft2010 bench protocol: its toy generator and an end-to-end run on tiny sizes."""

import csv
import math

import numpy as np
import pytest

from mklopt.bench import kloft as K
from mklopt.cli import main as cli_main


@pytest.mark.parametrize("noise", K.NOISE_LEVELS)
def test_toy_generator_has_the_stated_noise_fraction_and_bayes_error(noise):
    X, y, theta, rho = K.toy_data(20000, noise, rng=1)
    k = int(theta.sum())
    assert set(np.unique(theta)) <= {0.0, 1.0}
    # The noise fraction is the share of irrelevant features (at least one relevant).
    assert k == max(1, round(50 * (1 - noise)))
    assert abs((50 - k) / 50 - noise) <= 0.01
    # Class means +-rho theta: relevant features shift by rho * y, noise ones do not.
    for sign in (-1.0, 1.0):
        mean = X[y == sign].mean(axis=0)
        tol = 5.0 / math.sqrt((y == sign).sum())  # 5 standard errors of a mean
        np.testing.assert_allclose(mean[theta > 0], sign * rho, atol=tol)
        np.testing.assert_allclose(mean[theta == 0], 0.0, atol=tol)
    # Isotropic unit covariance within a class.
    cov = np.cov(X[y == 1].T)
    np.testing.assert_allclose(np.diag(cov), 1.0, atol=0.06)
    # rho keeps the Bayes error at 10 %: the Bayes rule sign(theta'x) errs that often.
    bayes = np.mean(np.sign(X @ theta) != y)
    assert abs(bayes - K.BAYES_ERROR) < 0.01
    assert abs(np.mean(y > 0) - 0.5) < 0.02


def test_toy_relevant_set_is_shared_between_draws():
    _, _, theta, _ = K.toy_data(50, 0.64, rng=3)
    _, _, again, _ = K.toy_data(10, 0.64, rng=4, relevant=np.flatnonzero(theta))
    np.testing.assert_array_equal(theta, again)


@pytest.mark.slow  # every norm and 7 methods end to end (26 s loaded); the options test stays
def test_protocol_runs_end_to_end_on_tiny_sizes(tmp_path, capsys, monkeypatch):
    # Tiny: two noise levels, 30 training points and small held-out sets.
    monkeypatch.setattr(K, "NOISE_LEVELS", (0.0, 0.92))
    real_main = K.main

    def tiny(**kw):
        return real_main(**kw, noise_levels=(0.0, 0.92), toy_sizes=(30, 200, 300))

    monkeypatch.setattr(K, "main", tiny)
    code = cli_main(["bench", "--protocol", "kloft2010", "--repeats", "2", "--sizes", "60", "90",
                     "--out", str(tmp_path), "--quiet"])
    assert code in (0, None)
    out = tmp_path / "kloft2010"
    for name in ("toy.csv", "toy.md", "times.csv", "times.md", "summary.md"):
        assert (out / name).stat().st_size > 0
    pytest.importorskip("matplotlib")
    assert (out / "toy.png").stat().st_size > 0 and (out / "times.png").stat().st_size > 0
    text = (out / "summary.md").read_text()
    assert "p = 4/3" in text and "SimpleMKL / Lp-MKL fit time at n = 90" in text
    assert "Claim 'p = 2 is the best model'" in text
    toy = _read(out / "toy.csv")
    assert len(toy) == 2 * 2 * 5  # repeats x noise levels x norms
    assert {r["p"] for r in toy} == {"1", "4/3", "2", "4", "inf"}
    err = np.array([float(r["test_error"]) for r in toy])
    # Every model beats chance and none beats the Bayes error by more than sampling noise.
    assert np.all(err < 0.5)
    assert np.all(err > K.BAYES_ERROR - 0.06)
    times = _read(out / "times.csv")
    assert len(times) == 2 * 2 * 7  # repeats x sizes x methods
    assert all(float(r["seconds"]) > 0 and r["converged"] == "True" for r in times)


def _read(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_kloft_options_are_checked(tmp_path, capsys):
    assert cli_main(["bench", "--protocol", "kloft2010", "--cases", "nope",
                     "--out", str(tmp_path)]) == 2
    assert "toy, times" in capsys.readouterr().err
    assert cli_main(["bench", "--sizes", "100", "--out", str(tmp_path)]) == 2
    assert "--sizes belongs to --protocol kloft2010" in capsys.readouterr().err
