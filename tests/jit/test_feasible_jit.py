"""``_jit.feasible.repair_box_equality`` against its NumPy twin."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mklopt._jit.feasible import (
    NO_ROOM,
    OFF_EQUALITY,
    OUTSIDE_BOX,
    REPAIRED,
    repair_box_equality,
)

RTOL = 1e-8


def twin(a, U, s, total, rtol):
    """The NumPy twin: ``(code, a)``, ``a`` repaired (a copy)."""
    a = np.array(a, dtype=np.float64)
    scale = float(U.max())
    slack = rtol * scale
    if (a < -slack).any() or (a > U + slack).any():
        return OUTSIDE_BOX, a
    np.clip(a, 0.0, U, out=a)
    r = -total
    for v in s * a:  # summed in the jitted order: r's rounding decides the borderline cases
        r += float(v)
    if abs(r) > rtol * scale * a.shape[0]:
        return OFF_EQUALITY, a
    if r == 0.0:
        return REPAIRED, a
    d = -np.sign(r) * s
    room = np.where(d > 0.0, U - a, a)
    free = (a > 0.0) & (a < U)
    for cand in (free, np.ones_like(free)):
        total_room = 0.0
        for v in room[cand]:  # in index order too: it decides free-first or all
            total_room += float(v)
        if total_room >= abs(r):
            a[cand] += d[cand] * room[cand] * (abs(r) / total_room)
            np.clip(a, 0.0, U, out=a)
            return REPAIRED, a
    return NO_ROOM, a


@st.composite
def problems(draw):
    """A box and equality, a feasible point of it, and rounding-size (or larger) noise."""
    n = draw(st.integers(2, 40))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    U = rng.uniform(0.1, 10.0, n) if draw(st.booleans()) else np.full(n, draw(
        st.floats(1e-3, 1e3)))
    s = rng.choice([-1.0, 1.0], n)
    kind = rng.integers(0, 3, n)  # at 0, free, at upper
    a = np.where(kind == 0, 0.0, np.where(kind == 2, U, rng.uniform(0, 1, n) * U))
    total = float(s @ a)
    if draw(st.booleans()):
        total = 0.0  # an SVM's y'alpha = 0: move the point there first
        a = a * 0.0
    noise = draw(st.sampled_from([0.0, 1e-16, 1e-12, 1e-9, 1e-6]))
    a = a + noise * float(U.max()) * rng.standard_normal(n)
    return a, U, s, total


@settings(max_examples=300, deadline=None)
@given(problems())
def test_repair_matches_its_numpy_twin(problem):
    a, U, s, total = problem
    code_ref, ref = twin(a, U, s, total, RTOL)
    out = a.copy()
    info = np.empty(2)
    code = repair_box_equality(out, U, s, total, RTOL, info)
    assert code == code_ref
    if code != REPAIRED:
        return
    scale = float(U.max())
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-12 * scale)
    # feasible: the box exactly, the equality to rounding
    assert np.all(out >= 0.0) and np.all(out <= U)
    assert abs(float(s @ out) - total) <= 1e-13 * scale * a.size


def test_variables_at_a_bound_stay_there_when_the_free_ones_have_room():
    U = np.full(4, 2.0)
    s = np.array([1.0, -1.0, 1.0, -1.0])
    a = np.array([0.0, 2.0, 1.0, 1.0 - 1e-12])  # s'a = -1e-12 ... off by rounding
    a[1] = 0.0
    info = np.empty(2)
    out = a.copy()
    assert repair_box_equality(out, U, s, 0.0, RTOL, info) == REPAIRED
    assert out[0] == 0.0 and out[1] == 0.0
    assert float(s @ out) == pytest.approx(0.0, abs=1e-15)


@pytest.mark.parametrize("a, code", [
    (np.array([-1.0, 0.5]), OUTSIDE_BOX),
    (np.array([np.nan, 0.5]), OUTSIDE_BOX),
    (np.array([1.0, 0.0]), OFF_EQUALITY),  # y'a = 1 with y = (1, -1): not rounding
])
def test_far_from_the_set_is_a_code_not_a_guess(a, code):
    U = np.ones(2)
    s = np.array([1.0, -1.0])
    info = np.empty(2)
    assert repair_box_equality(a.copy(), U, s, 0.0, RTOL, info) == code
    if code == OFF_EQUALITY:
        assert info[0] == pytest.approx(1.0)


def test_no_room_is_reported():
    # every variable at the bound that the residual would push it past
    U = np.ones(2)
    s = np.array([1.0, 1.0])
    a = np.array([1.0, 1.0])
    info = np.empty(2)
    assert repair_box_equality(a, U, s, 2.0 + 1e-9, RTOL, info) == NO_ROOM
    assert twin(np.array([1.0, 1.0]), U, s, 2.0 + 1e-9, RTOL)[0] == NO_ROOM


def test_py_func_is_the_same_code():
    U = np.full(3, 1.0)
    s = np.array([1.0, -1.0, 1.0])
    a = np.array([0.5, 0.75 + 1e-13, 0.25])
    info = np.empty(2)
    x, y = a.copy(), a.copy()
    assert repair_box_equality(x, U, s, 0.0, RTOL, info) == repair_box_equality.py_func(
        y, U, s, 0.0, RTOL, np.empty(2))
    np.testing.assert_array_equal(x, y)
