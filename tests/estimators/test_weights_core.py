"""Class and sample weights as per-sample bounds (``mklopt.estimators._weights``)."""

import numpy as np
import pytest
from sklearn.utils.class_weight import compute_class_weight

from mklopt.estimators._weights import check_sample_weight, class_weight_vector, sample_bounds


@pytest.mark.parametrize("labels", [np.array([0, 0, 0, 1, 2, 2]),
                                    np.array(["b", "a", "a", "c", "c", "c", "c"])])
def test_balanced_and_dict_weights_are_scikit_learns(labels):
    classes, y_idx = np.unique(labels, return_inverse=True)
    np.testing.assert_allclose(class_weight_vector("balanced", classes, y_idx),
                               compute_class_weight("balanced", classes=classes, y=labels))
    cw = {classes[0].item(): 3.0, classes[2].item(): 0.5}
    np.testing.assert_allclose(class_weight_vector(cw, classes, y_idx),
                               compute_class_weight(cw, classes=classes, y=labels))


def test_bounds_multiply_C_sample_and_class_weights():
    classes, y_idx = np.array([-1, 1]), np.array([0, 1, 1, 0])
    s = np.array([1.0, 2.0, 0.0, 0.5])
    b = sample_bounds(2.0, classes, y_idx, {1: 3.0}, s)
    np.testing.assert_allclose(b, [2.0, 12.0, 0.0, 1.0])
    assert sample_bounds(2.0, classes, y_idx) == 2.0  # no weights: the scalar C
    with pytest.raises(ValueError, match=r"no sample of positive weight in class\(es\) \[1\]"):
        sample_bounds(1.0, classes, y_idx, {1: 0.0})


@pytest.mark.parametrize("sw, err, match", [
    ([1.0, -1.0, 1.0], ValueError, "sample_weight must be >= 0 for every sample, got -1 at sample 1"),
    ([1.0, np.nan, 1.0], ValueError, "sample_weight contains NaN"),
    ([1.0, 1.0], ValueError, r"sample_weight must have one weight per sample, shape \(3,\)"),
    (np.ones((3, 1)), ValueError, "sample_weight must have one weight per sample"),
    ([0.0, 0.0, 0.0], ValueError, "sample_weight is zero for every sample"),
    (["a", "b", "c"], TypeError, "sample_weight must be a number or an array"),
    (True, TypeError, "sample_weight must be numbers"),
])
def test_bad_sample_weight_names_the_argument(sw, err, match):
    with pytest.raises(err, match=match):
        check_sample_weight(sw, 3)


@pytest.mark.parametrize("cw, err, match", [
    ("balance", ValueError, "class_weight must be None, a dict or 'balanced'"),
    ([1.0, 2.0], TypeError, "class_weight must be None, a dict"),
    ({0: -1.0}, ValueError, r"class_weight\[0\] must be a finite number >= 0"),
    ({0: float("nan")}, ValueError, r"class_weight\[0\] must be a finite number >= 0"),
    ({0: 1.0, 7: 2.0}, ValueError, r"the classes \[1\] are not in class_weight"),
])
def test_bad_class_weight_names_the_argument(cw, err, match):
    with pytest.raises(err, match=match):
        class_weight_vector(cw, np.array([0, 1]), np.array([0, 1, 1]))
