"""Optional dependencies: a missing one is skipped or named with how to install it."""

import sys

import numpy as np
import pytest

from mklopt import MKBoostClassifier, MKLClassifier
from mklopt._optional import optional, pyplot, require
from mklopt.bench import runs as _bench
from mklopt.domains import LpBall
from mklopt.kernels import linear, rbf
from mklopt.testing import SmoothQuadraticOracle


def test_a_missing_module_is_none_or_an_error_that_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "cvxpy", None)  # as on a machine without cvxpy
    assert optional("cvxpy") is None
    with pytest.raises(ImportError, match=r'^the exact optimum of SmoothQuadraticOracle needs '
                       r'cvxpy, which is not installed; pip install "mklopt\[test\]"$'):
        SmoothQuadraticOracle.random(3).exact_optimum(LpBall(3, 2.0))
    # the L1 optimum needs no cvxpy (Newton on the optimality conditions)
    value, bound = SmoothQuadraticOracle.random(3).certified_l1_optimum()
    assert bound <= 1e-12 * abs(value)
    with pytest.raises(ImportError, match=r"^X needs somepackage, .* pip install somepackage$"):
        require("somepackage.sub", "X")


def test_figures_are_skipped_without_matplotlib(monkeypatch, tmp_path):
    assert pyplot() is not None  # installed with the test extra
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert pyplot() is None
    assert _bench.draw_figures({"sonar": {"level": []}}, str(tmp_path), ["level"]) == []
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("make", [
    lambda: MKLClassifier(kernels=[rbf(1.0), linear()]),
    lambda: MKBoostClassifier(n_rounds=3, random_state=0),
], ids=["MKLClassifier", "MKBoostClassifier"])
def test_estimators_fit_without_dask(monkeypatch, make):
    # A plain install has no distributed: client=None must never import it
    # (the parameter table tries None before the client's check).
    for name in [m for m in sys.modules if m == "distributed" or m.startswith("distributed.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "distributed", None)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    y = (X[:, 0] > 0).astype(int)
    assert make().fit(X, y).score(X, y) >= 0.8
    with pytest.raises(ImportError, match=r'pip install "mklopt\[dask\]"'):
        make().set_params(client=object()).fit(X, y)
