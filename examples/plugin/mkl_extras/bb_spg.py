"""A user's outer method: projected gradient with Barzilai-Borwein steps.

Written against mklopt's public API only (``MethodBase``, ``register``,
``mklopt.domains.Simplex``), in one file. It minimises ``J(w)`` over the
simplex with the spectral projected gradient of Birgin, Martinez and
Raydan (SPG2, as SPG-GMKL uses it): the direction ``P(w - lam g) - w`` with
the Barzilai-Borwein step ``lam = s's / s'y``, and a non-monotone Armijo
line search against the largest of the last ``memory`` values. Every
oracle answer carries ``q``, so the best point and its certified duality
gap come from ``MethodBase``; the method only moves the weights.

Importing this module registers it as ``"bb_spg"`` (the package declares
it under the ``mklopt.methods`` entry point, so ``mklopt fit --method
bb_spg`` finds it).
"""

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from mklopt.domains import Simplex
from mklopt.methods import MethodBase, register


@dataclass
class _State:
    domain: Simplex
    trial: np.ndarray  # the next query
    x: np.ndarray | None = None  # current iterate, its value and gradient
    f: float = np.inf
    g: np.ndarray | None = None
    d: np.ndarray | None = None  # search direction and trial step length
    t: float = 1.0
    lam: float = 1.0
    recent: deque = field(default_factory=deque)


@register("bb_spg", replace=True)
class BBSPG(MethodBase):
    """Spectral (Barzilai-Borwein) projected gradient on the simplex.

    Parameters
    ----------
    memory : int, default=10
        Values the non-monotone line search compares against (1: monotone).
    sufficient : float, default=1e-4
        Armijo's sufficient-decrease constant, in (0, 1).
    """

    # The conformance kit's rates (mklopt.testing.check_method): a smooth
    # method, so no rate is promised on a non-smooth J, as for mklopt's SPG.
    conformance = {"piecewise": None,
                   "reason": "spectral steps assume a smooth J; at kinks they stall"}

    def __init__(self, memory=10, sufficient=1e-4):
        self.memory = memory
        self.sufficient = sufficient

    def check_params(self, n_kernels=None):
        if isinstance(self.memory, bool) or not isinstance(self.memory, (int, np.integer)) \
                or self.memory < 1:
            raise ValueError(f"memory must be an integer >= 1, got {self.memory!r}")
        if not 0.0 < float(self.sufficient) < 1.0:
            raise ValueError(f"sufficient must be in (0, 1), got {self.sufficient!r}")

    def _start(self, oracle):
        domain = Simplex(oracle.n_kernels)
        state = _State(domain, trial=domain.initial(), recent=deque(maxlen=int(self.memory)))
        return domain, state

    def _resume(self, oracle, handover):
        # From a hand-over (a chain, solve(..., initial=...)): its answer is the
        # first accepted point, so the first step is taken from there.
        domain, s = self._start(oracle)
        if getattr(handover.answer, "grad", None) is not None:
            self._accept(s, np.asarray(handover.weights, dtype=float), handover.answer)
        return domain, s

    def _ask(self, s):
        return s.trial

    def _tell(self, s, query, answer):
        w = np.asarray(query, dtype=float)
        if s.x is None:  # the first point
            self._accept(s, w, answer)
            return True
        armijo = max(s.recent) + self.sufficient * s.t * float(s.g @ s.d)
        if answer.value <= armijo:
            step, change = w - s.x, answer.grad - s.g
            curv = float(step @ change)
            # Barzilai-Borwein step, kept finite (a flat direction: a long step)
            s.lam = float(np.clip(step @ step / curv, 1e-10, 1e10)) if curv > 0 else 1e10
            self._accept(s, w, answer)
            return True
        # backtrack by halving; the iteration is still under way
        s.t *= 0.5
        s.trial = s.x + s.t * s.d
        return False

    def _accept(self, s, w, answer):
        s.x, s.f, s.g = w, float(answer.value), np.asarray(answer.grad, dtype=float)
        s.recent.append(s.f)
        s.d = s.domain.project(s.x - s.lam * s.g) - s.x
        s.t = 1.0
        if np.max(np.abs(s.d)) <= 1e-15:
            # a fixed point of the projected step is optimal: the driver
            # checks this claim against the gap target
            self._finish("stationary", converged=True)
        s.trial = s.x + s.d

    def _extra(self, s):
        return {"step": s.lam}
