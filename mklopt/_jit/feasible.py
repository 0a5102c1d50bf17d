"""Moving a dual vector onto ``{0 <= a <= upper, s'a = total}`` when it is off by rounding only."""

import numpy as np
from numba import njit

from ._options import JIT

#: Codes of :func:`repair_box_equality`.
REPAIRED = 0
OUTSIDE_BOX = 1
OFF_EQUALITY = 2
NO_ROOM = 3


@njit(**JIT)
def repair_box_equality(a, upper, signs, total, rtol, info):
    """Repair ``a`` in place onto the box and the equality, within ``rtol`` of them.

    With ``scale = max(upper)``: every ``a_t`` must lie in
    ``[-rtol scale, upper_t + rtol scale]`` (else ``OUTSIDE_BOX``, with
    ``info = (min a, max a)``) and is clipped to ``[0, upper_t]``; the
    residual ``r = s'a - total`` must be at most ``rtol scale n`` (else
    ``OFF_EQUALITY``, ``info[0] = r``). A non-zero ``r`` is removed by
    moving the free variables (``0 < a_t < upper_t``) in proportion to
    their room in the direction ``-sign(r) s_t`` that lowers ``|r|``, or
    every variable when the free ones lack the room (``NO_ROOM`` when all
    of them do, ``info[0] = r``). Returns ``REPAIRED`` when ``a`` is
    feasible (to rounding).

    Arrays are C-contiguous float64 of one length (``info``: 2). The
    NumPy twin is ``tests/jit/test_feasible_jit.py``'s.
    """
    n = a.shape[0]
    scale = -np.inf
    lo = np.inf
    hi = -np.inf
    for t in range(n):
        if upper[t] > scale:
            scale = upper[t]
        if a[t] < lo:
            lo = a[t]
        if a[t] > hi:
            hi = a[t]
    slack = rtol * scale
    bad = False
    for t in range(n):
        if a[t] < -slack or a[t] > upper[t] + slack or a[t] != a[t]:
            bad = True
            break
    if bad:
        info[0] = lo
        info[1] = hi
        return OUTSIDE_BOX
    r = -total
    for t in range(n):
        v = a[t]
        if v < 0.0:
            v = 0.0
        elif v > upper[t]:
            v = upper[t]
        a[t] = v
        r += signs[t] * v
    info[0] = r
    if abs(r) > rtol * scale * n:
        return OFF_EQUALITY
    if r == 0.0:
        return REPAIRED
    sgn = 1.0 if r > 0.0 else -1.0
    need = abs(r)
    for attempt in range(2):
        room_sum = 0.0
        for t in range(n):
            if attempt == 0 and not (0.0 < a[t] < upper[t]):
                continue
            d = -sgn * signs[t]
            room_sum += (upper[t] - a[t]) if d > 0.0 else a[t]
        if room_sum >= need:
            f = need / room_sum
            for t in range(n):
                if attempt == 0 and not (0.0 < a[t] < upper[t]):
                    continue
                d = -sgn * signs[t]
                room = (upper[t] - a[t]) if d > 0.0 else a[t]
                v = a[t] + d * room * f
                if v < 0.0:
                    v = 0.0
                elif v > upper[t]:
                    v = upper[t]
                a[t] = v
            return REPAIRED
    return NO_ROOM
