"""``stopped(stop)``: the jitted loops' look at their stop flag.

The flag is a (1,) int64 array that another thread sets while a loop runs
(:mod:`mklopt._interrupt`). A plain ``stop[0]`` does not do: nothing in a
loop writes the flag, so the compiler may read it once before the loop
and never again (LLVM hoists the load out of ``prange`` bodies, which then
never see a stop). Inside jitted code ``stopped`` is therefore an atomic
(monotonic) load, which is read afresh every time and costs what a plain
load does. Called from Python (``py_func`` twins, ``NUMBA_DISABLE_JIT``),
it is the plain function below, which accepts anything indexable.
"""

from numba.core import types
from numba.extending import intrinsic, overload


def stopped(stop):
    """Whether the stop flag ``stop`` ((1,) int64) is set."""
    return stop[0] != 0


@intrinsic
def _load_flag(typingctx, stop):
    """``stop[0]`` as an atomic monotonic load (never hoisted out of a loop)."""
    if not (isinstance(stop, types.Array) and stop.ndim == 1 and stop.dtype == types.int64):
        return None

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        return builder.load_atomic(ary.data, ordering="monotonic", align=8)

    return types.int64(stop), codegen


@overload(stopped)
def _stopped_jit(stop):
    def impl(stop):
        return _load_flag(stop) != 0

    return impl
