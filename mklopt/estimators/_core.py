"""The estimators' parameter core: one constraint table per class, checked in one place.

Every estimator class declares ``_parameter_constraints``, a dict from each
constructor parameter to what it may be (the vocabulary of
:mod:`mklopt._constraints`), and :meth:`EstimatorCore._validate_params`
checks them all at the start of ``fit``, before any work, with errors
that name the parameter. Parameters the estimators share are declared
once here and merged into each class's table::

    class MKLRegressor(RegressorMixin, _TaskMKL):
        _parameter_constraints = {**MKL_PARAMS, "C": [POSITIVE], ...}

Rules that tie parameters together (``p`` only with a method that takes
it, ``client`` without ``n_jobs``) stay in the code that uses them; the
table holds what each parameter is on its own. A test checks that every
estimator's table and constructor name the same parameters.
"""

from __future__ import annotations

import math
from functools import partial
from numbers import Integral, Real

import numpy as np

from .._constraints import (
    NO_VALIDATION,
    Boolean,
    Callable,
    Check,
    HasMethods,
    InstanceOf,
    Interval,
    Options,
    Registered,
    validate_params,
)
from .._memory import check_max_memory
from .._parallel import check_n_jobs
from ..kernels.bank import check_storage
from ..kernels.psd import PSD_OPTIONS
from ..kernels.sharded import check_client
from ..methods import get_method
from ..tasks import get_oracle
from ._params import KERNEL_GRIDS, KernelSpecs
from ._precomputed import KERNEL_AXES

__all__ = [
    "EstimatorCore",
    "MKL_PARAMS",
    "PRECOMPUTED_PARAMS",
    "NORMALIZE",
    "STANDARDIZE",
    "RUN_PARAMS",
    "STORAGE_PARAMS",
    "POSITIVE",
    "CLASS_WEIGHT",
    "SEED",
    "loss_of",
    "NO_VALIDATION",
]

#: A real number > 0 (``C``, ``tol``).
POSITIVE = Interval(Real, 0.0, None, closed="neither")


def loss_of(task):
    """A ``loss`` parameter: a name registered for ``task`` in :mod:`mklopt.tasks`."""
    return [Registered(partial(get_oracle, task), f"a loss registered for the {task} task")]


#: How the base kernels are scaled on the training set (every estimator).
NORMALIZE = [Options(("diagonal", "trace")), None]
#: Whether the features are standardised; "auto": for the named grids.
STANDARDIZE = [Options(("auto",)), Boolean()]

#: Where the kernels live and how much memory they may take (every estimator).
STORAGE_PARAMS = {
    # The storage registry owns the names (read when fit checks, so a storage
    # registered later counts), and a FeatureMap its own checks.
    "storage": [Check(check_storage, "'auto', a registered storage name or a FeatureMap")],
    "cache_size": [Interval(Real, 0.0, None, help="megabytes"), None],
    "max_memory": [Check(check_max_memory, "a number of bytes > 0"), None],
}

#: How a fit runs and reports (every estimator).
RUN_PARAMS = {
    "time_limit": [Interval(Real, 0.0, None, closed="neither", help="seconds"), None],
    "n_jobs": [Check(check_n_jobs, "None or an int other than 0")],
    "client": [Check(check_client, "a dask.distributed.Client"), None],
    "verbose": [
        Interval(Integral, 0, None,
                 help="0: silent, 1: a line per problem, 2: also a line per oracle call"),
        Boolean(),
    ],
}

#: The MKL estimators' shared parameters (classifier, regressor, one-class and
#: their cross-validated forms), each declared once.
MKL_PARAMS = {
    "kernels": [KernelSpecs(KERNEL_GRIDS)],
    "method": [
        Options(("auto",)),
        Registered(get_method, "a registered method name (e.g. 'level', 'silp', "
                               "'simplemkl', 'mirror', 'lp')"),
        HasMethods(("start", "ask", "tell"), "an outer-method instance with start/ask/tell"),
    ],
    # The methods check the finer rules (a partition of the kernels); an
    # estimator refuses p, groups and elastic_net a method does not take.
    "p": [Interval(Real, 1.0, math.inf, closed="both", help="the Lp norm"), None],
    "groups": [Options(("features",)),
               InstanceOf((list, tuple), "a list of lists of kernel indices"), None],
    "elastic_net": [Interval(Real, 0.0, 1.0), None],
    "tol": [POSITIVE],
    "max_iter": [Interval(Integral, 1, None)],
    "inner_tol": [POSITIVE, None],
    "normalize": NORMALIZE,
    "standardize": STANDARDIZE,
    "weight_threshold": [Interval(Real, 0.0, 1.0, closed="left")],
    "callback": [Callable(help="taking one mklopt.Progress row"), None],
    **STORAGE_PARAMS,
    **RUN_PARAMS,
}

#: A classifier's ``class_weight``: None, a dict from label to weight, or "balanced"
#: (the weights themselves are checked against the classes when ``fit`` starts).
CLASS_WEIGHT = [Options(("balanced",)),
                InstanceOf(dict, "a dict from class label to weight"), None]
#: The inputs of ``kernels="precomputed"`` (MKLClassifier, MKLClassifierCV):
#: names of the kernels, the axis that holds them, and what to do about
#: kernels that are not PSD. Rules that tie them to ``kernels`` are checked
#: with the data (``_precomputed.py``).
PRECOMPUTED_PARAMS = {
    "kernel_names": [InstanceOf((list, tuple), "a list of one name per precomputed kernel"),
                     None],
    "kernel_axis": [Options(KERNEL_AXES, help="0: (n_kernels, n, n); -1: (n, n, n_kernels)")],
    "psd": [Options(PSD_OPTIONS)],
}

#: A seed: None, an int >= 0 or a numpy.random.Generator.
SEED = [None, Interval(Integral, 0, None), InstanceOf(np.random.Generator,
                                                       "a numpy.random.Generator")]


class EstimatorCore:
    """Parameter checking from the class's constraint table.

    A subclass sets ``_parameter_constraints`` to a dict naming every
    constructor parameter (see :mod:`mklopt._constraints`). ``fit`` calls
    :meth:`_validate_params` first.
    """

    _parameter_constraints: dict = {}

    def _validate_params(self):
        """Check every constructor parameter against the table; return them converted.

        Returns
        -------
        dict
            Parameter name -> value as the fit uses it (reals as ``float``,
            integers as ``int``, booleans as ``bool``).

        Raises
        ------
        TypeError, ValueError
            For the first invalid parameter, naming it and what it may be.
        """
        params = {name: getattr(self, name) for name in self._get_param_names()}
        return validate_params(self._parameter_constraints, params, type(self).__name__)
