"""The one set of numba options every jitted kernel uses.

``fastmath`` stays off: its no-NaN/no-inf assumptions would let the checks of
DESIGN section 7 be optimised away.
"""

JIT = dict(cache=True, nogil=True, fastmath=False)
