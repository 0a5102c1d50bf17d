"""The package's numerical policy: the relative duality gap and the inner solvers' tolerance.

Every site that divides a gap by the objective, or that chooses how
accurately an inner (SVM) problem is solved, asks this module, so that a
run, a method's own check, a C path and an estimator agree on what
"converged" means.

**The relative gap.** ``gap / |upper|`` for the certified gap ``upper -
lower``. At ``upper = 0`` a zero gap pins the optimum at 0 exactly (a
squared loss with constant targets, say) and meets every relative target;
any other gap there is infinitely large relative to the optimum. A gap that
is not a number (a method with no lower bound) stays ``nan``.

**The inner tolerance.** An answer computed at inner tolerance ``eps`` has
its value and its ``q`` off by about ``eps`` relative (SMO's maximal KKT
violation), so a relative gap ``g`` is resolved when ``eps = g / 100``
(:data:`INNER_TOL_RATIO`): the inner error is then 1 % of the gap. The
tolerance never goes below :data:`INNER_TOL_FLOOR`, where float64 rounding
in the dual's gradient takes over, and an estimator's default never starts
above :data:`INNER_TOL_MAX`, where SMO's answers would be too rough for
the outer method's first steps.
"""

from __future__ import annotations

import math

__all__ = [
    "INNER_TOL_RATIO",
    "INNER_TOL_FLOOR",
    "INNER_TOL_MAX",
    "relative_gap",
    "relative_target",
    "inner_tol_for",
    "default_inner_tol",
]

#: Inner tolerance per unit of relative gap to resolve (1 % of the gap).
INNER_TOL_RATIO = 1e-2
#: The tightest inner tolerance any rule asks for.
INNER_TOL_FLOOR = 1e-9
#: The loosest inner tolerance an estimator starts from.
INNER_TOL_MAX = 1e-3


def relative_gap(gap, upper):
    """``gap / |upper|``, with the rule at ``upper = 0`` of the module notes.

    ``nan`` when either is not a number or ``upper`` is not finite (no
    point yet).

    Examples
    --------
    >>> relative_gap(0.5, -2.0)
    0.25
    >>> relative_gap(0.0, 0.0), relative_gap(1e-3, 0.0)
    (0.0, inf)
    """
    gap, upper = float(gap), float(upper)
    if math.isnan(gap) or not math.isfinite(upper):
        return math.nan
    if upper != 0.0:
        return gap / abs(upper)
    return 0.0 if gap == 0.0 else math.inf


def relative_target(tol, relative, upper):
    """The relative gap a stopping rule waits for: ``tol``, or an absolute ``tol`` over ``|upper|``.

    ``inf`` for an absolute rule where ``upper`` is 0 or not finite: no
    relative gap to resolve, so the inner tolerance is not tightened for it.
    """
    if relative:
        return float(tol)
    upper = float(upper)
    return float(tol) / abs(upper) if math.isfinite(upper) and upper != 0.0 else math.inf


def inner_tol_for(rel_gap, start=INNER_TOL_MAX):
    """The inner tolerance that resolves a relative gap ``rel_gap``, at most ``start``.

    ``min(start, max(INNER_TOL_FLOOR, INNER_TOL_RATIO * rel_gap))``; a gap
    that is not finite asks for nothing tighter than ``start``.
    """
    g = float(rel_gap)
    if not math.isfinite(g):
        return float(start)
    return min(float(start), max(INNER_TOL_FLOOR, INNER_TOL_RATIO * g))


def default_inner_tol(tol):
    """An estimator's inner tolerance for a run to relative gap ``tol`` (``inner_tol=None``)."""
    return inner_tol_for(tol, INNER_TOL_MAX)
