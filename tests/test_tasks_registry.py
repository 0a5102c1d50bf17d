"""The registry of tasks, oracles and estimators (mklopt.tasks)."""

import numpy as np
import pytest

from mklopt import MKLRegressor, tasks
from mklopt.kernels import rbf
from mklopt.oracles import RidgeDual, SVRDual
from mklopt.persist import load_model, save_model


def _data(n=40, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    return X, np.sin(X[:, 0]) + 0.1 * rng.normal(size=n)


def test_builtins_are_registered_by_task():
    assert tasks.oracle_names("classification")[:2] == ["hinge", "logistic"]
    assert set(tasks.oracle_names("regression")) >= {"epsilon_insensitive", "squared"}
    assert tasks.get_oracle("regression", "squared").factory is RidgeDual
    assert tasks.get_oracle("regression", "epsilon_insensitive").params == ("C", "epsilon", "tol")
    with pytest.raises(ValueError, match="registered for the one-class task .*'nu'.*got 'x'"):
        tasks.get_oracle("one-class", "x")


def test_a_registered_oracle_is_the_estimators_loss(monkeypatch):
    # a factory of one's own (here RidgeDual without offset, as a user's oracle)
    monkeypatch.setitem(tasks.ORACLES, ("regression", "ridge_no_offset"), tasks.OracleEntry(
        "ridge_no_offset", "regression", lambda bank, y, C: RidgeDual(bank, y, C=C,
                                                                      fit_intercept=False),
        ("C",)))
    X, y = _data()
    reg = MKLRegressor(kernels=[rbf(0.5), rbf(2.0)], loss="ridge_no_offset", C=10.0).fit(X, y)
    assert reg.intercept_[0] == 0.0  # the user's oracle ran: no offset
    ref = MKLRegressor(kernels=[rbf(0.5), rbf(2.0)], loss="squared", C=10.0).fit(X, y)
    assert ref.intercept_[0] != 0.0


def test_register_refuses_a_taken_name_unless_replace():
    with pytest.raises(ValueError, match="already registered"):
        tasks.register_oracle("squared", "regression", SVRDual)
    entry = tasks.register_oracle("squared", "regression", RidgeDual, ("C",), replace=True)
    assert tasks.get_oracle("regression", "squared") is entry


def test_a_subclassed_estimator_saves_and_loads(tmp_path, monkeypatch):
    class MKLKernelRidge(MKLRegressor):
        pass

    X, y = _data()
    est = MKLKernelRidge(kernels=[rbf(1.0)], loss="squared").fit(X, y)
    # unregistered: saved in its registered base's name plus its own class
    # name, and loaded as itself (the class is defined here)
    save_model(est, tmp_path / "a.npz")
    back, meta = load_model(tmp_path / "a.npz")
    assert meta["estimator"] == "MKLRegressor" and type(back) is MKLKernelRidge
    assert meta["class"].endswith("MKLKernelRidge")
    np.testing.assert_allclose(back.predict(X), est.predict(X), rtol=1e-12)
    # registered: saved and loaded as itself
    monkeypatch.setitem(tasks.ESTIMATORS, "MKLKernelRidge",
                        tasks.EstimatorEntry("MKLKernelRidge", MKLKernelRidge, "regression"))
    save_model(est, tmp_path / "b.npz")
    back, meta = load_model(tmp_path / "b.npz")
    assert meta["estimator"] == "MKLKernelRidge" and type(back) is MKLKernelRidge
    np.testing.assert_allclose(back.predict(X), est.predict(X), rtol=1e-12)


def test_methods_declare_the_estimator_parameters_they_take(monkeypatch):
    from mklopt import MKLClassifier
    from mklopt.methods import METHODS, AnalyticLp, LevelBundle, estimator_params_of

    assert estimator_params_of(AnalyticLp) == {"p": "p"}
    assert estimator_params_of(LevelBundle) == {}
    seen = []

    class Renamed(AnalyticLp):  # takes the estimator's p as its own "order"
        estimator_params = {"p": "order"}

        def __init__(self, order=2.0):
            seen.append(order)
            super().__init__(p=order)

        def get_params(self, deep=False):
            return {"order": self.p}

    monkeypatch.setitem(METHODS, "renamed_lp", Renamed)
    X, y = _data()
    y = np.where(y > np.median(y), 1, -1)
    clf = MKLClassifier(kernels=[rbf(0.5), rbf(2.0)], method="renamed_lp", p=3.0).fit(X, y)
    assert seen and set(seen) == {3.0}
    assert np.linalg.norm(clf.weights_, 3.0) == pytest.approx(1.0, rel=1e-6)
    with pytest.raises(ValueError, match="p=3.0 is only used by"):
        MKLClassifier(kernels=[rbf(1.0)], method="level", p=3.0).fit(X, y)

    class Bad(LevelBundle):
        estimator_params = {"q": "q"}

    with pytest.raises(ValueError, match="Bad.estimator_params names q"):
        estimator_params_of(Bad)


def test_the_cli_reads_the_declarations(tmp_path, capsys):
    from mklopt.cli import main

    X, y = _data(30)
    rows = ["a,b,label"] + [f"{a:.6f},{b:.6f},{int(t > 0)}" for (a, b), t in zip(X, y)]
    (tmp_path / "d.csv").write_text("\n".join(rows) + "\n")
    args = ["fit", str(tmp_path / "d.csv"), "--model", str(tmp_path / "m.npz")]
    assert main([*args, "--p", "3"]) == 2
    assert "--p is only used with --method lp" in capsys.readouterr().err
    assert main([*args, "--method", "level", "--groups", "features"]) == 2
    assert "--groups is only used with --method active_set, exact, mirror" in \
        capsys.readouterr().err
    assert main([*args, "--method", "lp", "--p", "3", "--kernels", "grid"]) == 0
    capsys.readouterr()
