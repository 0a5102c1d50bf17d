"""The exact conic reference solve (cvxpy with Clarabel, a test extra) of oracles and the kit.

Low in the import order (it imports only :mod:`mklopt._optional`), so that an
oracle's ``reference_value`` and :mod:`mklopt.testing` both use it without
an import circle.
"""

import warnings

from ._optional import require

__all__ = ["_cvxpy", "_solve_tight"]


def _cvxpy():
    """cvxpy, for the exact optima of the smooth oracle (a test extra)."""
    return require("cvxpy", "the exact optimum of SmoothQuadraticOracle")


def _solve_tight(prob):
    """Solve with Clarabel and accept only an optimal status.

    At its default tolerances (1e-8) Clarabel reported a drawn problem
    optimal 1.6e-6 relative below a certified lower bound, and it can stop
    "optimal_inaccurate" or fail. The solve runs at 1e-9 first and is
    retried with the defaults, then with more iterations and no
    equilibration. If no attempt is optimal the first inaccurate value is
    returned (as a single default solve did before); none at all raises.
    """
    cp = _cvxpy()
    attempts = [
        dict(tol_gap_abs=1e-9, tol_gap_rel=1e-9, tol_feas=1e-9),
        {},
        dict(max_iter=1000, equilibrate_enable=False),
        dict(max_iter=1000, equilibrate_enable=False, static_regularization_constant=1e-7),
    ]
    inaccurate = None
    for opts in attempts:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # "may be inaccurate": the status says it
                prob.solve(solver=cp.CLARABEL, **opts)
        except cp.error.SolverError:
            continue
        if prob.status == cp.OPTIMAL:
            return float(prob.value)
        if prob.status == cp.OPTIMAL_INACCURATE and inaccurate is None:
            inaccurate = float(prob.value)
    if inaccurate is not None:
        return inaccurate
    raise RuntimeError(f"the reference conic solve did not reach an optimum ({prob.status})")
