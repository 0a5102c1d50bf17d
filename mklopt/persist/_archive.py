"""Portable model files: the archive, its format version and its checks.

A model file is one ``.npz`` archive (``numpy.savez``) of plain numeric or
string arrays plus one JSON metadata string (the member ``metadata``). What
goes into it is the business of the saved object's *codec*
(:class:`Codec`, registered for its kind with :func:`register_codec`):
``to_arrays(obj)`` gives its state as arrays and JSON values and
``from_arrays(cls, arrays)`` rebuilds it; an object that saves itself
(:class:`Persistent`) is its own codec. This module writes that state, with
a header naming the format, its version, the mklopt that wrote it and the
object's class, and reads it back. The fitted estimators (:class:`~mklopt.MKLClassifier`,
:class:`~mklopt.MKLRegressor`, :class:`~mklopt.MKLOneClass`,
:class:`~mklopt.MKBoostClassifier`) and their subclasses save themselves
by their codecs: the support vectors' training rows (or, on precomputed kernels,
their indices), the selected kernels with their training normalisation and
weights, the dual coefficients and biases (for MKBoost: the boosting rounds
and their single-kernel learners), the classes, feature maps if the model
was trained on them, and the constructor parameters except run-time ones
(``callback``, ``client``, ``n_jobs``).

The header names the object's class by its registered estimator name
(:func:`mklopt.tasks.register_estimator`) and, for a subclass that is not
registered, by its qualified name too (``"module.ClassName"``), so a user's
subclass with parameters of its own loads as itself, provided the module
defining it has been imported: a file never makes mklopt import anything.
If that class is not defined, the model loads as its registered base when
the base can hold it (with a warning), or the error says which module to
import.

Format versions: 1 (models on kernel functions), 2 (adds the feature-map
arrays ``map_*`` and ``landmark_*``, a ``storage`` parameter that may be a
feature-map object saved as JSON, and the regression and one-class models),
3 (adds models on precomputed kernels: kernel specs of kind
``"precomputed"``) and 4 (adds MKBoost ensembles, a layout of their own).
Each version only adds to the one before, so all are read as they are. A
file is written in the lowest version that can hold the model, so models
without feature maps stay readable by an mklopt that knows only version 1.
A later layout that changes what an older file means gets a version of its
own and an upgrade function (version ``v`` -> the arrays and metadata of
version ``v + 1``, see :func:`_upgrade`), which :func:`load_model` applies
in turn to older files before the codec reads them.

:func:`load_model` reads the archive with ``numpy.load(path,
allow_pickle=False)``: a model file never contains, and loading never runs,
Python code. Every array and every metadata field is checked before a model
is built; anything unexpected raises :class:`ModelFormatError` with one
sentence saying what is wrong.
"""

from __future__ import annotations

import json
import os
import tempfile
import warnings
import zipfile
from collections.abc import Callable

import numpy as np

from .._registry import Registry
from .._version import __version__
from ..tasks import estimator_entry
from ._codecs import codec_for, find_class, load_entries
from ._protocol import qualified_name

__all__ = ["save_model", "load_model", "ModelFormatError", "FORMAT_NAME", "FORMAT_VERSION"]

#: Value of the ``format`` field of the metadata.
FORMAT_NAME = "mklopt-model"
#: Newest layout: :func:`load_model` reads every version up to this one, and
#: :func:`save_model` writes the lowest one that holds the model.
FORMAT_VERSION = 4

_META_KEY = "metadata"
# Metadata fields written by this module; the rest is the object's header.
_OWN_FIELDS = ("format", "format_version", "mklopt_version", "estimator", "class",
               "feature_names", "label")
# x_mean/x_scale: the caller's standardisation given to save_model.
_CALLER_ARRAYS = ("x_mean", "x_scale")
# Upgrades of older layouts: version v -> function(arrays, meta) returning
# the arrays and metadata of version v + 1. Versions 1 to 4 only add to each
# other, so none is needed yet. Read only through _upgrade.
_UPGRADES: Registry[int, Callable] = Registry("format upgrade")


def _upgrade(version):
    """The upgrade of files of ``version`` to ``version + 1``, or None (nothing to change)."""
    return _UPGRADES.get(version, None)


class ModelFormatError(ValueError):
    """A model file is missing, truncated, corrupt, foreign or inconsistent."""


# --------------------------------------------------------------------------
# save
# --------------------------------------------------------------------------
def _entry(obj):
    """The registered estimator entry of a name or an object, or None."""
    load_entries()  # which registers the estimators, too
    try:
        return estimator_entry(obj)
    except (ValueError, TypeError):
        return None


def _class_names(obj):
    """The ``estimator`` field (a registered name) and, if needed, the ``class`` field."""
    try:
        entry = estimator_entry(obj)
    except ValueError:
        return qualified_name(type(obj)), qualified_name(type(obj))
    return entry.name, (None if entry.cls is type(obj) else qualified_name(type(obj)))


def save_model(clf, path, feature_names=None, label=None, standardize=None):
    """Save a fitted model (an :class:`~mklopt.MKLClassifier` or the like) to a ``.npz`` file.

    Parameters
    ----------
    clf : estimator
        A fitted :class:`~mklopt.MKLClassifier`, :class:`~mklopt.MKLRegressor`,
        :class:`~mklopt.MKLOneClass` or :class:`~mklopt.MKBoostClassifier`
        (a subclass of these included), an object of a kind with a
        registered :class:`Codec`, or a :class:`Persistent` object.
    path : str or os.PathLike
        Where to write; the name is used as given (no ``.npz`` is appended).
        The file is written to a temporary name first and then renamed, so an
        interrupted save never leaves a half-written model behind.
    feature_names : sequence of str, optional
        One name per feature, stored in the metadata. Default: the
        estimator's ``feature_names_in_`` when it was fitted on a table with
        string column names (a pandas DataFrame).
    label : str, optional
        Name of the label column, stored in the metadata.
    standardize : tuple of two array-likes of shape (n_features,), optional
        ``(mean, scale)`` of a standardisation applied to the features before
        ``fit``; stored so that the same transform can be applied before
        ``predict`` (returned by :func:`load_model` as ``meta["standardize"]``).

    Raises
    ------
    TypeError
        If no codec saves ``clf`` (it is neither of a registered kind nor
        :class:`Persistent`), or a parameter cannot be represented without
        pickle.
    ValueError
        If ``clf`` is not fitted or the extra arguments are inconsistent.

    Notes
    -----
    Saved: what its codec's ``to_arrays(clf)`` returns. For the MKL estimators: the
    fitted attributes used by ``predict`` and ``decision_function``
    (``classes_``, ``pairs_``, ``weights_``, ``support_``, ``dual_coef_``,
    ``intercept_``, ``kernel_specs_``, the scaler), the per-pair summaries
    ``n_iter_``, ``n_oracle_calls_``, ``gap_`` and ``converged_``, and the
    constructor parameters except ``callback``, ``client`` and ``n_jobs``
    (a method instance is saved by its registry name, a random generator
    as None). For MKBoost: the ensembles (``ensemble_``), the kernel rows
    their learners read, ``weights_``, ``n_iter_``, ``n_fits_`` and
    ``stop_reason_``. Not saved: ``history_`` and ``result_`` (the run
    records).
    """
    codec = codec_for(clf)
    if codec is None:
        raise TypeError(
            "only models with a codec (MKLClassifier, MKLRegressor, MKLOneClass, "
            "MKBoostClassifier, their subclasses and kinds registered with register_codec) "
            "or that implement to_arrays/from_arrays (Persistent) can be saved; "
            f"{type(clf).__name__} does not"
        )
    state = codec.to_arrays(clf)
    arrays = {k: v for k, v in state.items() if isinstance(v, np.ndarray)}
    header = {k: v for k, v in state.items() if not isinstance(v, np.ndarray)}
    clash = sorted((set(header) & set(_OWN_FIELDS) - {"format_version"})
                   | (set(arrays) & {_META_KEY, *_CALLER_ARRAYS}))
    if clash:
        raise ValueError(f"the state of {type(clf).__name__} uses reserved names {clash}")
    version = header.pop("format_version", 1)
    if version > FORMAT_VERSION:
        raise ValueError(f"{type(clf).__name__} needs model format {version}, "
                         f"newer than this mklopt's {FORMAT_VERSION}")
    d = header.get("n_features")
    if not codec.has_features(clf) and (
            standardize is not None or feature_names is not None):
        raise ValueError(
            "a model fitted with kernels='precomputed' has no features: standardize and "
            "feature_names do not apply to it"
        )
    if feature_names is None:
        feature_names = header.get("feature_names_in")
    if feature_names is not None:
        feature_names = [str(f) for f in feature_names]
        if len(feature_names) != d:
            raise ValueError(f"feature_names has {len(feature_names)} names for {d} features")
        if "kernel_names" in header:
            from ..estimators._names import estimator_kernel_names

            header["kernel_names"] = estimator_kernel_names(clf, feature_names)
    if label is not None and not isinstance(label, str):
        raise TypeError(f"label must be a string or None, got {type(label).__name__}")
    if standardize is not None:
        mean, scale = (np.asarray(a, dtype=np.float64) for a in standardize)
        if mean.shape != (d,) or scale.shape != (d,):
            raise ValueError(f"standardize must be (mean, scale), each of shape ({d},)")
        if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(scale)) and np.all(scale > 0)):
            raise ValueError("standardize needs finite means and finite positive scales")
        arrays["x_mean"], arrays["x_scale"] = mean, scale

    estimator, cls_name = _class_names(clf)
    meta = {
        "format": FORMAT_NAME,
        "format_version": version,
        "mklopt_version": __version__,
        "estimator": estimator,
        **({"class": cls_name} if cls_name else {}),
        **header,
        "feature_names": feature_names,
        "label": label,
    }
    arrays[_META_KEY] = np.array(json.dumps(meta, allow_nan=False))

    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".mklopt-model-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, **arrays)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


# --------------------------------------------------------------------------
# load
# --------------------------------------------------------------------------
def _fail(path, what):
    raise ModelFormatError(f"{path} {what}")


def _read_arrays(path):
    """All arrays of the archive, read eagerly, without pickle."""
    try:
        with open(path, "rb") as fh:
            magic = fh.read(6)
        if magic[:4] != b"PK\x03\x04":
            what = "a single .npy array" if magic == b"\x93NUMPY" else "not an .npz archive"
            if not magic:
                what = "the file is empty"
            _fail(path, f"is not an mklopt model file ({what})")
        archive = np.load(path, allow_pickle=False)
    except ModelFormatError:
        raise
    except FileNotFoundError:
        _fail(path, "does not exist")
    except IsADirectoryError:
        _fail(path, "is a directory, not a model file")
    except PermissionError:
        _fail(path, "cannot be read (permission denied)")
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        _fail(path, f"is truncated or corrupt (not a readable .npz archive: {exc})")
    if not isinstance(archive, np.lib.npyio.NpzFile):
        _fail(path, "is not an mklopt model file (a single .npy array, not an .npz archive)")
    out = {}
    with archive:
        for key in archive.files:
            try:
                out[key] = archive[key]
            except ValueError as exc:
                if "pickle" in str(exc) or "Object arrays" in str(exc):
                    _fail(path, f"holds pickled Python objects (array {key!r}), which are refused")
                _fail(path, f"is corrupt (array {key!r}: {exc})")
            except (OSError, EOFError, zipfile.BadZipFile, KeyError) as exc:
                _fail(path, f"is truncated or corrupt (array {key!r}: {exc})")
            except Exception as exc:  # zlib.error and friends from damaged members
                _fail(path, f"is truncated or corrupt (array {key!r}: {exc})")
    return out


def _read_meta(path, arrays):
    if _META_KEY not in arrays:
        _fail(path, "is not an mklopt model file (no metadata in the archive)")
    raw = arrays.pop(_META_KEY)
    if raw.dtype.kind != "U" or raw.shape != ():
        _fail(path, "is not an mklopt model file (the metadata is not a JSON string)")
    try:
        meta = json.loads(str(raw))
    except ValueError:
        _fail(path, "is corrupt (the metadata is not valid JSON)")
    if not isinstance(meta, dict) or meta.get("format") != FORMAT_NAME:
        _fail(path, f"is not an mklopt model file (format is not {FORMAT_NAME!r})")
    version = meta.get("format_version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        _fail(path, "is corrupt (bad format_version)")
    if version > FORMAT_VERSION:
        _fail(
            path,
            f"was written in model format {version} by mklopt {meta.get('mklopt_version')}; "
            f"this mklopt reads format {FORMAT_VERSION} or older, so upgrade mklopt",
        )
    names = meta.get("feature_names")
    d = meta.get("n_features")
    if names is not None and (
        not isinstance(names, list)
        # (a bad n_features is reported by the object that reads it)
        or (isinstance(d, int) and not isinstance(d, bool) and d >= 1 and len(names) != d)
        or not all(isinstance(s, str) for s in names)
    ):
        _fail(path, "is corrupt (feature_names must be one string per feature)")
    if meta.get("label") is not None and not isinstance(meta["label"], str):
        _fail(path, "is corrupt (label must be a string)")
    return meta


def _saved_class(path, meta):
    """``(class, fallback)``: the saved object's class, and its registered base if the
    class itself is not defined in this session (else None)."""
    entry = _entry(meta.get("estimator"))
    if entry is not None and codec_for(entry.cls) is None:
        entry = None
    name = meta.get("class")
    if name is not None:
        cls = find_class(name, None if entry is None else entry.cls)
        if cls is not None and codec_for(cls) is not None and (
                entry is None or issubclass(cls, entry.cls)):
            return cls, None
        if entry is None:
            _fail(path, f"holds a model of class {name!r}, which is not defined here; import "
                  "the module that defines it before loading")
        return entry.cls, name
    if entry is None:
        _fail(path, f"holds an unsupported estimator {meta.get('estimator')!r} (register its "
              "class with mklopt.tasks.register_estimator before loading)")
    return entry.cls, None


def load_model(path):
    """Load a model saved by :func:`save_model`.

    Parameters
    ----------
    path : str or os.PathLike
        The model file.

    Returns
    -------
    clf : MKLClassifier, MKLRegressor, MKLOneClass, MKBoostClassifier or the saved class
        A fitted model whose ``predict`` and ``decision_function`` give
        the same values as the saved one (``history_`` and ``result_`` are
        not restored). A subclass loads as itself once the module defining
        it has been imported.
    meta : dict
        The metadata: ``format``, ``format_version``, ``mklopt_version``,
        ``estimator`` (and ``class`` for an unregistered subclass),
        ``n_features``, ``n_kernels``, ``n_pairs``, ``kernel_specs`` (JSON
        form), ``params``, ``feature_names`` (or None), ``label`` (or None),
        ``standardize``: ``(mean, scale)`` arrays given to
        :func:`save_model`, or None, and, for a model fitted on a table with
        string column names, ``feature_names_in`` (restored as the
        estimator's ``feature_names_in_``).

    Raises
    ------
    ModelFormatError
        If the file is missing, unreadable, truncated, corrupt, not an
        mklopt model, written by a newer format version, contains pickled
        objects, holds inconsistent arrays (wrong shapes or dtypes,
        non-finite values, indices out of range), or names a class that is
        not defined.
    """
    path = os.fspath(path)
    arrays = _read_arrays(path)
    meta = _read_meta(path, arrays)
    cls, missing = _saved_class(path, meta)
    version = meta["format_version"]
    for v in range(version, FORMAT_VERSION):
        upgrade = _upgrade(v)
        if upgrade is not None:
            arrays, meta = upgrade(arrays, meta)
    header = {k: v for k, v in meta.items() if k not in _OWN_FIELDS}
    header["format_version"] = version
    try:
        clf = codec_for(cls).from_arrays(cls, {**header, **arrays})
    except (TypeError, ValueError) as exc:
        if missing is not None:
            _fail(path, f"holds a model of class {missing!r}, which is not defined here, and "
                  f"its base {cls.__name__} cannot hold it ({exc}); import the module that "
                  "defines it before loading")
        _fail(path, f"is corrupt ({exc})")
    if missing is not None:
        warnings.warn(
            f"{path} holds a model of class {missing!r}, which is not defined here; it is "
            f"loaded as its registered base {cls.__name__}. Import the module that defines "
            "the class before loading to get it back.",
            UserWarning,
            stacklevel=2,
        )
    meta = dict(meta)
    meta["standardize"] = (arrays["x_mean"], arrays["x_scale"]) if "x_mean" in arrays else None
    return clf, meta
