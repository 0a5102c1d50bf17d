"""``check_method``: an outer method's invariants, progress and hand-overs on toy problems."""

import functools
import math
import warnings
from dataclasses import dataclass

import numpy as np

from ..domains import retract_onto
from . import _problems

__all__ = ["check_method", "method_checks", "DEFAULT_CONFORMANCE", "PROFILES"]

#: What a method is held to unless it declares otherwise (its ``conformance``
#: attribute, merged over these): on each kind of toy, ``(factor, calls)``
#: means ``J(best) - J*`` falls to ``factor`` times its value at the first
#: query within ``calls`` oracle calls; ``None`` promises no rate there (the
#: method must still move and improve its best point). ``"resumes"``: the
#: method continues from a hand-over's weights (False: it restarts from its
#: own start and keeps only the best point). ``"reason"`` says why a method
#: deviates; the kit prints it.
DEFAULT_CONFORMANCE = {"smooth": (1e-2, 200), "piecewise": (1e-1, 200), "resumes": True,
                       "reason": ""}


@dataclass(frozen=True)
class Profile:
    """How much of the kit runs: problems, budgets and seeds."""

    n_per_band: int  # drawn problems of each kind per band of kernel counts
    max_calls: int  # oracle calls of an invariants run
    progress: tuple  # (n_kernels, seed) of the rate toys (each kind)
    handover: tuple  # (n_kernels, seed) of the hand-over toys (each kind)
    seeds: tuple  # seeds of the drawn problems
    toys: tuple  # (n_kernels, seed) of the oracles' own random toys in the invariants runs


PROFILES = {
    "default": Profile(n_per_band=1, max_calls=200, progress=((8, 0), (30, 1)),
                       handover=((8, 0),), seeds=(0,), toys=((6, 0), (6, 1), (6, 2), (12, 2))),
    "thorough": Profile(n_per_band=3, max_calls=400,
                        progress=((6, 0), (8, 1), (12, 2), (25, 3), (50, 4)),
                        handover=((6, 0), (12, 1), (30, 2)), seeds=(0, 1),
                        toys=(*((6, s) for s in range(6)), *((12, s) for s in range(4)),
                              *((30, s) for s in range(6)))),
}

#: Relative gap the invariants runs aim at (a method rarely reaches it on a
#: piecewise toy, so most runs use their whole budget).
TOL = 1e-6
CHECKS = ("invariants", "reset", "progress", "handover", "chain")


def check_method(method_or_class, *, thorough=False, seeds=None, max_calls=None):
    """Check an outer method's contract, progress and hand-overs on toy problems.

    Raises ``AssertionError`` naming the violated property (its message
    starts with the method, the check and the problem).

    Parameters
    ----------
    method_or_class : MethodBase or type
        An instance (its parameters are kept) or a class built with defaults.
    thorough : bool, default=False
        Run the long profile: more drawn problems, more seeds, larger
        budgets and rate toys up to 50 kernels (under a minute per method,
        against a few seconds).
    seeds : sequence of int, optional
        Seeds of the drawn problems (default: the profile's, ``(0,)`` or
        ``(0, 1)``). The draws are reproducible: the same seed gives the
        same problems on every machine with the same hypothesis, whatever
        else the process has imported.
    max_calls : int, optional
        Oracle calls per invariants run (default: the profile's, 200 or 400).

    Notes
    -----
    The checks, each also a pytest case of :func:`parametrize_with_checks`:

    ``invariants``
        On toys drawn by hypothesis (piecewise-linear and smooth, 2 to 50
        kernels, exact zeros and ties in ``q``, duplicated pieces and
        kernels): every query finite and in the method's domain; one history
        row per oracle call; the best value never increases and the gap is
        never negative; ``lower <= J* <= upper`` at every call and
        ``value - J* <= gap`` at the end (``J*`` known for the method's
        formulation); the reported weights reproduce the reported value; no
        claim of convergence with the gap target unmet; hyper-parameters
        (``get_params``) unchanged. The same holds on the toy oracles' own
        ``random`` draws (dense, no ties: 6 and 12 kernels, up to 30 in the
        thorough profile), where a step rule can collapse at a kink far from
        the optimum and claim convergence there.
    ``reset``
        Two runs after ``start`` give the same result.
    ``progress``
        On a smooth and a piecewise-linear toy, ``J(best) - J*`` falls to
        ``factor`` times its value at the first query within ``calls``
        calls (``DEFAULT_CONFORMANCE``). A method that never moves, or that
        moves without ever improving its best point, fails saying so.
    ``handover``
        After ``initial=w0`` (weights off the set, retracted onto it) the
        first query is the retracted ``w0``; the next query is not the
        method's own fresh start (it resumes from the hand-over); the
        queries and bounds stay valid; a run resumed from a ``Result``
        never reports a worse best value than the hand-over's; resuming a
        converged ``Result`` costs no oracle call.
    ``chain``
        In ``Chain(method, method)`` the second stage starts from the first
        stage's weights (its first query is not its fresh start), and the
        chain's rows keep the invariants.

    The checks that need a hand-over (``start(oracle, handover=...)``) pass
    trivially for a method without one.

    **Declaring a deviation.** A method that cannot meet the defaults
    declares what it does meet, as scikit-learn's estimator tags do, in a
    ``conformance`` attribute (a dict, or a property for parameter-dependent
    values) merged over :data:`DEFAULT_CONFORMANCE`::

        class MyMethod(MethodBase):
            conformance = {"piecewise": None, "smooth": (1e-2, 400),
                           "reason": "a smooth method: no rate on kinks"}

    ``J*`` is certified to about 1e-15 for L1-MKL (the simplex; see
    :meth:`SmoothQuadraticOracle.certified_l1_optimum`). For other feasible
    sets the smooth toy's optimum comes from a conic solve (cvxpy, a test
    extra) and is trusted to 1e-6 relative; the piecewise toy then checks
    everything but the bounds and the rate.
    """
    for _, check in method_checks(method_or_class, thorough=thorough, seeds=seeds,
                                  max_calls=max_calls):
        check()


def method_checks(method_or_class, *, thorough=False, seeds=None, max_calls=None):
    """The checks of :func:`check_method` as ``(name, callable)`` pairs, without running them.

    Parameters
    ----------
    method_or_class, thorough, seeds, max_calls
        As for :func:`check_method`.

    Returns
    -------
    list of (str, callable)
        ``name`` is one of ``"invariants"``, ``"reset"``, ``"progress"``,
        ``"handover"``, ``"chain"``; each callable takes no argument and
        raises ``AssertionError`` naming the violated property.
    """
    profile = PROFILES["thorough" if thorough else "default"]
    if seeds is not None:
        profile = _replace(profile, seeds=tuple(int(s) for s in seeds))
    if max_calls is not None:
        profile = _replace(profile, max_calls=int(max_calls))
    fns = {"invariants": _check_invariants, "reset": _check_reset,
           "progress": _check_progress, "handover": _check_handover, "chain": _check_chain}
    return [(name, functools.partial(fns[name], method_or_class, profile)) for name in CHECKS]


def _replace(profile, **kw):
    import dataclasses

    return dataclasses.replace(profile, **kw)


# ---------------------------------------------------------------- helpers
def _method(method_or_class):
    return method_or_class() if isinstance(method_or_class, type) else method_or_class


def conformance_of(method):
    """The method's declared conformance merged over :data:`DEFAULT_CONFORMANCE`."""
    declared = getattr(method, "conformance", None) or {}
    unknown = sorted(set(declared) - set(DEFAULT_CONFORMANCE))
    if unknown:
        raise AssertionError(
            f"{type(method).__name__}.conformance has unknown keys {unknown}; the kit reads "
            f"{sorted(DEFAULT_CONFORMANCE)}"
        )
    return {**DEFAULT_CONFORMANCE, **declared}


def _name(method):
    return type(method).__name__


def _run(method, oracle, stop, where, **kw):
    """``solve`` with the history collected; an invalid query fails the check by name."""
    from ..driver import solve
    from ..stopping import InvalidQueryError

    rows = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            res = solve(oracle, method, stop=stop, callback=rows.append, **kw)
        except InvalidQueryError as exc:
            raise AssertionError(f"{where}: queries are finite and in the domain: {exc}") from None
    if res.reason == "invalid_query":
        said = [str(w.message) for w in caught if "asked for the query" in str(w.message)]
        raise AssertionError(
            f"{where}: queries are finite and in the domain: {said[0] if said else res.reason}"
        )
    return res, rows


def _stop(tol, calls):
    from ..stopping import DualityGap, MaxOracleCalls

    return DualityGap(tol) | MaxOracleCalls(calls)


def _params(method):
    get = getattr(method, "get_params", None)
    return dict(get()) if callable(get) else None


def _same(a, b):
    try:
        return bool(np.all(a == b))
    except Exception:  # objects that cannot be compared
        return False


def _close(a, b, rtol=1e-6):
    return abs(a - b) <= rtol * max(1.0, abs(a), abs(b))


def _takes_handover(method):
    from ..driver import _takes_handover as takes

    return bool(getattr(method, "query_is_array", True) and takes(method))


def _check_row(row, dom, exact, slack, where):
    """A history row's query is feasible and its bounds hold around ``J*`` (when known)."""
    if dom is not None and not dom.contains(row.weights, tol=1e-7):
        raise AssertionError(f"{where}: queries are feasible: {row.weights} is not in {dom!r}")
    if exact is not None and not (row.lower <= exact + slack and exact <= row.upper + slack):
        raise AssertionError(
            f"{where}: bounds are valid (lower <= J* <= upper): "
            f"lower={row.lower}, J*={exact}, upper={row.upper}"
        )


def _check_rows(rows, dom, exact, slack, where):
    prev = math.inf
    for i, row in enumerate(rows):
        if row.upper > prev + slack:
            raise AssertionError(
                f"{where}: the best value never increases: {prev} then {row.upper} at call {i + 1}"
            )
        prev = row.upper
        if row.gap < 0:
            raise AssertionError(f"{where}: the gap is never negative: {row.gap} at call {i + 1}")
        _check_row(row, dom, exact, slack, where)


def _check_final_gap(res, exact, slack, where):
    if exact is not None and not res.value - exact <= res.gap + slack:
        raise AssertionError(
            f"{where}: value - J* <= gap: value={res.value}, J*={exact}, gap={res.gap}"
        )


def _ref(problem, dom, res):
    ref = _problems.reference(problem, dom)
    return ref if ref is not None else (None, 1e-9 * max(1.0, abs(res.value)))


# ---------------------------------------------------------------- the checks
def _check_invariants(method_or_class, profile):
    method = _method(method_or_class)
    before = _params(method)
    problems = [(p, profile.max_calls)
                for seed in profile.seeds for p in _problems.drawn(profile.n_per_band, seed)]
    # the random toys run twice as long: a step rule that collapses at a
    # kink does so late in a run
    problems += [(_problems.fixed(kind, n, seed), 2 * profile.max_calls)
                 for n, seed in profile.toys for kind in ("piecewise", "smooth")]
    for problem, calls in problems:
        where = f"{_name(method)} invariants on {problem}"
        oracle = problem.make()
        res, rows = _run(method, oracle, _stop(TOL, calls), where)
        dom = method.domain
        after = _params(method)
        if before is not None and (after is None or before.keys() != after.keys() or any(
                not (before[k] is after[k] or _same(before[k], after[k])) for k in before)):
            raise AssertionError(
                f"{where}: a run leaves the hyper-parameters unchanged: {before} became {after}"
            )
        if not len(rows) == len(res.history) == res.n_oracle_calls == oracle.n_calls:
            raise AssertionError(
                f"{where}: one history row per oracle call: {len(res.history)} rows, "
                f"{len(rows)} callbacks, {res.n_oracle_calls} counted, {oracle.n_calls} made"
            )
        exact, slack = _ref(problem, dom, res)
        _check_rows(rows, dom, exact, slack, where)
        _check_final_gap(res, exact, slack, where)
        if not np.all(np.isfinite(res.weights)):
            raise AssertionError(f"{where}: the reported weights are finite: {res.weights}")
        again = problem.make()(res.weights).value
        if not _close(float(again), float(res.value), rtol=1e-9):
            raise AssertionError(
                f"{where}: the reported weights reproduce the reported value: "
                f"J(weights)={again}, value={res.value}"
            )
        claim = method.report().stop
        # The driver demotes a false claim; the method itself must not make one.
        if (res.converged or (claim is not None and claim.converged)) and not res.rel_gap <= TOL:
            raise AssertionError(
                f"{where}: converged implies the gap target is met: rel_gap={res.rel_gap} > {TOL}"
            )


def _check_reset(method_or_class, profile):
    method = _method(method_or_class)
    for n, seed in profile.handover:
        for kind in ("smooth", "piecewise"):
            problem = _problems.fixed(kind, n, seed)
            where = f"{_name(method)} reset on {problem}"
            first, _ = _run(method, problem.make(), _stop(TOL, 100), where)
            second, _ = _run(method, problem.make(), _stop(TOL, 100), where)
            if second.n_oracle_calls != first.n_oracle_calls:
                raise AssertionError(
                    f"{where}: start resets everything: the first run made "
                    f"{first.n_oracle_calls} calls, the second {second.n_oracle_calls}"
                )
            if not np.allclose(second.weights, first.weights, rtol=1e-9, atol=1e-12):
                diff = float(np.max(np.abs(second.weights - first.weights)))
                raise AssertionError(
                    f"{where}: start resets everything: two runs of {first.n_oracle_calls} calls "
                    f"ended at weights {diff:.3g} apart ({first.weights} then {second.weights})"
                )


def _check_progress(method_or_class, profile):
    method = _method(method_or_class)
    tags = conformance_of(method)
    for n, seed in profile.progress:
        for kind in ("smooth", "piecewise"):
            problem = _problems.fixed(kind, n, seed)
            target = tags[kind]
            calls = target[1] if target is not None else DEFAULT_CONFORMANCE[kind][1]
            where = f"{_name(method)} progress on {problem}"
            res, rows = _run(method, problem.make(), _stop(1e-10, calls), where)
            ref = _problems.reference(problem, method.domain)
            if ref is None or not rows:
                continue  # no optimum known for this set on this toy
            exact, slack = ref
            scale = max(1.0, abs(exact))
            e0 = rows[0].value - exact
            if e0 <= max(slack, 1e-9 * scale):
                continue  # the start is optimal: nothing to reduce
            if len(rows) > 1 and all(np.array_equal(r.weights, rows[0].weights) for r in rows):
                raise AssertionError(
                    f"{where}: the method moves: its {len(rows)} queries are all its start "
                    f"{rows[0].weights}; it never left it"
                )
            best = min(r.upper for r in rows)
            if len(rows) > 1 and best >= rows[0].value - 1e-12 * scale:
                raise AssertionError(
                    f"{where}: the best point improves: none of {len(rows) - 1} queries after the "
                    f"first beat it (J={rows[0].value:.6g}, J*={exact:.6g}); every step went "
                    "uphill or nowhere"
                )
            if target is None:
                continue
            factor, _ = target
            declared = target != DEFAULT_CONFORMANCE[kind] and tags["reason"]
            why = f" (declared: {tags['reason']})" if declared else ""
            e = res.value - exact
            if not e <= factor * e0 + slack:
                raise AssertionError(
                    f"{where}: progress: J(best) - J* fell from {e0:.3g} to {e:.3g} ({e / e0:.2g} "
                    f"of it) in {len(rows)} calls; expected {factor:g} of it within {calls} calls"
                    f"{why}. A slower method declares its rate: conformance = "
                    f"{{{kind!r}: (factor, calls)}} (or None: no rate on {kind} toys)"
                )


def _own_start(method, problem, where):
    """The method's first query in a fresh run (its own start)."""
    from ..stopping import MaxOracleCalls

    _, rows = _run(method, problem.make(), MaxOracleCalls(1), where)
    return np.array(rows[0].weights)


def _check_handover(method_or_class, profile):
    method = _method(method_or_class)
    if not _takes_handover(method):
        return
    tags = conformance_of(method)
    for n, seed in profile.handover:
        for kind in ("smooth", "piecewise"):
            problem = _problems.fixed(kind, n, seed)
            where = f"{_name(method)} handover on {problem}"
            own = _own_start(method, problem, where)
            dom = method.domain
            # part of a run: its result is the hand-over below
            part, _ = _run(method, problem.make(), _stop(TOL, 15), where)
            exact, slack = _ref(problem, dom, part)
            # 1. initial weights, off the set on purpose: retracted, then the first query
            x = 0.75 * (np.asarray(dom.initial(), dtype=np.float64) + np.asarray(part.weights))
            rng = np.random.default_rng(seed)
            x = x + 0.3 * rng.uniform(size=x.size) * np.abs(x).max()
            w0 = retract_onto(dom, x)
            here = f"{where}, started from initial=w0"
            started, rows = _run(method, problem.make(), _stop(TOL, 60), here, initial=x)
            if not np.allclose(rows[0].weights, w0, rtol=1e-9, atol=1e-12):
                raise AssertionError(
                    f"{here}: the first query is the given start: w0={w0}, "
                    f"queried {rows[0].weights}"
                )
            if (tags["resumes"] and len(rows) > 1 and np.max(np.abs(w0 - own)) > 1e-3
                    and np.allclose(rows[1].weights, own, rtol=0, atol=1e-12)):
                raise AssertionError(
                    f"{here}: a hand-over is used: after w0={w0} the next query is the method's "
                    f"own start {own}, as if it had started afresh"
                )
            _check_rows(rows, dom, exact, slack, here)
            _check_final_gap(started, exact, slack, here)
            # 2. resumed from a Result: never a worse best value than the hand-over's
            here = f"{where}, resumed from a Result of {part.n_oracle_calls} calls"
            resumed, rows = _run(method, problem.make(), _stop(TOL, 40), here, initial=part)
            worst = max([r.upper for r in rows] + [resumed.value])
            if worst > part.value + slack:
                raise AssertionError(
                    f"{here}: a resumed run never reports a worse best value than the "
                    f"hand-over's: handed over {part.value!r}, reported {worst!r}"
                )
            _check_rows(rows, dom, exact, slack, here)
            _check_final_gap(resumed, exact, slack, here)
        # 3. a converged Result costs no call (on the smooth toy, where every method certifies)
        problem = _problems.fixed("smooth", n, seed)
        where = f"{_name(method)} handover on {problem}"
        done, _ = _run(method, problem.make(), _stop(1e-3, 400), where)
        if done.converged:
            here = f"{where}, resumed from a converged Result"
            again, _ = _run(method, problem.make(), _stop(1e-3, 400), here, initial=done)
            if again.n_oracle_calls != 0 or not again.converged:
                raise AssertionError(
                    f"{here}: resuming a converged Result costs no oracle call: it made "
                    f"{again.n_oracle_calls} (reason {again.reason!r})"
                )


def _check_chain(method_or_class, profile):
    from ..methods import Chain
    from ..stopping import MaxOracleCalls

    method = _method(method_or_class)
    if not _takes_handover(method) or not hasattr(method, "get_params"):
        return
    tags = conformance_of(method)
    n, seed = profile.handover[0]
    for kind in ("smooth", "piecewise"):
        problem = _problems.fixed(kind, n, seed)
        where = f"{_name(method)} chain on {problem}"
        own = _own_start(method, problem, where)
        k = 8
        chain = Chain(method, method, switch=MaxOracleCalls(k))
        res, rows = _run(chain, problem.make(), _stop(TOL, 40), where)
        dom = chain.domain
        exact, slack = _ref(problem, dom, res)
        _check_rows(rows, dom, exact, slack, where)
        _check_final_gap(res, exact, slack, where)
        after = res.extra.get("switched_after")
        if after is None or after >= len(rows):
            continue  # the first stage finished the run
        if (tags["resumes"] and np.allclose(rows[after].weights, own, rtol=0, atol=1e-12)):
            raise AssertionError(
                f"{where}: a Chain stage after another starts from its weights: the second "
                f"stage's first query is its own start {own}, as if nothing had been handed over"
            )

