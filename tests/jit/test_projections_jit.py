import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from mklopt._jit.projections import entropic_step, project_simplex, project_simplex_product
from tests import _reference as ref
from tests._strategies import log_uniform, reals, simplex_points

finite = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)
vectors = st.integers(1, 30).flatmap(lambda n: arrays(np.float64, n, elements=finite))


@given(vectors)
def test_project_simplex_matches_reference_and_lands_in_simplex(x):
    out = project_simplex(x, 1.0, np.empty_like(x))
    np.testing.assert_allclose(out, ref.project_simplex(x), atol=1e-9)
    assert np.all(out >= 0)
    assert abs(out.sum() - 1.0) <= 1e-9 * max(1.0, np.abs(x).max())


@given(st.integers(1, 30).flatmap(
    lambda n: st.tuples(arrays(np.float64, n, elements=finite), st.lists(simplex_points(n), max_size=20))))
def test_project_simplex_is_idempotent_and_closest(problem):
    x, others = problem
    p = project_simplex(x, 1.0, np.empty_like(x))
    np.testing.assert_allclose(project_simplex(p, 1.0, np.empty_like(p)), p, atol=1e-9)
    # No feasible point (vertices and faces included) is closer to x than its projection.
    for z in others:
        assert np.linalg.norm(x - p) <= np.linalg.norm(x - z) + 1e-9 * max(1.0, np.abs(x).max())


def test_project_simplex_radius_and_py_func():
    x = np.array([0.3, -2.0, 5.0, 1.0])
    out = project_simplex.py_func(x, 2.0, np.empty_like(x))
    np.testing.assert_allclose(out, ref.project_simplex(x, 2.0))
    assert out.sum() == pytest.approx(2.0)


@st.composite
def blocks(draw, elements):
    """Contiguous blocks of 1 to 6 entries and a vector over them."""
    sizes = draw(st.lists(st.integers(1, 6), min_size=1, max_size=5))
    x = draw(arrays(np.float64, sum(sizes), elements=elements))
    return np.r_[0, np.cumsum(sizes)].astype(np.int64), x


@given(blocks(finite))
def test_project_simplex_product_blocks(problem):
    offsets, x = problem
    out = project_simplex_product(x, offsets, np.empty_like(x))
    for a, b in zip(offsets[:-1], offsets[1:]):
        np.testing.assert_allclose(out[a:b], ref.project_simplex(x[a:b]), atol=1e-9)


@given(blocks(reals(-30.0, 30.0)), st.data(), log_uniform(1e-3, 1e3))
def test_entropic_step_matches_reference_and_stays_on_product(problem, data, step):
    offsets, g = problem
    lam = np.concatenate([data.draw(simplex_points(int(b - a)))
                          for a, b in zip(offsets[:-1], offsets[1:])])
    out = entropic_step(lam, g, step, offsets, np.empty_like(lam))
    assert np.all(np.isfinite(out)) and np.all(out >= 0)
    for a, b in zip(offsets[:-1], offsets[1:]):
        assert out[a:b].sum() == pytest.approx(1.0)
    np.testing.assert_allclose(out, ref.entropic_step(lam, g, step, offsets), rtol=1e-9, atol=1e-12)
    small = np.array([0.5, 0.5])
    np.testing.assert_allclose(
        entropic_step.py_func(small, np.array([1.0, 0.0]), 1e9, np.array([0, 2]), np.empty(2)),
        [0.0, 1.0],
    )
