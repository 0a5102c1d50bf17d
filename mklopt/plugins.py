"""Methods, oracles and kernel families from other packages, through entry points.

A package makes its outer methods, oracles, storages or kernel families
available to mklopt (the estimators, saved models, ``mklopt fit`` and
``mklopt bench``) by declaring entry points in the groups
``mklopt.methods``, ``mklopt.oracles``, ``mklopt.storages`` and
``mklopt.kernels``, each naming a module (or an object in it) whose import
registers them with :func:`mklopt.methods.register`,
:func:`mklopt.tasks.register_oracle`, :func:`mklopt.kernels.register_storage`
or :func:`mklopt.kernels.register_kernel_family`::

    # pyproject.toml of the package "mkl-extras"
    [project.entry-points."mklopt.methods"]
    my_spg = "mkl_extras.my_spg"
    [project.entry-points."mklopt.oracles"]
    kernel_ridge = "mkl_extras.kernel_ridge"
    [project.entry-points."mklopt.storages"]
    my_storage = "mkl_extras.my_storage"
    [project.entry-points."mklopt.kernels"]
    laplacian = "mkl_extras.laplacian"

The groups are read once per process, when a registry is first asked for
a name (:func:`mklopt.methods.get_method`, :func:`mklopt.tasks.get_oracle`,
:func:`mklopt.kernels.get_storage`, :func:`mklopt.kernels.get_kernel_family`
or a spec of an unknown family, the command line). Each registry is a
:class:`mklopt._registry.Registry` that names its group; it alone calls
:func:`load`. A plugin that fails to import raises :class:`PluginError`
naming the entry point and its package.
"""

from __future__ import annotations

from importlib import metadata

__all__ = ["GROUPS", "PluginError", "load", "loaded"]

#: The entry point groups mklopt reads.
GROUPS = ("mklopt.methods", "mklopt.oracles", "mklopt.storages", "mklopt.kernels")

_loaded: dict[str, list] = {}


class PluginError(ImportError):
    """A plugin declared through an entry point could not be loaded."""


def _entry_points(group):
    return list(metadata.entry_points(group=group))


def load(group):
    """Load every entry point of ``group`` (once per process); return them.

    Raises
    ------
    PluginError
        If one fails to load; the message names the entry point, the
        package that declares it and the error.
    """
    if group not in GROUPS:
        raise ValueError(f"group must be one of {', '.join(GROUPS)}, got {group!r}")
    if group in _loaded:
        return _loaded[group]
    _loaded[group] = done = []
    for ep in _entry_points(group):
        try:
            ep.load()
        except Exception as exc:
            # Forget this group so that a fixed plugin loads on the next try.
            del _loaded[group]
            dist = getattr(getattr(ep, "dist", None), "name", None) or "an unknown package"
            raise PluginError(
                f"the {group} plugin {ep.name!r} = {ep.value!r} (from {dist}) failed to load: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        done.append(ep)
    return done


def loaded(group):
    """The entry points of ``group`` loaded so far (after :func:`load`)."""
    return list(_loaded.get(group, ()))


def _reset():
    """Forget which groups were read (tests that add entry points call it)."""
    _loaded.clear()
