"""The estimators' entries: which codec saves which estimator class.

One line per saved estimator. A subclass is saved by its nearest base's
codec; a user's own kind registers its codec with
:func:`mklopt.persist.register_codec`.
"""

from ..estimators import MKBoostClassifier, MKLClassifier, MKLOneClass, MKLRegressor
from ._boost import BoostCodec
from ._mkl import ClassifierCodec, OneClassCodec, RegressorCodec

ENTRIES = (
    (MKLClassifier, ClassifierCodec()),
    (MKLRegressor, RegressorCodec()),
    (MKLOneClass, OneClassCodec()),
    (MKBoostClassifier, BoostCodec()),
)
