"""Which registered outer method runs on which formulation and which oracle.

:func:`configurations` lists, for a formulation (``("l1", None)``,
``("lp", p)`` or ``("enet", lam)``) and whether the oracle describes its dual
as a box-constrained problem (``oracle.problem``, as ``SVMDual`` does), every
configuration of a registered method that solves it. :data:`NOT_APPLICABLE`
names the registered methods that cannot run on a problem, and why;
:func:`uncovered` lists registered methods that are in neither, so that a
newly registered method fails the exactness tests until it is placed.
"""

from __future__ import annotations

from mklopt.methods import (
    METHODS,
    SPG,
    ActiveSet,
    AnalyticElasticNet,
    AnalyticLp,
    Chain,
    CuttingPlane,
    KernelWorkingSet,
    LevelBundle,
    MirrorDescent,
    Subgradient,
)

#: Registered methods that never apply to the MKL dual oracles, with the reason.
NOT_APPLICABLE = {
    "Boosting": "talks to a weak-learner oracle (oracle_kind 'weak_learners') and minimises "
                "the exponential loss of boosting, not J(w) of a dual oracle",
}

#: Why the exact active-set step (and a chain ending in it) needs oracle.problem.
NEEDS_BOX_QP = (
    "ActiveSet solves the MKL dual restricted to a few kernels and variables as a cone "
    "program over the oracle's DualProblem: a linear term over a box with one equality. "
    "The logistic dual has an entropy term, the squared-loss dual a quadratic one and no "
    "box, and a shared-weight (composite) oracle one equality per part, so none of them "
    "has a DualProblem"
)


def configurations(formulation, has_problem):
    """``[(label, factory)]``: every registered method configuration for ``formulation``.

    Parameters
    ----------
    formulation : ("l1", None), ("lp", p) or ("enet", lam)
    has_problem : bool
        Whether the oracle has ``problem`` (a DualProblem): only then the
        exact active-set step applies.
    """
    kind, arg = formulation
    if kind == "l1":
        out = [
            ("level", LevelBundle),
            ("cutting_plane", CuttingPlane),
            ("subgradient (reduced, SimpleMKL)", Subgradient),
            ("subgradient (projected)", lambda: Subgradient(direction="projected")),
            ("mirror", MirrorDescent),
            ("spg", SPG),
            # 3 kernels: size 2 runs its inner method on the whole bank,
            # size 1 a real working set grown by pricing
            ("working_set (size 2, whole bank)", lambda: KernelWorkingSet(size=2)),
            ("working_set (size 1)", lambda: KernelWorkingSet(size=1)),
            # lam = 0 of the elastic net is L1-MKL (on the face sum(w) = 1)
            ("elastic_net (lam 0)", lambda: AnalyticElasticNet(0.0)),
            ("chain (spg -> level)", lambda: Chain("spg", "level")),
        ]
        if has_problem:
            out += [("active_set", ActiveSet),
                    ("chain (level -> active_set)", lambda: Chain("level", "active_set"))]
        return out
    if kind == "lp":
        return [
            (f"lp (p {arg:g})", lambda: AnalyticLp(p=arg)),
            (f"spg (norm {arg:g})", lambda: SPG(norm=arg)),
            (f"subgradient (projected, norm {arg:g})",
             lambda: Subgradient(direction="projected", norm=arg)),
        ]
    if kind == "enet":
        return [
            (f"elastic_net (lam {arg:g})", lambda: AnalyticElasticNet(arg)),
            (f"spg (elastic_net {arg:g})", lambda: SPG(elastic_net=arg)),
            (f"subgradient (projected, elastic_net {arg:g})",
             lambda: Subgradient(direction="projected", elastic_net=arg)),
        ]
    raise ValueError(formulation)


def certifies_slowly(label):
    """Whether the configuration's only lower bound is the best single answer's ``D(alpha)``.

    Mirror descent, the projected subgradient (diminishing steps) and a
    working set on a strict subset of the kernels have no model of ``J``:
    their certificate closes only as fast as one answer's own gap, which on
    the drawn problems sometimes stayed above 1e-4 after 3,000 calls
    (``benchmarks/bench_conic_exact.py`` (retired; at commit ``89ee8cc``)). Their bracket is checked, not
    their convergence.
    """
    return label.startswith(("mirror", "subgradient (projected", "working_set (size 1"))


#: The method classes :func:`configurations` places (with or without a DualProblem).
PLACED = {cls.__name__ for cls in (
    LevelBundle, CuttingPlane, Subgradient, MirrorDescent, SPG, KernelWorkingSet,
    AnalyticElasticNet, AnalyticLp, Chain, ActiveSet)}


def uncovered():
    """Registered method classes neither placed nor excluded (should be empty)."""
    names = {cls.__name__ for cls in METHODS.values()}
    return sorted(names - PLACED - set(NOT_APPLICABLE))
