"""Spies on the package's entry points, for tests that check what a fit builds."""

from mklopt import KernelBank


def spy_from_specs(monkeypatch):
    """Record every ``KernelBank.from_specs`` call: a list of ``(X, kwargs)``, filled as they come."""
    calls = []
    real = KernelBank.from_specs.__func__

    def spying(cls, X, *args, **kwargs):
        calls.append((X, kwargs))
        return real(cls, X, *args, **kwargs)

    monkeypatch.setattr(KernelBank, "from_specs", classmethod(spying))
    return calls
