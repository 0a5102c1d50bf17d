"""Jitted primitives (numba only).

Every function here takes C-contiguous float64/int64 arrays and scalars and
imports nothing but ``numpy``, ``numba`` and ``math``. Public wrappers
validate and convert before calling in. numba compiles one version per
argument type, and a read-only array is another type than a writable one:
an input a routine only reads (the points, a stored bank, a problem's rows,
signs and bounds) is always passed read-only, through :func:`readonly`,
so that each routine compiles once.

The first time a process compiles a function or loads one from numba's
cache, numba checks for SciPy's BLAS by importing
``scipy.linalg.cython_blas``, which runs the whole of ``scipy.linalg``'s
``__init__`` (0.1-0.3 s of a process that only predicts). The extension
is loaded here on its own first (:func:`mklopt._extension.load_extension`),
so that numba's check finds it.
"""

from .._extension import load_extension as _load_extension

try:
    _load_extension("scipy.linalg.cython_blas", "scipy.linalg")
except ImportError:  # pragma: no cover - numba's own check then says what is missing
    pass


def readonly(a):
    """A read-only view of ``a`` (no copy): how an input the kernels only read is passed.

    numba compiles a separate machine-code version for each mutability of
    an array argument, so an input that is sometimes writable and sometimes
    not (a user's array, a private copy, a memory map) would compile every
    routine twice. Every caller passes what a primitive only reads through
    here, and each routine has one version.
    """
    if not a.flags.writeable:
        return a
    v = a.view()
    v.flags.writeable = False
    return v
