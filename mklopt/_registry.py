"""One registry type: every name-to-entry table of mklopt is a :class:`Registry`.

Outer methods and their presets (:mod:`mklopt.methods`), oracles by task and
estimator classes (:mod:`mklopt.tasks`), storages
(:mod:`mklopt.kernels.factory`), kernel families
(:mod:`mklopt.kernels.families`), and the persistable classes, format
upgrades and the codecs (:mod:`mklopt.persist`) each keep one
instance. The public functions of those modules (``register``,
``get_method``, ``register_oracle``, ``get_storage``, ...) validate their
arguments, build the entry, and leave the rest to it:

* **one collision rule** (:meth:`Registry.register`): a name taken by a
  different entry is refused unless ``replace=True``; registering the same
  entry again is harmless (a notebook cell run twice, a module imported
  under two names); a frozen name (a built-in kernel family) is never
  taken over;
* **one plugin rule**: a registry with an entry point ``group``
  (:data:`mklopt.plugins.GROUPS`) reads it through :func:`mklopt.plugins.load`,
  once per process, when it is first asked for an entry or for its names;
* **one error** for an unknown name, listing the registered ones in the
  order of registration.

A registry is also a mutable mapping, so that code and tests that treat the
tables as dicts keep working: item access, ``in``, ``len``, iteration,
``keys()``/``values()``/``items()``, ``pop`` and ``del`` see what is
registered so far, as a dict would, and never read entry points; item
assignment is ``register(key, entry, replace=True)``.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, MutableMapping
from typing import Any, Generic, TypeVar

from . import plugins

__all__ = ["Registry"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

_MISSING: Any = object()

#: When :meth:`Registry.get` reads the entry points.
_READS = ("lookup", "miss")


def _describe(obj):
    """A short name of what an entry stands for, for messages."""
    return getattr(obj, "__qualname__", None) or repr(obj)


class Registry(MutableMapping, Generic[K, V]):
    """Entries registered under names, with one collision rule and one plugin rule.

    Parameters
    ----------
    kind : str
        What an entry is, for messages (``"method"``, ``"kernel family"``).
    plural : str, optional
        Its plural in messages; default ``kind + "s"``.
    group : str, optional
        The entry point group (one of :data:`mklopt.plugins.GROUPS`) whose
        modules register entries here; read once per process, lazily.
    read : {"lookup", "miss"}, default="lookup"
        When :meth:`get` reads ``group``: before the first lookup, so that a
        plugin that fails to import is reported whatever name is asked for,
        or only when a name is missing (kernel families: built-in families
        are looked up while mklopt itself imports, and on Dask workers,
        where importing every plugin is not wanted). :meth:`names` always
        reads it.
    identity : callable, optional
        ``identity(entry)``: what an entry stands for, so that two entries
        with the same identity (the same class, the same factory; compared
        with ``is`` or ``==``) are the same registration. Default: the entry.
    unknown : callable, optional
        ``unknown(key, keys) -> str``: the message of the ``ValueError`` for
        an unknown ``key``, given the registered keys. Default: ``"unknown
        <kind> <key>; registered <plural>: <keys>"``.

    Examples
    --------
    >>> colours = Registry("colour")
    >>> colours.register("red", "#f00")
    '#f00'
    >>> colours.register("red", "#f00")  # the same entry again: nothing changes
    '#f00'
    >>> colours.register("red", "#e00")
    Traceback (most recent call last):
    ...
    ValueError: colour 'red' is already registered (to '#f00'); pass replace=True to take it over
    >>> colours.get("blue")
    Traceback (most recent call last):
    ...
    ValueError: unknown colour 'blue'; registered colours: 'red'
    >>> colours.get("blue", None) is None, "red" in colours, colours.names()
    (True, True, ['red'])
    """

    def __init__(
        self,
        kind: str,
        *,
        plural: str | None = None,
        group: str | None = None,
        read: str = "lookup",
        identity: Callable[[V], Any] | None = None,
        unknown: Callable[[K, list], str] | None = None,
    ):
        if group is not None and group not in plugins.GROUPS:
            raise ValueError(
                f"group must be one of {', '.join(plugins.GROUPS)} or None, got {group!r}"
            )
        if read not in _READS:
            raise ValueError(f"read must be one of {', '.join(_READS)}, got {read!r}")
        self.kind = kind
        self.plural = plural or f"{kind}s"
        self.group = group
        self.read = read
        self._identity = identity
        self._unknown = unknown
        self._entries: dict[K, V] = {}
        self._frozen: set[K] = set()

    # ------------------------------------------------------------ the verbs
    def register(self, key: K, entry: V, replace: bool = False) -> V:
        """Register ``entry`` under ``key``; return it.

        Parameters
        ----------
        key : hashable
            The name (a tuple for a registry keyed by, e.g., task and name).
        entry : object
        replace : bool, default=False
            Let ``key`` be taken over when a different entry holds it.

        Returns
        -------
        object
            ``entry``. Registering an entry of the same identity again
            stores the new one in the old one's place (so that, e.g., an
            oracle re-registered with other parameters takes them), which
            changes nothing when it is the very same entry.

        Raises
        ------
        ValueError
            If ``key`` is held by an entry of another identity and
            ``replace`` is false, or ``key`` is frozen (:meth:`freeze`).
        """
        old = self._entries.get(key, _MISSING)
        if old is not _MISSING and not self._same(old, entry):
            if key in self._frozen:
                raise ValueError(f"{self.kind} {key!r} is built in and cannot be replaced")
            if not replace:
                raise ValueError(
                    f"{self.kind} {key!r} is already registered (to "
                    f"{_describe(self._identity_of(old))}); pass replace=True to take it over"
                )
        self._entries[key] = entry
        return entry

    def freeze(self, *keys: K) -> None:
        """Let no other entry take ``keys`` over, even with ``replace=True``."""
        missing = [k for k in keys if k not in self._entries]
        if missing:
            raise ValueError(f"cannot freeze unregistered {self.plural}: {missing!r}")
        self._frozen.update(keys)

    def get(self, key: K, default: Any = _MISSING) -> V:
        """The entry under ``key``, after reading the entry point group (see ``read``).

        Parameters
        ----------
        key : hashable
        default : object, optional
            Returned for an unknown (or unhashable) ``key``; without it that
            is an error.

        Raises
        ------
        ValueError
            For an unknown ``key`` and no ``default``; the message lists the
            registered keys.
        mklopt.plugins.PluginError
            If a module of the group fails to import.
        """
        if self.read == "lookup":
            self._read_plugins()
        entry = self._lookup(key)
        if entry is _MISSING and self.read == "miss" and self.group is not None:
            self._read_plugins()
            entry = self._lookup(key)
        if entry is not _MISSING:
            return entry
        if default is not _MISSING:
            return default
        raise ValueError(self._unknown_message(key)) from None

    def names(self) -> list[K]:
        """Every registered key, entry points included, in the order of registration."""
        self._read_plugins()
        return list(self._entries)

    # ------------------------------------------------------------- helpers
    def _read_plugins(self):
        if self.group is not None:
            plugins.load(self.group)

    def _lookup(self, key):
        try:
            return self._entries.get(key, _MISSING)
        except TypeError:  # unhashable: not a name
            return _MISSING

    def _identity_of(self, entry):
        return entry if self._identity is None else self._identity(entry)

    def _same(self, old, new):
        if old is new:
            return True
        a, b = self._identity_of(old), self._identity_of(new)
        return a is b or (type(a) is type(b) and a == b)

    def _unknown_message(self, key):
        keys = list(self._entries)
        if self._unknown is not None:
            return self._unknown(key, keys)
        known = ", ".join(repr(k) for k in keys) or "none"
        return f"unknown {self.kind} {key!r}; registered {self.plural}: {known}"

    # ------------------------------------------------- the mapping protocol
    def __getitem__(self, key: K) -> V:
        return self._entries[key]

    def __setitem__(self, key: K, entry: V) -> None:
        self.register(key, entry, replace=True)

    def __delitem__(self, key: K) -> None:
        del self._entries[key]

    def __contains__(self, key: object) -> bool:
        return self._lookup(key) is not _MISSING

    def __iter__(self) -> Iterator[K]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"<Registry of {len(self)} {self.plural}: {', '.join(map(repr, self._entries))}>"
