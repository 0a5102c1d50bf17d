"""The built-in learning tasks: how ``y`` becomes the MKL problems of a fit.

Each entry is a :class:`mklopt.tasks.TaskEntry`, registered in
:data:`mklopt.tasks.TASKS` when :mod:`mklopt.estimators` is imported:

* ``"classification"``: labels become class indices, and a fit solves
  one binary problem per pair of classes (one-vs-one; one problem for two
  classes), each pair started from the weights of the pairs sharing a
  class with it (:func:`~mklopt.estimators._ovo.star_parents`); decisions
  combine by majority vote (:func:`~mklopt.estimators._ovo.ovo_vote`) and
  models are scored by accuracy;
* ``"regression"``: one problem on all points and their real targets,
  scored by R^2;
* ``"one-class"``: one problem on all points without targets.

A user's task is one :class:`~mklopt.tasks.TaskEntry` passed to
:func:`mklopt.tasks.register_task`, with its oracles registered under the
task's name (:func:`mklopt.tasks.register_oracle`).
"""

from __future__ import annotations

from itertools import combinations

import numpy as np

from ..tasks import Problem, TaskEntry, register_task
from ._checks import check_targets, check_y
from ._ovo import class_indices, ovo_vote, pair_label, pair_rows, star_parents

__all__ = ["CLASSIFICATION", "REGRESSION", "ONE_CLASS", "pairs_of"]


def pairs_of(problems):
    """The class indices of one-vs-one problems, shape (n_problems, 2)."""
    return np.array([p.classes for p in problems], dtype=np.int64).reshape(-1, 2)


def _class_targets(y, n_samples, where):
    y = check_y(y, n_samples, where)
    return class_indices(y, where)


def _pair_problems(y_idx, classes, n_samples, by_class=False):
    pairs = np.array(list(combinations(range(len(classes)), 2)), dtype=np.int64)
    rows = pair_rows(y_idx, pairs, by_class=by_class)
    one = len(pairs) == 1
    return [Problem(r, np.where(y_idx[r] == j, 1.0, -1.0), (int(i), int(j)),
                    "" if one else pair_label(classes, i, j))
            for r, (i, j) in zip(rows, pairs, strict=True)]


def _vote(decisions, pairs, classes):
    if len(classes) == 2:
        return decisions[:, 0]
    return ovo_vote(decisions, pairs, len(classes))


def _star(problems):
    return star_parents(pairs_of(problems))


CLASSIFICATION = register_task(TaskEntry(
    "classification", _class_targets, _pair_problems, signed=True, combine=_vote,
    parents=_star, scoring="accuracy"))


def _real_targets(y, n_samples, where):
    return None, check_targets(y, n_samples, where)


def _one_problem(t, labels, n_samples, by_class=False):
    return [Problem(np.arange(n_samples, dtype=np.int64), t)]


REGRESSION = register_task(TaskEntry(
    "regression", _real_targets, _one_problem, scoring="r2"))


def _no_targets(y, n_samples, where):
    # As every scikit-learn outlier detector, y is accepted and ignored.
    return None, None


ONE_CLASS = register_task(TaskEntry("one-class", _no_targets, _one_problem))
