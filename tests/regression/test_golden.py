"""Golden runs: certified bounds recorded on every bundled data set.

Each recorded row brackets the L1-MKL optimum, ``lower <= J* <= value``
(``lower = value - gap``, a dual value). A new run of any L1 method must
certify an interval that overlaps the recorded one, up to the inner
solver's accuracy; a method that converges to a wrong point, or a gap that
is not a bound, fails here. Re-record only deliberately
(``python -m tests.regression.record``).
"""

import csv
from pathlib import Path

import pytest

from mklopt.methods import CuttingPlane, LevelBundle, Subgradient
from tests.regression.record import golden_run

ROWS = list(csv.DictReader(open(Path(__file__).parent / "recorded.csv")))


@pytest.mark.slow
@pytest.mark.parametrize("row", ROWS, ids=[r["dataset"] for r in ROWS])
@pytest.mark.parametrize("make", [LevelBundle, CuttingPlane, Subgradient],
                         ids=["level", "silp", "sd"])
def test_new_run_brackets_the_recorded_optimum(row, make):
    rec_value, rec_lower = float(row["value"]), float(row["lower"])
    assert rec_lower <= rec_value
    res = golden_run(row["dataset"], make(), seed=int(row["seed"]), tol=1e-2, max_iter=500)
    lower = res.value - res.gap
    slack = 1e-5 * abs(rec_value)  # inner tolerance 1e-6: J is accurate to ~2e-6 relative
    assert lower <= rec_value + slack, "new lower bound above the recorded optimum"
    assert res.value >= rec_lower - slack, "new value below the recorded lower bound"
    assert res.converged and res.rel_gap <= 1e-2, (res.reason, res.rel_gap)
