"""Jitted primitives (numba only).

Every function here takes C-contiguous float64/int64 arrays and scalars and
imports nothing but ``numpy``, ``numba`` and ``math``. Public wrappers
validate and convert before calling in.
"""
