"""The benchmark protocols' settings (light: read by the CLI's parser)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Protocol", "PROTOCOLS"]


@dataclass(frozen=True)
class Protocol:
    """The settings of a benchmark protocol.

    Attributes
    ----------
    methods : tuple of str
        The preset keys it runs by default.
    C : float or None
        The SVM trade-off on unit-trace kernels (None: the scale cases' own,
        ``C = n``).
    help : str
        One line for ``mklopt bench --help``.
    tol : float
        Relative duality gap that stops a run.
    max_iter : int
        Outer iterations that stop a run.
    inner_tol : float
        KKT tolerance of the SVM solver.
    """

    methods: tuple
    C: float | None
    help: str
    tol: float = 1e-2
    max_iter: int = 500
    inner_tol: float = 1e-4


#: The protocols, by name (the kernel grids are :func:`mklopt.kernels.grid`'s).
PROTOCOLS = {
    "level2008": Protocol(
        methods=("sd", "silp", "level", "mirror", "lp4/3", "lp2", "lp4"),
        C=100.0,
        help="Xu et al. 2008: Gaussian widths 2^-3..2^6 and polynomial degrees 1..3 on all "
        "features and on each single feature, unit trace, C = 100, relative gap 0.01",
    ),
    "mkboost2013": Protocol(
        methods=("level", "mkboost-d1", "mkboost-d2", "mkboost-s1", "mkboost-s2"),
        C=50.0,
        help="Xia & Hoi 2013: 17 kernels (widths 2^-6..2^7, degrees 1..3) on all features, "
        "C = 50, T = 100 rounds, sampling ratio 0.2, decay 2^-5",
    ),
    "scale": Protocol(
        methods=(),
        C=None,
        max_iter=2000,
        # SVMDual's default: the driver tightens it with the gap, to 1e-4 at a 1e-2 gap
        inner_tol=1e-3,
        help="kernels that are never stored: letter (16,000 points, level grid) with Level and "
        "Lp, scale curves n = 1k..16k, shuttle (50,000 points), sonar with 1e5 and 1e6 kernels; "
        "each case in its own process, with peak memory (select with --cases)",
    ),
    "compare": Protocol(
        methods=(),
        C=None,
        help="mklopt against what a user would pick instead, one process, same splits: "
        "StandardScaler+SVC, its 5x5 GridSearchCV over C and gamma, SVC on the uniform average "
        "of the same kernels, MKLpy's EasyMKL and AverageMKL (when installed), MKLClassifier() "
        "and MKLClassifierCV(); digits, satellite, the six binary sets and satellite-bands "
        "(multi-view); accuracy, fit time with one BLAS thread and the default threads, peak "
        "memory (needs scikit-learn; --datasets, --splits (default 1), --repeats (default 3))",
    ),
    "kloft2010": Protocol(
        methods=(),
        C=None,
        help="Kloft et al. 2010 (Lp-norm MKL poster): the two-Gaussian toy problem (test error "
        "against the share of noise features, p = 1, 4/3, 2, 4, inf) and fit time against n "
        "with 50 Gaussian kernels on letter (SVC, SimpleMKL, Lp-MKL with p = 1, 4/3, 2, 3, "
        "inf); select with --cases toy times, sizes with --sizes, draws with --repeats "
        "(default 5)",
    ),
}
