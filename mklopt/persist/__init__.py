"""Portable model files: save and load fitted models without pickle.

A model file is one ``.npz`` archive of plain arrays plus a JSON header,
written by :func:`save_model` and read by :func:`load_model` (the archive:
:mod:`mklopt.persist._archive`). What goes into it is the business of the
saved object's *codec*, one per saved kind, registered by kind
(:func:`register_codec`) and found along the object's class's bases: the
estimators' codecs live here (``_estimator``, ``_mkl``, ``_boost``, listed
in ``_entries``), outside the estimators' class hierarchy. An object can
also save itself (:class:`Persistent`), as the feature maps a ``storage``
parameter may hold do.

Examples
--------
>>> import os, tempfile
>>> from mklopt import MKLClassifier, datasets
>>> from mklopt.kernels import rbf, linear
>>> from mklopt.persist import save_model, load_model
>>> X, y = datasets.load("sonar")
>>> X_train, X_test, y_train, y_test = datasets.split(X, y, seed=0)
>>> clf = MKLClassifier(kernels=[rbf(4.0), linear()], C=10.0).fit(X_train, y_train)
>>> path = os.path.join(tempfile.mkdtemp(), "sonar.npz")
>>> save_model(clf, path, label="label")
>>> clf2, meta = load_model(path)
>>> bool((clf2.predict(X_test) == clf.predict(X_test)).all())
True
>>> meta["label"]
'label'
"""

# Only NumPy-level modules here: the kernels import Persistent from this
# package, and the estimators' codecs are read on first use (see _codecs).
from ._archive import FORMAT_NAME, FORMAT_VERSION, ModelFormatError, load_model, save_model
from ._codecs import codec_for, register_codec
from ._protocol import Codec, Persistent

__all__ = [
    "save_model", "load_model", "ModelFormatError", "Persistent", "Codec", "register_codec",
    "codec_for", "FORMAT_NAME", "FORMAT_VERSION",
]
