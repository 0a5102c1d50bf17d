"""Spy losses for the contract matrix: oracles registered by the tests, counting their calls.

For every task, a loss named ``"spy"``:
the task's built-in oracle as a subclass that logs the number of samples
of every call. A fit whose path builds its oracle from the registry calls
the spy; a path that picks an oracle class by the loss's name never does.
The classification task also gets ``"spy_plain"``: an oracle that wraps
:class:`~mklopt.oracles.SVMDual` by composition and offers only the oracle
protocol, so that no path can rely on the built-in oracle's internals for
it (the C path then warm-starts the weights alone).

:func:`register` adds them (the matrix's module fixture) and
:func:`unregister` removes them. Worker processes need no registration: a
fit resolves its loss once and carries the registry entry to its tasks.
"""

from mklopt.oracles import OneClassDual, SVMDual, SVRDual
from mklopt.tasks import ORACLES, register_oracle

#: The number of samples of every spy call in this process, in call order.
CALLS = []


class _Logs:
    def __call__(self, w, *args, **kwargs):
        CALLS.append(int(self.n_samples))
        return super().__call__(w, *args, **kwargs)


class SpyHinge(_Logs, SVMDual):
    """The hinge loss's oracle, logging its calls."""


class SpySVR(_Logs, SVRDual):
    """The epsilon-insensitive loss's oracle, logging its calls."""


class SpyOneClass(_Logs, OneClassDual):
    """The nu-one-class oracle, logging its calls."""


class PlainSpy:
    """An SVM dual behind the bare oracle protocol (no ``problem``, no class to extend).

    Parameters
    ----------
    bank, y, C, tol
        As :class:`~mklopt.oracles.SVMDual`.
    """

    supports_value_only = False

    def __init__(self, bank, y, C=1.0, tol=1e-3):
        self._inner = SVMDual(bank, y, C=C, tol=tol)
        self.n_kernels = self._inner.n_kernels
        self.n_samples = self._inner.n_samples

    @property
    def n_calls(self):
        return self._inner.n_calls

    @property
    def tol(self):
        return self._inner.tol

    @tol.setter
    def tol(self, value):
        self._inner.tol = value

    def __call__(self, w, warm_start=None):
        CALLS.append(int(self.n_samples))
        return self._inner(w, warm_start=warm_start)


SPIES = {
    ("classification", "spy"): (SpyHinge, ("C", "tol"), True),
    ("classification", "spy_plain"): (PlainSpy, ("C", "tol"), False),
    ("regression", "spy"): (SpySVR, ("C", "epsilon", "tol"), True),
    ("one-class", "spy"): (SpyOneClass, ("nu", "tol", "sample_weight"), True),
}


def register():
    """Register every spy loss (again, harmlessly)."""
    for (task, name), (cls, params, exact) in SPIES.items():
        register_oracle(name, task, cls, params, exact_step=exact, replace=True)


def unregister():
    """Remove the spy losses from the registry."""
    for key in SPIES:
        ORACLES.pop(key, None)

