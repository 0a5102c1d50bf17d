"""The registry of codecs: which :class:`Codec` saves which class.

One codec per saved type, registered by kind (skops' pattern): the archive
(:mod:`mklopt.persist._archive`) writes and reads the file, a codec knows
what goes into it. The codec of an object is that of the nearest class in
its MRO that has one, so a user's subclass of an estimator is saved by its
base's codec, with its own constructor parameters (read from
``get_params()``). An object that saves itself (:class:`Persistent`) needs
no codec of its own.

The estimators' codecs (:mod:`mklopt.persist._entries`) are registered the
first time a codec is looked up, not when this package is imported: the
kernels import :class:`Persistent` from below the estimators.
"""

from __future__ import annotations

from .._registry import Registry
from ._protocol import Codec, Persistent, persistent_class, qualified_name

__all__ = ["register_codec", "codec_for", "find_class", "load_entries"]


class _SelfSaving(Codec):
    """The codec of a :class:`Persistent` object: its own ``to_arrays`` / ``from_arrays``."""

    kind = "persistent"

    def to_arrays(self, obj):
        return obj.to_arrays()

    def from_arrays(self, cls, arrays):
        return cls.from_arrays(arrays)


_SELF_SAVING = _SelfSaving()
# class -> codec, and kind -> codec; read and written only through the
# functions below.
_BY_CLASS: Registry[type, Codec] = Registry("codec of a class", plural="codecs of classes")
_BY_KIND: Registry[str, Codec] = Registry("codec kind")
_loaded = []


def load_entries():
    """Register the estimators' codecs (:mod:`._entries`), once."""
    # The estimators' codecs import the estimators, which import the kernels,
    # which import this package: the entries are read on first use.
    if not _loaded:
        from ._entries import ENTRIES

        _loaded.append(True)
        for cls, codec in ENTRIES:
            register_codec(cls, codec)


def register_codec(cls, codec, replace=False):
    """Register ``codec`` (a :class:`Codec`) as the one that saves ``cls`` and its subclasses.

    Parameters
    ----------
    cls : type
        The class it saves.
    codec : Codec
        Registered under ``codec.kind`` too.
    replace : bool, default=False
        Let ``cls`` or ``codec.kind`` be taken over by another codec.

    Returns
    -------
    type
        ``cls``.

    Raises
    ------
    ValueError
        If ``cls`` or the kind already has another codec and not ``replace``.
    """
    if not isinstance(codec, Codec) or not isinstance(codec.kind, str) or not codec.kind:
        raise TypeError("codec must be a Codec with a non-empty kind")
    load_entries()
    held = _BY_CLASS.get(cls, None)
    if not replace and held is not None and held is not codec:
        raise ValueError(f"a codec ({held.kind!r}) is already registered for {cls.__name__}; "
                         "pass replace=True to take it over")
    _BY_KIND.register(codec.kind, codec, replace=replace)
    _BY_CLASS.register(cls, codec, replace=True)
    return cls


def codec_for(obj):
    """The codec that saves ``obj`` (a class or an instance), or None.

    The codec of the nearest class in its MRO that has one; an object that
    saves itself (:class:`Persistent`) otherwise.
    """
    load_entries()
    cls = obj if isinstance(obj, type) else type(obj)
    for base in cls.__mro__:
        codec = _BY_CLASS.get(base, None)
        if codec is not None:
            return codec
    if issubclass(cls, Persistent) and hasattr(cls, "from_arrays"):
        return _SELF_SAVING
    return None


def find_class(name, base=None):
    """The class whose qualified name (``"module.QualName"``) is ``name``, or None.

    Looked for among the subclasses of ``base`` (``base`` included; default:
    of every class with a codec) and the :class:`Persistent` classes: a
    class is found once the module defining it has run; nothing is imported
    because a file names it.
    """
    if not isinstance(name, str):
        return None
    load_entries()
    found, seen = [], set()
    todo = [base] if base is not None else list(_BY_CLASS)
    while todo:
        cls = todo.pop(0)
        if cls not in seen:
            seen.add(cls)
            found += [cls] if qualified_name(cls) == name else []
            todo.extend(cls.__subclasses__())
    # A class defined again under the same name (a module run twice): the
    # latest, as a registry would keep it.
    return found[-1] if found else persistent_class(name)
