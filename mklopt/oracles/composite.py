"""A sum of dual oracles sharing one kernel-weight vector.

Shared-weight multiclass MKL learns one weight vector ``w`` for all its
binary problems ``p`` (the one-vs-one pairs): it minimises

    J(w) = sum_p J_p(w),   J_p(w) = max_{a_p in Q_p} l_p(a_p) - 1/2 w'q_p(a_p),

over the feasible set of the formulation. The inner maximisations are
independent (each ``a_p`` has its own constraints ``Q_p``), so one call
solves every binary problem at ``w`` and adds the answers up:
``q = sum_p q_p`` and ``l = sum_p l_p``. The sum of the parts' values is
``J(w) = l - w'q/2``, ``-q/2`` is a subgradient of ``J`` at ``w``, and the
duality gap of any formulation reads only ``(value, q, linear_term)``, so
every outer method, the driver and the gap certificate work on the sum
unchanged.

Why the gap stays a certificate: for the simplex (L1-MKL) the joint dual is
``max_a sum_p l_p(a_p) - 1/2 max_k sum_p q_pk(a_p)`` (the min over ``w``
and the max over the independent ``a_p`` swap, the objective being linear
in ``w`` and concave in ``a``), and ``D(a) = l - h(q)/2`` evaluated at the
summed answer is exactly that dual objective at a feasible ``a``, hence a
lower bound of the optimum of ``sum_p J_p``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._types import OracleAnswer
from .._validation import check_real, check_vector, check_weights

__all__ = ["CompositeOracle", "CompositeAnswer"]


@dataclass(frozen=True, slots=True, eq=False)
class CompositeAnswer(OracleAnswer):
    """A :class:`~mklopt.OracleAnswer` of a :class:`CompositeOracle`, with its parts.

    The summed fields (``value``, ``q``, ``grad``, ``linear_term``,
    ``n_solver_iter``) follow the common contract; the fields of the dual
    variables are laid out part after part:

    - ``alpha``: the parts' ``alpha`` concatenated (part ``p`` occupies
      ``oracle.offsets[p]:oracle.offsets[p + 1]``), which is what a warm
      start of the composite oracle takes;
    - ``support``: indices into that concatenation;
    - ``bias``: NaN, since there is no single decision function; the
      per-part offsets are ``biases``;
    - ``converged``: whether every part met its tolerance.

    Attributes
    ----------
    biases : ndarray of shape (n_parts,)
        ``parts[p].bias``.
    parts : tuple of OracleAnswer
        The binary answers themselves.
    """

    biases: np.ndarray = None
    parts: tuple = ()


class CompositeOracle:
    r"""The sum of several dual oracles with the same kernels: one ``w`` for all.

    For kernel weights ``w`` it calls every part oracle at ``w`` and returns

    .. math:: J(w) = \sum_p J_p(w), \qquad q = \sum_p q_p, \qquad
              \ell = \sum_p \ell_p,

    with the subgradient ``-q/2``, so that any outer method minimising
    ``J`` over its feasible set (simplex, Lp ball, groups) learns one kernel
    combination for all the problems, and its duality gap ``J(w) - D`` with
    ``D = ell - h(q)/2`` certifies the joint problem. This is the
    shared-weight multiclass formulation of
    :class:`mklopt.MKLClassifier` with ``multiclass="shared"``, whose parts
    are the one-vs-one :class:`SVMDual` oracles, each reading its block of
    one kernel bank on all training points.

    Parameters
    ----------
    oracles : sequence of oracles
        At least one; every part must have the same ``n_kernels``, an
        ``n_samples`` (the length of its answers' ``alpha``), and answer
        ``oracle(w, warm_start=alpha, need_q=..., kernels=...)`` as
        :class:`SVMDual` does (the last two only if the part says it
        supports them, see ``supports_value_only`` and
        ``supports_kernel_subsets``).

    Attributes
    ----------
    parts : tuple of oracles
        As given.
    n_kernels : int
        The common number of kernels.
    n_parts : int
        Number of parts.
    offsets : ndarray of shape (n_parts + 1,)
        Where each part's ``alpha`` sits in the concatenated ``alpha`` of an
        answer (part ``p`` has ``parts[p].n_samples`` entries).
    n_samples : int
        Length of the concatenated ``alpha``: the sum of the parts' sizes.
    n_calls : int
        Calls of the composite oracle (each calls every part once).
    tol : float
        The parts' solver tolerance. Reading gives the first part's value;
        setting it sets every part's (the driver tightens the inner
        tolerance as the gap closes, see :func:`mklopt.solve`).
    n_unconverged : int
        Part calls, summed over the parts, whose solve ended above its
        tolerance.

    Notes
    -----
    *Warm starts.* A warm start is a concatenated ``alpha`` (an earlier
    answer's): each part is warm-started from its own slice of it, so a
    part starts where its own previous solve ended, as in a binary fit.

    *Exact steps.* :class:`mklopt.methods.ActiveSet` (and a chain ending in
    it) solves one restricted dual problem over the oracle's
    :class:`DualProblem`, which has a single equality constraint; the sum
    has one per part, so it has no ``problem`` and ActiveSet refuses it
    with a ``TypeError``. Every other method runs on it.

    *Cost.* A call costs the sum of the parts' solves, which run one after
    the other.

    Examples
    --------
    >>> import numpy as np
    >>> from mklopt.oracles import CompositeOracle, SVMDual
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((12, 2))
    >>> K = np.stack([X @ X.T, np.exp(-((X[:, None] - X[None]) ** 2).sum(-1))])
    >>> a = SVMDual(K[:, :6, :6], [-1, 1, -1, 1, -1, 1], C=1.0)
    >>> b = SVMDual(K[:, 6:, 6:], [1, 1, -1, -1, 1, -1], C=1.0)
    >>> both = CompositeOracle([a, b])
    >>> w = np.array([0.5, 0.5])
    >>> ans = both(w)
    >>> bool(np.isclose(ans.value, a(w).value + b(w).value))
    True
    >>> ans.alpha.shape, ans.biases.shape
    ((12,), (2,))
    """

    def __init__(self, oracles):
        parts = tuple(oracles)
        if not parts:
            raise ValueError("CompositeOracle needs at least one oracle")
        for p, o in enumerate(parts):
            if not callable(o):
                raise TypeError(f"oracles[{p}] is not callable (got {type(o).__name__})")
        m = {int(o.n_kernels) for o in parts}
        if len(m) != 1:
            raise ValueError(
                f"all oracles must have the same number of kernels; got {sorted(m)}"
            )
        self.parts = parts
        self.n_parts = len(parts)
        self.n_kernels = m.pop()
        # Every dual oracle's answer has one alpha entry per sample (SVR's beta
        # too, although its solver works on 2n variables).
        sizes = [int(o.n_samples) for o in parts]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.n_samples = int(self.offsets[-1])
        self.n_calls = 0
        self.supports_value_only = all(
            getattr(o, "supports_value_only", False) for o in parts
        )
        self.supports_kernel_subsets = all(
            getattr(o, "supports_kernel_subsets", False) for o in parts
        )
        self.last_stats = None

    # ---- tolerance: one value for all parts -------------------------------------
    @property
    def tol(self):
        return getattr(self.parts[0], "tol", None)

    @tol.setter
    def tol(self, value):
        value = check_real(value, "tol", low=0.0, strict_low=True)
        for o in self.parts:
            o.tol = value

    @property
    def n_unconverged(self):
        return sum(int(getattr(o, "n_unconverged", 0)) for o in self.parts)

    def adopt_rows(self, other):
        """Each part takes over the kernel rows of ``other``'s part in its place.

        ``other`` a composite of the same parts' problems at another ``C``
        (see :meth:`mklopt.oracles.SVMDual.adopt_rows`); parts without the
        method keep their own. Returns whether every part took its rows.
        """
        parts = getattr(other, "parts", None)
        if parts is None or len(parts) != len(self.parts):
            return False
        took = [hasattr(mine, "adopt_rows") and bool(mine.adopt_rows(theirs))
                for mine, theirs in zip(self.parts, parts, strict=True)]
        return all(took)

    def split(self, alpha):
        """The parts' ``alpha`` vectors from a concatenated one (views, not copies).

        Parameters
        ----------
        alpha : array-like of shape (n_samples,)

        Returns
        -------
        list of ndarray
            ``alpha[offsets[p]:offsets[p + 1]]`` for every part ``p``.
        """
        a = check_vector(alpha, "alpha", size=self.n_samples)
        return [a[self.offsets[p]:self.offsets[p + 1]] for p in range(self.n_parts)]

    def __call__(self, w, warm_start=None, need_q=True, kernels=None):
        """Solve every part at ``w`` and add the answers.

        Parameters
        ----------
        w : array-like of shape (n_kernels,)
            Non-negative finite kernel weights, not all zero.
        warm_start : array-like of shape (n_samples,), optional
            A concatenated ``alpha`` (an earlier answer's); part ``p`` starts
            from its slice.
        need_q : bool, default=True
            When False only ``J(w)`` is wanted: ``q`` and ``grad`` are None.
        kernels : array-like of int, optional
            Compute ``q`` only for these kernels (see :class:`SVMDual`).

        Returns
        -------
        CompositeAnswer
        """
        w = check_weights(w, self.n_kernels, name="w", copy=True)
        starts = [None] * self.n_parts if warm_start is None else self.split(warm_start)
        kwargs = {}
        if not need_q:
            kwargs["need_q"] = False
        if kernels is not None:
            kwargs["kernels"] = kernels
        answers = tuple(
            o(w, warm_start=s, **kwargs) for o, s in zip(self.parts, starts, strict=True)
        )
        self.n_calls += 1
        alpha = np.concatenate([np.asarray(a.alpha, dtype=np.float64) for a in answers])
        if alpha.size != self.n_samples:
            raise ValueError(
                f"the parts' alpha vectors have {alpha.size} entries in all, not the "
                f"{self.n_samples} the oracle was built for"
            )
        support = np.concatenate(
            [np.asarray(a.support, dtype=np.int64) + self.offsets[p]
             for p, a in enumerate(answers)]
        )
        value = float(sum(float(a.value) for a in answers))
        q = grad = None
        if need_q:
            q = np.sum([np.asarray(a.q, dtype=np.float64) for a in answers], axis=0)
            grad = -0.5 * q
        return CompositeAnswer(
            w=w,
            value=value,
            grad=grad,
            q=q,
            alpha=alpha,
            bias=float("nan"),
            support=support,
            n_solver_iter=int(sum(int(a.n_solver_iter) for a in answers)),
            linear_term=float(sum(float(a.linear_term) for a in answers)),
            converged=all(bool(getattr(a, "converged", True)) for a in answers),
            biases=np.array([float(a.bias) for a in answers]),
            parts=answers,
        )
