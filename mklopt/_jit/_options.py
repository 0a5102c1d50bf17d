"""The numba options every jitted kernel uses.

``fastmath`` stays off: its no-NaN/no-inf assumptions would let the checks of
DESIGN section 7 be optimised away.

``JIT_PARALLEL`` adds ``parallel=True`` for loops over independent output
rows or groups (``prange``), where the answer does not depend on the number
of threads. Serial kernels that were measured to lose on a busy second core
(``_jit.combine``) keep ``JIT``.
"""

JIT = dict(cache=True, nogil=True, fastmath=False)
JIT_PARALLEL = dict(JIT, parallel=True)
