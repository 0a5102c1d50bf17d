"""What can be saved: objects that save themselves (:class:`Persistent`), and codecs.

:class:`Persistent` is documented, and exported, as
:class:`mklopt.persist.Persistent`. This module imports only NumPy and
:mod:`mklopt._registry`, so that
:class:`~mklopt.kernels.FeatureMap` (a value an estimator's ``storage`` may
hold) can derive from it from below the estimators. The estimators do not:
a :class:`Codec` registered for their kind saves them
(:mod:`mklopt.persist._codecs`).
"""

from __future__ import annotations

import dataclasses
import math
import numbers

import numpy as np

from .._registry import Registry

__all__ = [
    "Persistent",
    "Codec",
    "persistent_kind",
    "persistent_class",
    "qualified_name",
    "kind_of",
    "to_json",
]

# kind -> class, and "module.QualName" -> class, of every Persistent subclass;
# read and written only through the functions below.
_BY_KIND: Registry[str, type] = Registry("persistent kind")
_BY_NAME: Registry[str, type] = Registry("persistent class", plural="persistent classes")


def _register(cls):
    # A dataclass(slots=True) is built twice; the later class wins.
    _BY_KIND.register(kind_of(cls), cls, replace=True)
    _BY_NAME.register(qualified_name(cls), cls, replace=True)


def qualified_name(cls):
    """``"module.QualName"`` of a class: how a file names it."""
    return f"{cls.__module__}.{cls.__qualname__}"


def kind_of(cls_or_obj):
    """The kind a class (or an instance's class) is saved under."""
    cls = cls_or_obj if isinstance(cls_or_obj, type) else type(cls_or_obj)
    return cls.__dict__.get("_persist_kind") or cls.__name__.lower()


def persistent_kind(kind):
    """The class registered under ``kind``, or None."""
    return _BY_KIND.get(kind, None) if isinstance(kind, str) else None


def persistent_class(name):
    """The class whose :func:`qualified_name` is ``name``, or None (its module has not run)."""
    return _BY_NAME.get(name, None) if isinstance(name, str) else None


def to_json(value, name):
    """A value as JSON data (numbers, strings, None, nested lists), naming ``name`` if it cannot be.

    Raises
    ------
    ValueError
        For a non-finite number (JSON has no infinity).
    TypeError
        For anything else that is not data (a callable, an object).
    """
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        v = float(value)
        if not math.isfinite(v):
            raise ValueError(f"parameter {name}={value!r} is not finite and cannot be saved")
        return v
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return [to_json(v, name) for v in value]
    raise TypeError(f"parameter {name} of type {type(value).__name__} cannot be saved")


class Persistent:
    """Mixin of the objects that save themselves into model files (or into a parameter's JSON).

    An object that :func:`mklopt.persist.save_model` can write implements

    ``to_arrays(self) -> dict``
        Its state as a flat mapping of names to NumPy arrays (numeric or
        string, never object) and JSON values (numbers, strings, booleans,
        None, lists and dicts of them).
    ``from_arrays(cls, arrays)`` (a classmethod)
        The object rebuilt from that mapping. Anything inconsistent raises
        ``ValueError`` or ``TypeError`` with one sentence saying what is
        wrong; :func:`~mklopt.persist.load_model` reports it as a corrupt
        file.

    Every subclass is registered when it is defined, by its qualified name
    (``"module.ClassName"``, which files record) and by its *kind* (the
    class attribute ``_persist_kind`` if set, else the class name in lower
    case, ``"rbf"``), so that a class defined outside mklopt (an estimator
    subclass with parameters of its own) is
    found again when its file is loaded. Nothing is imported because a file
    names it: a class is found once the module defining it has run.

    A dataclass subclass (:class:`~mklopt.kernels.FeatureMap`, a value a
    parameter may hold) inherits working ``to_arrays`` / ``from_arrays``
    over its fields; any other class overrides them. The estimators are not
    ``Persistent``: a codec registered for their kind saves them
    (:class:`mklopt.persist.Codec`), outside their class hierarchy.

    Examples
    --------
    >>> from dataclasses import dataclass
    >>> from mklopt.persist import Persistent
    >>> @dataclass(frozen=True)
    ... class Shrinkage(Persistent):
    ...     factor: float
    >>> Shrinkage(0.5).to_arrays()
    {'factor': 0.5}
    >>> Shrinkage.from_arrays({"factor": 0.5})
    Shrinkage(factor=0.5)
    """

    __slots__ = ()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        _register(cls)

    def to_arrays(self):
        """The object's state as arrays and JSON values (a dataclass: its fields).

        Returns
        -------
        dict
        """
        if not dataclasses.is_dataclass(self):
            raise NotImplementedError(f"{type(self).__name__} does not implement to_arrays")
        return {f.name: to_json(getattr(self, f.name), f.name)
                for f in dataclasses.fields(self) if f.init}

    @classmethod
    def from_arrays(cls, arrays):
        """The object rebuilt from :meth:`to_arrays` output (a dataclass: its fields, exactly).

        Raises
        ------
        ValueError
            If the fields differ from the class's, or the constructor refuses them.
        """
        if not dataclasses.is_dataclass(cls):
            raise NotImplementedError(f"{cls.__name__} does not implement from_arrays")
        want = {f.name for f in dataclasses.fields(cls) if f.init}
        if not isinstance(arrays, dict) or set(arrays) != want:
            got = sorted(arrays) if isinstance(arrays, dict) else type(arrays).__name__
            raise ValueError(f"{kind_of(cls)} has fields {got}, expected {sorted(want)}")
        try:
            return cls(**arrays)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{kind_of(cls)} is invalid: {exc}") from None


class Codec:
    """How fitted objects of one kind are saved: ``to_arrays`` and ``from_arrays``.

    Subclass it, set :attr:`kind` and register an instance for the class it
    saves with :func:`register_codec`; subclasses of that class are saved by
    it too.

    Attributes
    ----------
    kind : str
        The codec's registry name.

    Examples
    --------
    >>> import numpy as np
    >>> from mklopt.persist import Codec, codec_for, register_codec
    >>> class Centroid:
    ...     def fit(self, X):
    ...         self.center_ = np.mean(X, axis=0)
    ...         return self
    >>> class CentroidCodec(Codec):
    ...     kind = "centroid"
    ...     def to_arrays(self, obj):
    ...         return {"center": obj.center_, "n_features": obj.center_.size}
    ...     def from_arrays(self, cls, arrays):
    ...         obj = cls()
    ...         obj.center_ = arrays["center"]
    ...         return obj
    >>> _ = register_codec(Centroid, CentroidCodec())
    >>> codec_for(Centroid()).kind
    'centroid'
    """

    kind: str = ""

    def to_arrays(self, obj):
        """``obj``'s state: a flat mapping of names to NumPy arrays and JSON values.

        The JSON values go into the file's metadata; ``format_version`` (the
        lowest layout that holds the state) is taken out of it by the archive.
        """
        raise NotImplementedError

    def from_arrays(self, cls, arrays):
        """An instance of ``cls`` rebuilt from :meth:`to_arrays` output.

        Anything inconsistent raises ``ValueError`` or ``TypeError`` with one
        sentence saying what is wrong.
        """
        raise NotImplementedError

    def has_features(self, obj):
        """Whether ``obj`` reads features, so that a standardisation and names apply to it."""
        return True
