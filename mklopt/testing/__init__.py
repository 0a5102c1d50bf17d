"""A conformance kit for outer methods and oracles, with toy oracles of known optima.

:func:`check_method` and :func:`check_oracle` raise ``AssertionError``
naming the violated property; :func:`parametrize_with_checks` runs them as
pytest cases, one per check; :mod:`mklopt.testing.strategies` has
hypothesis strategies. hypothesis is a test dependency, not one of
mklopt's: ``check_method`` draws its problems with it and says how to
install it when it is missing.

The toy oracles answer like :class:`mklopt.oracles.SVMDual` (an
:class:`~mklopt.OracleAnswer` with ``value``, ``q``, ``alpha``, ...) but in
microseconds, and they know their exact optimum, so a new outer method can
be checked for convergence without an SVM.

``PiecewiseLinearOracle`` has ``J(w) = max_j f(w, alpha_j)`` over a few fixed
"dual points", each given by ``s_j = 1'alpha_j`` and ``q_j >= 0``, so that
``f(w, alpha_j) = s_j - w'q_j / 2`` and ``J`` is a convex piecewise-linear
function; its minimum over the simplex is an LP. ``SmoothQuadraticOracle``
is smooth. Both return their L1 optimum with a certified error bound
(``certified_l1_optimum``, about 1e-15 relative) and as a float
(``exact_l1_optimum``).
"""

from ._method_checks import DEFAULT_CONFORMANCE, check_method, method_checks
from ._oracle_checks import check_oracle, oracle_checks, separable_toy
from ._toys import (  # noqa: F401  (_cvxpy, _solve_tight: the test suite's conic references)
    PiecewiseLinearOracle,
    SmoothQuadraticOracle,
    _cvxpy,
    _solve_tight,
    elastic_net_metric,
)

__all__ = ["PiecewiseLinearOracle", "SmoothQuadraticOracle", "DEFAULT_CONFORMANCE",
           "check_method", "check_oracle", "method_checks", "oracle_checks",
           "parametrize_with_checks", "separable_toy"]


def parametrize_with_checks(methods=(), oracles=(), *, thorough=False, separable=None):
    """A ``pytest.mark.parametrize`` with one case per check of every method and oracle.

    Parameters
    ----------
    methods : sequence of MethodBase or type
        Methods (instances or classes) to check with :func:`check_method`.
    oracles : sequence of callable
        Oracle factories to check with :func:`check_oracle`.
    thorough : bool, default=False
        The long profile of both kits.
    separable : callable, optional
        Passed to :func:`check_oracle` (the decision check's oracle builder).

    Returns
    -------
    MarkDecorator
        Parametrizes one argument, ``check``: a no-argument callable, with
        an id such as ``"check_method[FrankWolfe-progress]"`` or
        ``"check_oracle[oracle0-minorant]"``, so a failure names the
        property that broke.

    Examples
    --------
    In a test module (pytest is needed only there)::

        @parametrize_with_checks(methods=[MyMethod], oracles=[lambda: MyOracle(K, y)])
        def test_mklopt_contract(check):
            check()
    """
    import pytest

    params = []
    seen = {}
    for m in methods:
        label = m.__name__ if isinstance(m, type) else type(m).__name__
        if not isinstance(m, type) and repr(m) != f"{label}()":
            label = repr(m)
        n = seen[label] = seen.get(label, 0) + 1
        if n > 1:
            label = f"{label}#{n}"
        for check, fn in method_checks(m, thorough=thorough):
            params.append(pytest.param(fn, id=f"check_method[{label}-{check}]"))
    for i, factory in enumerate(oracles):
        label = getattr(factory, "__name__", "oracle")
        if label == "<lambda>":
            label = f"oracle{i}"
        for check, fn in oracle_checks(factory, thorough=thorough, separable=separable):
            params.append(pytest.param(fn, id=f"check_oracle[{label}-{check}]"))
    return pytest.mark.parametrize("check", params)
