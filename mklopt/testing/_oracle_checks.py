"""``check_oracle``: an oracle's answers checked against each other and its own duality."""

import functools
import math

import numpy as np

__all__ = ["check_oracle", "oracle_checks", "separable_toy"]

ORACLE_CHECKS = ("answers", "minorant", "subgradient", "tolerance", "warm_start", "decision",
                 "reference")
#: The inner tolerance the kit solves at when the oracle has one (``oracle.tol``).
TIGHT_TOL = 1e-8


def check_oracle(oracle_factory, n_points=None, seed=0, *, thorough=False, separable=None):
    """Check an oracle's answers and its duality; raise ``AssertionError`` naming the property.

    Parameters
    ----------
    oracle_factory : callable
        ``oracle_factory() -> oracle``; a fresh oracle is built for each
        check so that no state leaks between them.
    n_points : int, optional
        How many simplex points (the centre, then random points, some with
        exact zeros) the answers are drawn at (default 4, thorough 8).
    seed : int, default=0
        Seed of the drawn points.
    thorough : bool, default=False
        More points, more directions and the decision check on more toys.
    separable : callable, optional
        ``separable(K, y) -> oracle`` builds the oracle (a classifier) on a
        given kernel stack ``K`` of shape ``(n_kernels, n, n)`` and labels
        ``y`` in {-1, +1}; the ``decision`` check then runs it on a
        linearly separable toy (:func:`separable_toy`). Without it that
        check is skipped.

    Notes
    -----
    The checks, each also a pytest case of :func:`parametrize_with_checks`
    (where ``tol`` is said, the kit sets ``oracle.tol`` to 1e-8 when the
    oracle has one, and allows the stated inner error ``4 tol |J|``):

    ``answers``
        At each point: a finite ``value``; ``q >= 0`` (PSD kernels) with one
        entry per kernel; ``grad == -q / 2``; ``value == linear_term -
        w'q / 2``; ``alpha`` finite and, when the oracle offers
        ``dual_violation(alpha)``, feasible for the dual's constraints; a
        warm start with the answer's own ``alpha`` reaching the cold value;
        a ``w`` of the wrong length raising ``ValueError`` or ``TypeError``.
    ``minorant``
        The linear term does not depend on ``w``, so every answer is a lower
        bound everywhere: ``linear_term_j - w_i'q_j / 2 <= J(w_i)`` for all
        answers ``i, j`` (cold and warm-started ones mixed).
    ``subgradient``
        ``J(w + h d) >= J(w) - h d'q / 2`` for random directions ``d``
        (``-q/2`` is a subgradient), and where ``J`` is smooth (forward and
        backward differences agree) the central difference matches
        ``-d'q / 2``.
    ``tolerance``
        A solve at ``tol`` and one at ``tol / 100`` differ by no more than
        the looser one's stated error, and the looser value is not above the
        tighter one beyond the tighter one's error (a dual solve approaches
        ``J`` from below).
    ``warm_start``
        Warm-started from its own optimum, a solve takes few iterations
        (``n_solver_iter`` at most a tenth of the cold solve's, plus 5) when
        the oracle reports iterations.
    ``decision``
        On a separable toy, ``sign(K(w) (alpha * y) + bias)`` agrees with
        ``y`` (needs ``separable``).
    ``reference``
        Where the oracle offers ``reference_value(w)`` (an independent
        solve, e.g. cvxpy on its dual), the value agrees with it to the
        stated error.
    """
    for _, check in oracle_checks(oracle_factory, n_points=n_points, seed=seed,
                                  thorough=thorough, separable=separable):
        check()


def oracle_checks(oracle_factory, n_points=None, seed=0, *, thorough=False, separable=None):
    """The checks of :func:`check_oracle` as ``(name, callable)`` pairs, without running them."""
    n = n_points if n_points is not None else (8 if thorough else 4)
    cfg = dict(n_points=n, seed=seed, thorough=thorough, separable=separable)
    fns = {"answers": _check_answers, "minorant": _check_minorant,
           "subgradient": _check_subgradient, "tolerance": _check_tolerance,
           "warm_start": _check_warm_start, "decision": _check_decision,
           "reference": _check_reference}
    return [(name, functools.partial(fns[name], oracle_factory, cfg)) for name in ORACLE_CHECKS]


# ---------------------------------------------------------------- helpers
def _close(a, b, rtol=1e-6):
    return abs(a - b) <= rtol * max(1.0, abs(a), abs(b))


def _points(m, n_points, seed, interior=False):
    rng = np.random.default_rng(seed)
    points = [np.full(m, 1.0 / m)]
    while len(points) < n_points:
        w = rng.dirichlet(np.ones(m))
        if interior:
            w = 0.5 * w + 0.5 / m  # every weight >= 1/(2m): J is defined around it
        else:
            w[rng.random(m) < 0.3] = 0.0  # exact zeros: kernels switched off
            if w.sum() == 0:
                w[0] = 1.0
        points.append(w / w.sum())
    return points


def _tight(oracle, tol=TIGHT_TOL):
    """``oracle`` with its inner tolerance at ``tol`` (when it has one); the tol used or None."""
    t = getattr(oracle, "tol", None)
    if isinstance(t, (int, float)) and not isinstance(t, bool) and t > 0:
        oracle.tol = min(float(t), tol)
        return oracle.tol
    return None


def _err(tol, value):
    """The stated inner error of a value computed at ``tol`` (plus rounding)."""
    scale = max(1.0, abs(value))
    return (4.0 * tol if tol is not None else 0.0) * scale + 1e-9 * scale


def _name(oracle):
    return type(oracle).__name__


def _where(oracle, check, w):
    return f"{_name(oracle)} {check} at w={np.round(w, 4).tolist()}"


# ---------------------------------------------------------------- the checks
def _check_answers(factory, cfg):
    m = factory().n_kernels
    for w in _points(m, cfg["n_points"], cfg["seed"]):
        oracle = factory()
        ans = oracle(w)
        where = _where(oracle, "answers", w)
        value = float(ans.value)
        if not np.isfinite(value):
            raise AssertionError(f"{where}: value is finite: got {value}")
        q = np.asarray(ans.q, dtype=float)
        if q.shape != (m,) or not np.all(np.isfinite(q)) or np.any(
                q < -1e-10 * max(1.0, np.abs(q).max())):
            raise AssertionError(f"{where}: q >= 0 with one entry per kernel: got {q}")
        grad = np.asarray(ans.grad, dtype=float)
        if not np.allclose(grad, -0.5 * q, rtol=1e-9, atol=1e-12):
            raise AssertionError(f"{where}: grad == -q/2: got grad={grad}, q={q}")
        lin = float(ans.linear_term)
        if not _close(value, lin - 0.5 * float(w @ q)):
            raise AssertionError(
                f"{where}: value == linear_term - w'q/2: got {value} vs {lin - 0.5 * float(w @ q)}"
            )
        alpha = np.asarray(ans.alpha, dtype=float)
        if not np.all(np.isfinite(alpha)):
            raise AssertionError(f"{where}: alpha is finite: got {alpha}")
        violation = getattr(oracle, "dual_violation", None)
        if callable(violation):
            v = float(violation(alpha))
            if not v <= 1e-6 * max(1.0, float(np.abs(alpha).max(initial=0.0))):
                raise AssertionError(
                    f"{where}: alpha is feasible for the dual's constraints: violated by {v:.3g}"
                )
        warm = factory()(w, warm_start=ans.alpha)
        if not _close(float(warm.value), value, rtol=max(1e-5, 4 * getattr(oracle, "tol", 0))):
            raise AssertionError(
                f"{where}: a warm start reaches the cold start's value: got {warm.value} vs {value}"
            )
    bad = np.full(m + 1, 1.0 / (m + 1))
    try:
        factory()(bad)
    except (ValueError, TypeError):
        pass
    else:
        raise AssertionError(
            f"{_name(factory())} answers: a w of length {m + 1} (n_kernels={m}) raises "
            "ValueError or TypeError"
        )


def _answers(factory, cfg):
    """``(w, answer)`` at the points, cold and warm-started from the previous point, tight."""
    oracle = factory()
    tol = _tight(oracle)
    out = []
    prev = None
    for w in _points(oracle.n_kernels, cfg["n_points"], cfg["seed"] + 1):
        out.append((w, oracle(w)))
        if prev is not None:
            out.append((w, oracle(w, warm_start=prev.alpha)))
        prev = out[-1][1]
    return oracle, tol, out


def _check_minorant(factory, cfg):
    oracle, tol, answers = _answers(factory, cfg)
    worst = None
    for i, (wi, ai) in enumerate(answers):
        for j, (_, aj) in enumerate(answers):
            cut = float(aj.linear_term) - 0.5 * float(wi @ np.asarray(aj.q, dtype=float))
            excess = cut - float(ai.value)
            allowed = _err(tol, float(ai.value))
            if excess > allowed and (worst is None or excess - allowed > worst[0]):
                worst = (excess - allowed, excess, i, j, wi, float(ai.value))
    if worst is not None:
        _, excess, i, j, wi, value = worst
        raise AssertionError(
            f"{_where(oracle, 'minorant', wi)}: every answer is a lower bound everywhere: "
            f"answer {j}'s cut linear_term_j - w'q_j/2 exceeds J(w)={value:.8g} (answer {i}) by "
            f"{excess:.3g}; the value or q belongs to another problem, or the inner solve stops "
            "short of its tolerance"
        )


def _check_subgradient(factory, cfg):
    oracle = factory()
    tol = _tight(oracle)
    m = oracle.n_kernels
    rng = np.random.default_rng(cfg["seed"] + 2)
    n_dirs = 6 if cfg["thorough"] else 3
    smooth_seen = 0
    for w in _points(m, max(2, cfg["n_points"] // 2), cfg["seed"] + 2, interior=True):
        ans = oracle(w)
        value = float(ans.value)
        q = np.asarray(ans.q, dtype=float)
        where = _where(oracle, "subgradient", w)
        for _ in range(n_dirs):
            d = rng.normal(size=m)
            d /= np.abs(d).max()
            h = 1e-3 * float(w.min())  # w +- h d stays >= 0
            up = float(oracle(w + h * d, warm_start=ans.alpha).value)
            down = float(oracle(w - h * d, warm_start=ans.alpha).value)
            slope = -0.5 * float(d @ q)
            err = _err(tol, value)
            for v, s in ((up, h), (down, -h)):
                if v < value + s * slope - err:
                    raise AssertionError(
                        f"{where}: -q/2 is a subgradient: J(w + {s:.2g} d) = {v:.10g} is below "
                        f"the linearisation {value + s * slope:.10g}"
                    )
            fwd, bwd = (up - value) / h, (value - down) / h
            noise = 2 * err / h
            if abs(fwd - bwd) <= 1e-3 * max(1.0, abs(slope)) + noise:  # smooth here
                smooth_seen += 1
                central = (up - down) / (2 * h)
                if abs(central - slope) > 1e-2 * max(1.0, abs(slope)) + noise:
                    raise AssertionError(
                        f"{where}: q matches finite differences of J where J is smooth: the "
                        f"slope along d is {central:.6g} by differences, -d'q/2 = {slope:.6g}"
                    )


def _check_tolerance(factory, cfg):
    oracle = factory()
    t0 = getattr(oracle, "tol", None)
    if not (isinstance(t0, (int, float)) and not isinstance(t0, bool) and t0 > 0):
        return  # an exact solver
    loose = max(min(float(t0), 1e-3), 1e-6)
    for w in _points(oracle.n_kernels, max(2, cfg["n_points"] // 2), cfg["seed"] + 3):
        a = factory()
        a.tol = loose
        va = float(a(w).value)
        b = factory()
        b.tol = loose / 100
        vb = float(b(w).value)
        where = _where(a, "tolerance", w)
        if abs(va - vb) > _err(loose, vb):
            raise AssertionError(
                f"{where}: tightening tol changes the value by no more than the stated inner "
                f"error: J={va:.10g} at tol={loose:g}, {vb:.10g} at tol={loose / 100:g}"
            )
        if va > vb + _err(loose / 100, vb):
            raise AssertionError(
                f"{where}: tightening tol never makes the value worse: J={va:.10g} at "
                f"tol={loose:g} is above {vb:.10g} at tol={loose / 100:g} (a dual solve "
                "approaches J from below)"
            )


def _check_warm_start(factory, cfg):
    oracle = factory()
    _tight(oracle)
    for w in _points(oracle.n_kernels, max(2, cfg["n_points"] // 2), cfg["seed"] + 4):
        cold = oracle(w)
        n_cold = int(getattr(cold, "n_solver_iter", 0) or 0)
        warm = oracle(w, warm_start=cold.alpha)
        n_warm = int(getattr(warm, "n_solver_iter", 0) or 0)
        where = _where(oracle, "warm_start", w)
        if not _close(float(warm.value), float(cold.value), rtol=1e-6):
            raise AssertionError(
                f"{where}: a warm start from the optimum reaches it: {warm.value} vs {cold.value}"
            )
        if n_cold >= 20 and n_warm > 0.1 * n_cold + 5:
            raise AssertionError(
                f"{where}: a warm start from the optimum re-solves in few iterations: "
                f"{n_warm} iterations, against {n_cold} from a cold start"
            )


def separable_toy(n_samples=24, seed=0):
    """``(K, y)``: a linearly separable toy whose decision needs its offset.

    One feature ``x``; class -1 in ``[1, 2]`` and class +1 in ``[3, 4]``.
    The three kernels are ``phi(x) phi(z)`` for ``phi(x) = u, u^2, sqrt(u)``
    with ``u = x / 4``: every one is positive and increasing, so a decision
    ``sum_i alpha_i y_i K(x_i, x)`` is one signed multiple of an increasing
    function, and only its offset puts the threshold between the classes. A
    decision without its bias, or with its sign flipped, misclassifies.
    """
    rng = np.random.default_rng(seed)
    half = n_samples // 2
    x = np.r_[rng.uniform(1.0, 2.0, half), rng.uniform(3.0, 4.0, n_samples - half)]
    y = np.r_[-np.ones(half), np.ones(n_samples - half)]
    u = x / 4.0
    K = np.stack([np.outer(f, f) for f in (u, u * u, np.sqrt(u))])
    return K, y


def _check_decision(factory, cfg):
    make = cfg["separable"]
    if make is None:
        return
    seeds = range(3) if cfg["thorough"] else range(1)
    for s in seeds:
        K, y = separable_toy(seed=s)
        oracle = make(K, y)
        _tight(oracle)
        for w in _points(K.shape[0], 3, s):
            ans = oracle(w)
            alpha = np.asarray(ans.alpha, dtype=float)
            f = np.tensordot(w, K, axes=1) @ (alpha * y) + float(ans.bias)
            wrong = int(np.sum(np.sign(f) != y))
            if wrong:
                raise AssertionError(
                    f"{_where(oracle, 'decision', w)}: the decision function's sign agrees with "
                    f"the labels on a separable toy: sum_i alpha_i y_i K(x_i, x) + bias has the "
                    f"wrong sign on {wrong} of {y.size} training points "
                    f"(bias {float(ans.bias):.4g})"
                )


def _check_reference(factory, cfg):
    oracle = factory()
    ref = getattr(oracle, "reference_value", None)
    if not callable(ref):
        return
    tol = _tight(oracle)
    for w in _points(oracle.n_kernels, 2, cfg["seed"] + 5):
        value = float(oracle(w).value)
        exact = float(ref(w))
        # the reference is a conic solve, good to about 1e-6
        if not math.isfinite(exact) or abs(value - exact) > _err(tol, exact) + 1e-6 * max(
                1.0, abs(exact)):
            raise AssertionError(
                f"{_where(oracle, 'reference', w)}: the value agrees with the oracle's reference "
                f"solve: {value:.10g} vs {exact:.10g}"
            )
