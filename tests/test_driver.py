import math

import numpy as np
import pytest

from mklopt import MethodReport, OuterMethod, Progress, Result, driver, solve
from mklopt.domains import Simplex
from mklopt.methods import CuttingPlane, LevelBundle, MethodBase, Subgradient
from mklopt.oracles._solver import SolveStats
from mklopt.stopping import DualityGap, MaxIter, MaxOracleCalls, TimeLimit
from tests._toy_oracles import SmoothQuadraticOracle


class CountingOracle(SmoothQuadraticOracle):
    """Records the warm starts the driver passes."""

    def __init__(self, *a, interrupt_at=None, **k):
        super().__init__(*a, **k)
        self.warm = []
        self.interrupt_at = interrupt_at

    def __call__(self, w, warm_start=None):
        if self.interrupt_at is not None and self.n_calls + 1 == self.interrupt_at:
            raise KeyboardInterrupt
        self.warm.append(None if warm_start is None else np.array(warm_start))
        return super().__call__(w, warm_start)


def oracle(seed=0, **kw):
    base = SmoothQuadraticOracle.random(6, 4, seed=seed)
    return CountingOracle(base.s, base.M, **kw)


def test_result_fields_history_and_warm_starts():
    o = oracle()
    res = solve(o, Subgradient(), stop=DualityGap(1e-3) | MaxIter(200))
    assert isinstance(res, Result)
    assert res.converged and res.reason == "duality_gap"
    assert res.n_oracle_calls == o.n_calls == len(res.history)
    assert [p.n_oracle_calls for p in res.history] == list(range(1, o.n_calls + 1))
    assert res.rel_gap <= 1e-3 and res.gap >= 0
    # best value is the minimum over the history, and gaps are certified
    assert res.value == pytest.approx(min(p.value for p in res.history))
    assert all(p.gap >= 0 for p in res.history)
    ups = [p.upper for p in res.history]
    assert all(b <= a for a, b in zip(ups, ups[1:]))
    # the driver warm-starts every call after the first with the previous alpha
    assert o.warm[0] is None and all(w is not None for w in o.warm[1:])
    assert res.weights.sum() == pytest.approx(1.0)
    assert res.value == pytest.approx(o(res.weights).value)


def test_max_oracle_calls_and_time_limit_are_not_convergence():
    res = solve(oracle(), Subgradient(), stop=MaxOracleCalls(7))
    assert res.n_oracle_calls == 7 and not res.converged and res.reason == "max_oracle_calls"
    res = solve(oracle(), Subgradient(), stop=TimeLimit(1e-9))
    assert res.reason == "time_limit" and res.n_oracle_calls == 1


def test_callback_sees_every_row_and_can_stop():
    rows = []

    def cb(p):
        rows.append(p)
        if len(rows) == 4:
            raise StopIteration

    res = solve(oracle(), Subgradient(), stop=MaxIter(100), callback=cb)
    assert res.reason == "callback" and not res.converged
    assert len(rows) == 4 == len(res.history)


def test_user_callable_criterion():
    def value_below(p):
        return p.value < 0.5

    res = solve(oracle(), Subgradient(), stop=value_below | MaxIter(100))
    assert res.reason in ("value_below", "max_iter")
    if res.reason == "value_below":
        assert res.history[-1].value < 0.5


def test_keyboard_interrupt_returns_best_point_so_far():
    o = oracle(interrupt_at=6)
    res = solve(o, Subgradient(), stop=MaxIter(100))
    assert res.reason == "interrupted" and not res.converged
    assert len(res.history) == 5
    assert res.value == pytest.approx(min(p.value for p in res.history))


def test_interrupt_before_any_answer_is_reported():
    # No point to return: Ctrl-C stays a KeyboardInterrupt, saying why.
    with pytest.raises(KeyboardInterrupt, match="first oracle call"):
        solve(oracle(interrupt_at=1), Subgradient())


def test_bad_arguments():
    with pytest.raises(TypeError, match="stop"):
        solve(oracle(), Subgradient(), stop=5)
    with pytest.raises(TypeError, match="callback"):
        solve(oracle(), Subgradient(), callback=5)


def test_rel_gap_is_gap_over_value():
    res = solve(oracle(1), Subgradient(), stop=MaxIter(3))
    for p in res.history:
        assert math.isclose(p.rel_gap, p.gap / abs(p.upper), rel_tol=1e-12)


def test_progress_is_logged_for_long_runs(caplog, monkeypatch):
    import logging

    import mklopt.driver as drv

    clock = iter(range(0, 10**6))  # each perf_counter() call advances one second
    monkeypatch.setattr(drv.time, "perf_counter", lambda: float(next(clock)))
    with caplog.at_level(logging.INFO, logger="mklopt"):
        solve(oracle(), Subgradient(), stop=MaxIter(3))
    lines = [r.getMessage() for r in caplog.records if r.name == "mklopt"]
    assert lines and all("oracle calls" in m and "relative gap" in m for m in lines)


def test_progress_of_a_method_without_a_gap_names_its_value(caplog, monkeypatch):
    import logging

    import mklopt.driver as drv
    from mklopt.methods import Boosting
    from mklopt.oracles import WeakLearners

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    K = np.stack([X @ X.T + 1.0, np.exp(-((X[:, None] - X[None]) ** 2).sum(-1))])
    clock = iter(range(0, 10**6))  # each perf_counter() call advances one second
    monkeypatch.setattr(drv.time, "perf_counter", lambda: float(next(clock)))
    with caplog.at_level(logging.INFO, logger="mklopt"):
        res = solve(WeakLearners(K, y, C=10.0), Boosting("D1", n_rounds=4, random_state=0))
    lines = [r.getMessage() for r in caplog.records if r.name == "mklopt"]
    assert len(lines) == len(res.history) and all("exp loss=" in m for m in lines)
    assert not any("gap" in m or "J=" in m for m in lines)


def test_progress_line_reports_rows_per_second_and_an_eta():
    assert driver._relative_gap_target(DualityGap(1e-3) | MaxIter(5)) == 1e-3
    assert driver._relative_gap_target((DualityGap(1e-2) | TimeLimit(3)) & MaxIter(9)) == 1e-2
    assert driver._relative_gap_target(DualityGap(1e-3, relative=False) | MaxIter(5)) is None

    def row(t, gap):
        return Progress(iteration=1, elapsed=t, n_oracle_calls=int(t), value=1.0, lower=0.0,
                        upper=1.0, gap=gap, rel_gap=gap, weights=np.ones(1))

    # The gap halves every second: from 2**-10 to 2**-20 takes ten more seconds.
    history = [row(t, 2.0 ** -t) for t in range(1, 11)]
    assert driver._eta(history, 2.0**-20) == pytest.approx(10.0, rel=1e-9)
    assert driver._eta(history[:2], 1e-9) is None  # too few points
    assert driver._eta([row(t, 0.5) for t in range(1, 9)], 1e-3) is None  # not closing

    class Oracle:
        last_stats = SolveStats(n_blocks=3, rows_computed=2000, row_seconds=0.5)

    line = driver._progress_line(LevelBundle(), Oracle(), history[-1], history, 2.0**-20)
    assert "10 oracle calls (1 s each)" in line and "4,000 kernel rows/s" in line
    assert "relative gap 0.000977" in line and "about 10 s to" in line


class ProtocolOnlyFrankWolfe:
    """An outer method written from the ``OuterMethod`` protocol alone (no base class).

    Frank-Wolfe on the simplex: step towards the vertex of the largest q_k.
    It keeps its own best point and certifies it with the simplex's gap.
    """

    def start(self, oracle):
        self.domain = Simplex(oracle.n_kernels)
        self.w = self.domain.initial()
        self.t = 0
        self.best, self.best_w, self.dual = None, None, -math.inf

    def ask(self):
        return self.w

    def tell(self, w, answer):
        if self.best is None or answer.value < self.best.value:
            self.best, self.best_w = answer, np.array(w)
        self.dual = max(self.dual, self.domain.dual_value(answer))
        vertex = np.zeros_like(self.w)
        vertex[np.argmax(answer.q)] = 1.0
        eta = 2.0 / (self.t + 2.0)
        self.w = (1.0 - eta) * self.w + eta * vertex
        self.t += 1

    def report(self):
        gap = math.nan if self.best is None else self.domain.gap(self.best_w, self.best)
        return MethodReport(best=self.best, weights=self.best_w, gap=gap, lower=self.dual,
                            n_iter=self.t)

    def extra(self):
        return {"steps": self.t}


def test_a_method_written_from_the_protocol_alone_runs():
    method = ProtocolOnlyFrankWolfe()
    assert isinstance(method, OuterMethod) and not isinstance(method, MethodBase)
    o = oracle(2)
    res = solve(o, method, stop=DualityGap(1e-3) | MaxIter(5000))
    assert res.converged and res.reason == "duality_gap"
    exact = SmoothQuadraticOracle(o.s, o.M).exact_l1_optimum()
    assert res.lower - 1e-9 <= exact <= res.value + 1e-9
    assert res.value - exact <= res.gap + 1e-9
    assert res.rel_gap <= 1e-3
    assert res.n_oracle_calls == res.n_iter == len(res.history) == res.extra["steps"]
    # history rows record the evaluated points (the protocol's default)
    assert all(Simplex(6).contains(p.weights) for p in res.history)
    # the lower bound of every row and of the result is the same rule: best dual so far
    assert res.history[-1].lower == res.lower


def test_progress_and_result_lower_bounds_follow_one_rule():
    for method in (Subgradient(), LevelBundle(), CuttingPlane()):
        res = solve(oracle(3), method, stop=DualityGap(1e-4) | MaxIter(200))
        lows = [p.lower for p in res.history]
        assert res.lower == lows[-1]
        assert all(b >= a for a, b in zip(lows, lows[1:]))  # running maximum
        # never below the best dual value D(alpha) that certifies the gap
        assert res.lower >= res.value - res.gap - 1e-12 * abs(res.value)
