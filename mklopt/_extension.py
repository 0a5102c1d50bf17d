"""Loading one compiled module of a package without running the package's ``__init__``.

Two SciPy extension modules sit on mklopt's start-up path inside packages
whose ``__init__`` is far heavier than the module itself:

- ``scipy.optimize._highspy._core``, HiGHS's bindings, which the level and
  SILP methods call directly (``import scipy.optimize`` costs about 0.2 s);
- ``scipy.linalg.cython_blas``, which numba imports to check for SciPy's
  BLAS the first time it compiles or loads a function from its cache, in
  every process (``import scipy.linalg`` costs 0.1-0.3 s).

:func:`load_extension` loads such a module from its file and enters it in
``sys.modules`` under its own name, so that a later import of the full
name (by numba, or by the package's own ``__init__``) finds this same
module instead of loading the extension a second time.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import os
import sys

__all__ = ["load_extension"]


def load_extension(fullname, package):
    """The extension module ``fullname``, loaded without importing ``package``.

    Parameters
    ----------
    fullname : str
        The module's full name, e.g. ``"scipy.linalg.cython_blas"``.
    package : str
        The package (a prefix of ``fullname``) whose ``__init__`` is not to
        run, e.g. ``"scipy.linalg"``. Its parents are imported as usual.

    Returns
    -------
    module
        When the module or ``package`` is imported already, or the file is
        not where it is expected (another layout, a frozen build), the plain
        ``importlib.import_module(fullname)``.

    Raises
    ------
    ImportError
        When the module cannot be imported at all.
    """
    if fullname in sys.modules or package in sys.modules:
        return importlib.import_module(fullname)
    try:
        spec = importlib.util.find_spec(package)  # imports the parents, not package itself
        parts = fullname[len(package) + 1:].split(".")
        where = os.path.join(spec.submodule_search_locations[0], *parts[:-1])
        path = next(f for f in (os.path.join(where, parts[-1] + sfx)
                                for sfx in importlib.machinery.EXTENSION_SUFFIXES)
                    if os.path.isfile(f))
    except (ImportError, AttributeError, TypeError, IndexError, StopIteration, OSError,
            ValueError):
        return importlib.import_module(fullname)
    loader = importlib.machinery.ExtensionFileLoader(fullname, path)
    mod = importlib.util.module_from_spec(
        importlib.util.spec_from_file_location(fullname, path, loader=loader))
    sys.modules[fullname] = mod
    try:
        loader.exec_module(mod)
    except BaseException:
        del sys.modules[fullname]
        raise
    return mod
