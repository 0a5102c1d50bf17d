"""The numba options every jitted kernel uses.

``fastmath`` stays off: its no-NaN/no-inf assumptions would let the checks of
the bad-input rules of docs/estimators.md be optimised away.

``JIT_CONTRACT`` allows only the contraction of ``a * b + c`` into one
fused multiply-add (LLVM's ``contract`` flag; no other fast-math
assumption). It is for pure polynomial evaluations such as
``groups.exp_into``, where it changes the last bit at most and saves a third
of the time; the function gives the same bits wherever it is called from.

``JIT_PARALLEL`` adds ``parallel=True`` for loops over independent output
rows or groups (``prange``), where the answer does not depend on the number
of threads. Serial kernels that were measured to lose on a busy second core
(``_jit.combine``) keep ``JIT``.
"""

JIT = dict(cache=True, nogil=True, fastmath=False)
JIT_PARALLEL = dict(JIT, parallel=True)
JIT_CONTRACT = dict(JIT, fastmath={"contract"})
