"""The one set of numba options every jitted kernel uses.

``fastmath`` stays off: its no-NaN/no-inf assumptions would let the checks of
DESIGN section 7 be optimised away.
"""

JIT = dict(cache=True, nogil=True, fastmath=False)

# Same options plus ``parallel=True``, for the few kernels whose outer loop is
# embarrassingly parallel and where a benchmark showed a gain on 2 cores
# (``combine.quad_forms``: one independent sum per kernel). Thread count
# follows numba (``NUMBA_NUM_THREADS`` or ``numba.set_num_threads``).
JIT_PARALLEL = dict(JIT, parallel=True)
