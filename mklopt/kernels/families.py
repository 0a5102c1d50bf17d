"""Kernel families: one object per family, found by name in one registry.

A *family* is everything mklopt knows about one kind of kernel (Gaussian,
polynomial, linear, or a user's): its name, its parameters and their
checks, how to evaluate a block ``K(X_a, X_b)`` on a feature subset, its
diagonal, its saved form and, optionally, an explicit feature map. A
*spec* is one member of a family on one feature subset (``rbf(2.0)``,
``laplacian(gamma=0.5, features=[0, 3])``); specs are what a bank, an
estimator and a saved model hold.

Every consumer asks the registry, never the spec's class:

* :class:`~mklopt.kernels.KernelFunctions` (and so every storage) groups
  the specs by feature subset and evaluates a family that declares a
  jitted code (:meth:`KernelFamily.jit_code`, the built-in families) in the
  jitted routines, and any other family through its NumPy
  :meth:`KernelFamily.block` and :meth:`KernelFamily.diag`;
* the feature-map storage asks :meth:`KernelFamily.feature_map_rank` and
  :meth:`KernelFamily.feature_map` for an exact map;
* saved models write :meth:`KernelFamily.to_json` under the family's name
  and read it back through :meth:`KernelFamily.spec`;
* the command line parses ``name(arg, key=value, features=[...])`` with
  :func:`parse_kernel`;
* the estimators' kernel names and weight tables read :attr:`KernelFamily.name`.

A new family is one subclass of :class:`KernelFamily` and one call to
:func:`register_kernel_family` (see ``docs/new_kernel.md``).
"""

from __future__ import annotations

import ast
import math

import numpy as np

from .._jit.groups import GAUSSIAN, POLY
from .._registry import Registry
from .._validation import check_int, check_real
from ._monomials import _poly_map_T
from .specs import RBF, Linear, Poly, _check_features, _features_repr

__all__ = [
    "KernelFamily",
    "KernelSpec",
    "KERNEL_FAMILIES",
    "register_kernel_family",
    "get_kernel_family",
    "kernel_family_names",
    "family_of",
    "kernel",
    "parse_kernel",
]

#: Registered kernel families: name -> family object. The ``mklopt.kernels``
#: entry points are read when a name is missing (built-in families are looked
#: up while mklopt imports and on workers); the built-in names are frozen.
KERNEL_FAMILIES: Registry[str, KernelFamily] = Registry(
    "kernel family", plural="families", group="mklopt.kernels", read="miss")

#: Names a family parameter cannot take (the saved form and the spec use them).
_RESERVED = frozenset({"kind", "features", "family", "values"})

#: Rows per block when the default :meth:`KernelFamily.diag` walks a matrix.
_DIAG_ROWS = 256


class KernelSpec:
    """One kernel of a registered user family on a feature subset.

    Made by the family (``family.spec(...)`` or :func:`kernel`), never by
    hand. Hashable and comparable like the built-in specs; the parameters
    read as attributes (``spec.gamma``).

    Parameters
    ----------
    family : str
        The registered family's name.
    values : tuple of (str, object)
        The checked parameter values, in the family's parameter order.
    features : sequence of int or None, default=None
        Distinct non-negative column indices; None means all features.
    """

    __slots__ = ("family", "values", "features")

    def __init__(self, family, values, features=None):
        object.__setattr__(self, "family", family)
        object.__setattr__(self, "values", tuple(values))
        object.__setattr__(self, "features", _check_features(features))

    def __getattr__(self, name):
        # Only called when the slots do not have ``name``: the parameters.
        if not name.startswith("_") and name not in _RESERVED:
            try:
                values = object.__getattribute__(self, "values")
            except AttributeError:
                values = ()
            for key, value in values:
                if key == name:
                    return value
        raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")

    def __setattr__(self, name, value):
        raise AttributeError("a KernelSpec is immutable")

    def __reduce__(self):
        return (KernelSpec, (self.family, self.values, self.features))

    def _key(self):
        return (self.family, self.values, self.features)

    def __eq__(self, other):
        return type(other) is KernelSpec and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.values)
        return f"{self.family}({args}{_features_repr(self.features)})"


class KernelFamily:
    """Base class of a kernel family (subclass it, then :func:`register_kernel_family`).

    A subclass sets :attr:`name` and :attr:`params`, writes :meth:`check`
    and :meth:`block`, and may write :meth:`diag` (faster than the
    default), :meth:`feature_map_rank` with :meth:`feature_map` (an exact
    finite map) and :meth:`to_json` / :meth:`from_json` (parameters that
    are not JSON numbers or strings).

    Attributes
    ----------
    name : str
        Registry key, short and lowercase (``"laplacian"``); also the kind
        written in saved models and the name in the command-line syntax.
    params : tuple of str
        Parameter names, in the order positional arguments fill them.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.spatial.distance import cdist
    >>> class Laplacian(KernelFamily):
    ...     name = "laplacian_doc"
    ...     params = ("gamma",)
    ...     def check(self, gamma):
    ...         return {"gamma": self.check_real(gamma, "gamma", low=0.0, strict_low=True)}
    ...     def block(self, A, B, gamma):
    ...         return np.exp(-gamma * cdist(A, B, "cityblock"))
    ...     def diag(self, A, gamma):
    ...         return np.ones(A.shape[0])
    >>> laplacian = register_kernel_family(Laplacian(), replace=True)
    >>> laplacian(0.5, features=[0, 2])
    laplacian_doc(gamma=0.5, features=[0, 2])
    >>> laplacian(-1.0)
    Traceback (most recent call last):
    ...
    ValueError: gamma must be > 0.0, got -1.0
    """

    name: str = ""
    params: tuple[str, ...] = ()

    #: ``check_real(value, name, *, low=None, high=None, strict_low=False,
    #: strict_high=False)``: ``value`` as a float, or a ``TypeError`` /
    #: ``ValueError`` naming ``name`` (not a number, not finite, out of range).
    check_real = staticmethod(check_real)
    #: ``check_int(value, name, *, low=None, high=None)``: the same for integers.
    check_int = staticmethod(check_int)

    # ------------------------------------------------- declared by a family
    def check(self, **values):
        """Validate and normalise the parameters; return them as a dict.

        Raise ``TypeError`` or ``ValueError`` naming the parameter
        (:attr:`check_real` and :attr:`check_int` do). The default accepts
        anything.
        """
        return values

    def block(self, A, B, **values):
        """The raw kernel between the rows of ``A`` and of ``B``.

        Parameters
        ----------
        A : ndarray of shape (n_a, n_used), float64
            Points, already restricted to the spec's features.
        B : ndarray of shape (n_b, n_used), float64
        **values
            The checked parameters.

        Returns
        -------
        ndarray of shape (n_a, n_b)
            ``kappa(a_i, b_j)``. When each entry is computed from its own
            pair only (as :func:`scipy.spatial.distance.cdist` does), the
            dense bank, the on-the-fly rows and prediction agree exactly.
        """
        raise NotImplementedError(f"kernel family {self.name!r} does not define block()")

    def diag(self, A, **values):
        """``kappa(a_i, a_i)`` for every row of ``A``, shape ``(n_a,)``.

        The default reads the diagonal of :meth:`block` on blocks of rows;
        a family whose diagonal is known (a constant, a norm) should say so.
        """
        n = A.shape[0]
        out = np.empty(n)
        for i0 in range(0, n, _DIAG_ROWS):
            a = A[i0 : i0 + _DIAG_ROWS]
            out[i0 : i0 + a.shape[0]] = np.diagonal(np.asarray(self.block(a, a, **values)))
        return out

    def feature_map_rank(self, n_used, **values):
        """Columns of the exact feature map on ``n_used`` features, or None (no finite map)."""
        return None

    def feature_map(self, A, **values):
        """An exact map ``Phi`` with ``kappa(a, b) = Phi(a) . Phi(b)``, shape ``(n_a, rank)``.

        Only called when :meth:`feature_map_rank` is not None.
        """
        raise NotImplementedError(f"kernel family {self.name!r} has no feature map")

    def to_json(self, values):
        """The parameters as a JSON object (a dict of numbers, strings, lists)."""
        return dict(values)

    def from_json(self, obj):
        """The inverse of :meth:`to_json`: the keyword arguments of :meth:`spec`."""
        return dict(obj)

    def jit_code(self, spec):
        """``(kind, param, offset)`` of the jitted routines, or None (the NumPy path).

        Only the built-in families have one; see :mod:`mklopt._jit.groups`.
        """
        return None

    # ------------------------------------------------------------- provided
    def spec(self, *args, features=None, **kwargs):
        """A checked spec of this family.

        Parameters
        ----------
        *args, **kwargs
            The parameters, positionally in the order of :attr:`params` or
            by name; one more positional argument is ``features``.
        features : sequence of int or None, default=None
            Distinct non-negative column indices; None means all features.

        Raises
        ------
        TypeError, ValueError
            For a missing, unknown or invalid parameter (the message names it).
        """
        if len(args) == len(self.params) + 1 and features is None:
            # As rbf(sigma, features): the features may follow the parameters.
            *args, features = args
        if len(args) > len(self.params):
            raise TypeError(
                f"{self.name}() takes {len(self.params)} parameter(s) "
                f"({', '.join(self.params) or 'none'}), got {len(args)} positional"
            )
        values = dict(zip(self.params, args))
        for key, value in kwargs.items():
            if key not in self.params:
                raise TypeError(
                    f"{self.name}() got an unknown parameter {key!r}; its parameters are "
                    f"{', '.join(self.params) or 'none'} (and features)"
                )
            if key in values:
                raise TypeError(f"{self.name}() got parameter {key!r} twice")
            values[key] = value
        missing = [p for p in self.params if p not in values]
        if missing:
            raise TypeError(f"{self.name}() is missing parameter(s) {', '.join(missing)}")
        checked = self.check(**values)
        if not isinstance(checked, dict) or set(checked) != set(self.params):
            raise TypeError(
                f"{type(self).__name__}.check must return a dict of the parameters "
                f"{list(self.params)}"
            )
        return self._make(checked, features)

    __call__ = spec

    def _make(self, values, features):
        """The spec object (built-in families return their own classes)."""
        return KernelSpec(self.name, tuple((p, values[p]) for p in self.params), features)

    def values(self, spec):
        """The parameters of ``spec`` as a dict, in :attr:`params` order."""
        return {p: getattr(spec, p) for p in self.params}

    def is_spec(self, spec):
        """Whether ``spec`` belongs to this family."""
        return type(spec) is KernelSpec and spec.family == self.name

    def __repr__(self):
        return f"<kernel family {self.name!r} ({', '.join(self.params) or 'no parameters'})>"


# --------------------------------------------------------------------------
# the registry
# --------------------------------------------------------------------------
def register_kernel_family(family, replace=False):
    """Make a kernel family available by its name; return it.

    Parameters
    ----------
    family : KernelFamily
        An instance (a subclass is instantiated with no arguments).
    replace : bool, default=False
        Let a name already taken by another family be taken over (re-running
        a notebook cell that defines and registers a family).

    Returns
    -------
    KernelFamily
        The registered family; calling it builds specs
        (``laplacian = register_kernel_family(Laplacian())``, then
        ``laplacian(0.5)``).

    Raises
    ------
    TypeError
        If ``family`` is not a :class:`KernelFamily` or its :attr:`~KernelFamily.name`
        or :attr:`~KernelFamily.params` are malformed.
    ValueError
        If the name is taken and ``replace`` is false, or a parameter uses a
        reserved name.
    """
    if isinstance(family, type) and issubclass(family, KernelFamily):
        family = family()
    if not isinstance(family, KernelFamily):
        raise TypeError(f"family must be a KernelFamily, got {type(family).__name__}")
    name = family.name
    if not isinstance(name, str) or not name.isidentifier():
        raise TypeError(f"family.name must be an identifier string, got {name!r}")
    params = family.params
    if not isinstance(params, tuple) or not all(
        isinstance(p, str) and p.isidentifier() and not p.startswith("_") for p in params
    ):
        raise TypeError(f"family.params must be a tuple of identifier strings, got {params!r}")
    bad = sorted(_RESERVED.intersection(params))
    if bad or len(set(params)) != len(params):
        raise ValueError(
            f"family.params of {name!r} must be distinct and avoid the reserved names "
            f"{sorted(_RESERVED)}, got {params!r}"
        )
    return KERNEL_FAMILIES.register(name, family, replace)


def kernel_family_names():
    """Registered family names (entry points included), in registration order.

    Examples
    --------
    >>> kernel_family_names()[:3]
    ['rbf', 'poly', 'linear']
    """
    return KERNEL_FAMILIES.names()


def get_kernel_family(name):
    """The family registered under ``name`` (entry points included: :mod:`mklopt.plugins`).

    Parameters
    ----------
    name : str
        A registered family name, such as ``"rbf"``.

    Returns
    -------
    KernelFamily

    Raises
    ------
    ValueError
        If no family has that name; the message lists the registered ones.

    Examples
    --------
    >>> get_kernel_family("poly").params
    ('degree',)
    """
    return KERNEL_FAMILIES.get(name)


def family_of(spec):
    """The registered family of a spec, or None when ``spec`` is not a kernel spec.

    Parameters
    ----------
    spec : object
        A built-in spec (``RBF``, ``Poly``, ``Linear``), a :class:`KernelSpec`,
        or anything else.

    Returns
    -------
    KernelFamily or None

    Raises
    ------
    ValueError
        For a :class:`KernelSpec` whose family is not registered in this
        process (after reading the ``mklopt.kernels`` entry points), such as
        a spec sent to a Dask worker that never imported its family.
    """
    fam = _BY_TYPE.get(type(spec))
    if fam is not None:
        return fam
    if type(spec) is KernelSpec:
        fam = KERNEL_FAMILIES.get(spec.family, None)
        if fam is None:
            known = ", ".join(repr(n) for n in KERNEL_FAMILIES)
            raise ValueError(
                f"kernel spec {spec!r} is of family {spec.family!r}, which is not registered "
                f"in this process (registered families: {known}); import or register it first"
            )
        return fam
    return None


def kernel(name, *args, features=None, **kwargs):
    """A spec of the family registered under ``name``.

    Parameters
    ----------
    name : str
        A registered family name.
    *args, **kwargs
        The family's parameters (see :meth:`KernelFamily.spec`).
    features : sequence of int or None, default=None
        Distinct non-negative column indices; None means all features.

    Returns
    -------
    spec
        ``RBF``, ``Poly`` or ``Linear`` for the built-in families, a
        :class:`KernelSpec` otherwise.

    Raises
    ------
    ValueError
        For an unknown family (the message lists the registered ones) or an
        invalid parameter value.
    TypeError
        For a missing or unknown parameter.

    Examples
    --------
    >>> kernel("rbf", 2.0, features=[1])
    rbf(sigma=2.0, features=[1])
    >>> kernel("poly", degree=3)
    poly(degree=3)
    """
    return get_kernel_family(name).spec(*args, features=features, **kwargs)


def parse_kernel(text):
    """A spec from its text form ``name(arg, ..., key=value, ..., features=[...])``.

    The syntax of the command line's ``--kernels``: a registered family's
    name and its parameters as Python literals; ``linear`` alone needs no
    parentheses.

    Raises
    ------
    ValueError
        If the text is not of that form, or the family is unknown (the
        message lists the registered ones) or refuses the parameters.

    Examples
    --------
    >>> parse_kernel("rbf(sigma=0.5, features=[0, 3])")
    rbf(sigma=0.5, features=[0, 3])
    >>> parse_kernel("linear")
    linear()
    """
    if not isinstance(text, str):
        raise TypeError(f"a kernel must be given as text, got {type(text).__name__}")
    src = text.strip()
    try:
        node = ast.parse(src, mode="eval").body
    except SyntaxError:
        node = None
    if isinstance(node, ast.Name):
        name, args, kwargs = node.id, [], {}
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        name = node.func.id
        try:
            args = [ast.literal_eval(a) for a in node.args]
            kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg}
        except ValueError:
            raise ValueError(
                f"kernel {text!r}: parameters must be literal numbers, strings or lists"
            ) from None
        if any(k.arg is None for k in node.keywords):
            raise ValueError(f"kernel {text!r}: '**' is not allowed")
    else:
        raise ValueError(
            f"kernel {text!r} is not of the form name(value, key=value, features=[...]); "
            f"registered families: {', '.join(kernel_family_names())}"
        )
    try:
        return kernel(name, *args, **kwargs)
    except TypeError as exc:
        raise ValueError(f"kernel {text!r}: {exc}") from None


# --------------------------------------------------------------------------
# the built-in families (evaluated by the jitted routines; the NumPy block
# and diag below are their reference and serve nothing on the fast path)
# --------------------------------------------------------------------------
def _sq_dists(A, B):
    d2 = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2.0 * (A @ B.T)
    return np.maximum(d2, 0.0)


class _Gaussian(KernelFamily):
    name = "rbf"
    params = ("sigma",)

    def check(self, sigma):
        return {"sigma": check_real(sigma, "sigma", low=0.0, strict_low=True)}

    def _make(self, values, features):
        return RBF(values["sigma"], features)

    def is_spec(self, spec):
        return type(spec) is RBF

    def block(self, A, B, sigma):
        return np.exp(-_sq_dists(A, B) / (2.0 * sigma * sigma))

    def diag(self, A, sigma):
        return np.ones(A.shape[0])

    def to_json(self, values):
        return {"sigma": float(values["sigma"])}

    def from_json(self, obj):
        out = dict(obj)
        if "sigma" in out:
            if isinstance(out["sigma"], bool) or not isinstance(out["sigma"], (int, float)):
                raise TypeError("sigma must be a number")
            out["sigma"] = float(out["sigma"])
        return out

    def jit_code(self, spec):
        return GAUSSIAN, spec.sigma, 0.0


class _Polynomial(KernelFamily):
    name = "poly"
    params = ("degree",)

    def check(self, degree):
        return {"degree": check_int(degree, "degree", low=1)}

    def _make(self, values, features):
        return Poly(values["degree"], features)

    def is_spec(self, spec):
        return type(spec) is Poly

    def block(self, A, B, degree):
        return (A @ B.T + 1.0) ** degree

    def diag(self, A, degree):
        return ((A * A).sum(1) + 1.0) ** degree

    def feature_map_rank(self, n_used, degree):
        return math.comb(n_used + degree, degree)

    def feature_map(self, A, degree):
        out = np.empty((self.feature_map_rank(A.shape[1], degree), A.shape[0]))
        _poly_map_T(A, degree, out)
        return out.T

    def to_json(self, values):
        return {"degree": int(values["degree"])}

    def jit_code(self, spec):
        return POLY, float(spec.degree), 1.0


class _Linear(KernelFamily):
    name = "linear"
    params = ()

    def _make(self, values, features):
        return Linear(features)

    def is_spec(self, spec):
        return type(spec) is Linear

    def block(self, A, B):
        return A @ B.T

    def diag(self, A):
        return (A * A).sum(1)

    def feature_map_rank(self, n_used):
        return n_used

    def feature_map(self, A):
        return A

    def jit_code(self, spec):
        return POLY, 1.0, 0.0


# The built-in spec classes, found by type (before any name lookup).
_BY_TYPE: dict[type, KernelFamily] = {}
for _fam, _type in ((_Gaussian(), RBF), (_Polynomial(), Poly), (_Linear(), Linear)):
    _BY_TYPE[_type] = register_kernel_family(_fam)
KERNEL_FAMILIES.freeze(*KERNEL_FAMILIES)
del _fam, _type
