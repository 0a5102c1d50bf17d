"""The one CSV reader of mklopt: numeric tables with a header and a label column.

The bundled data sets (:mod:`mklopt.datasets`) and the command line
(``mklopt fit`` / ``mklopt predict``) both read their tables here. A table
has a header row, numeric feature columns and at most one label column,
which may hold numbers or names. Files may be gzipped: the reader looks at
the first two bytes, not at the file name.

The values are parsed by :func:`numpy.loadtxt` in one pass (its C parser
reads letter's 20,000 rows in well under a second). Only when that pass
fails is the file read again with the standard library's :mod:`csv` module,
to say on which line and in which column the problem lies.
"""

from __future__ import annotations

import csv
import gzip
import io
import os
import re
import warnings
import zlib

import numpy as np

__all__ = ["CSVError", "read_csv", "class_labels"]

_GZIP_MAGIC = b"\x1f\x8b"
_SPACE_LINES = re.compile(r"^[ \t\f\v]+$", re.MULTILINE)


class CSVError(ValueError):
    """A table that cannot be read; the message names the file and the line."""


def _read_text(source, where):
    """Whole decoded text of ``source``, gunzipped if need be, newlines as ``\\n``."""
    is_path = isinstance(source, (str, os.PathLike))
    if is_path and os.path.isdir(source):
        raise CSVError(f"{where} is a directory, not a CSV file")
    if is_path and not os.path.isfile(source):
        raise CSVError(f"no such file: {where}")
    try:
        # a path, or an importlib.resources Traversable (a bundled data file)
        fh = open(source, "rb") if is_path else source.open("rb")
        with fh:
            raw = fh.read()
        if raw[:2] == _GZIP_MAGIC:
            raw = gzip.decompress(raw)
        text = raw.decode("utf-8-sig")
    except (OSError, EOFError, zlib.error, UnicodeDecodeError) as exc:
        raise CSVError(f"cannot read {where} as CSV: {exc}") from None
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    # A line of spaces is a blank line, which both parsers skip.
    return _SPACE_LINES.sub("", text)


def _header(text, where):
    """Column names and the number of lines up to and including the header."""
    reader = csv.reader(io.StringIO(text))
    try:
        for row in reader:
            if row and any(c.strip() for c in row):
                return [c.strip() for c in row], reader.line_num
    except csv.Error as exc:
        raise CSVError(f"cannot read {where} as CSV: {exc}") from None
    raise CSVError(f"{where} is empty")


def _locate_error(text, skip, header, where):
    """Read the body again, cell by cell, and raise for its first bad cell.

    Returns only if every cell is fine (then the caller reports numpy's own
    message, which should not happen).
    """
    reader = csv.reader(io.StringIO(text))
    try:
        for row in reader:
            if reader.line_num <= skip or not row:
                continue
            line = reader.line_num
            if len(row) != len(header):
                raise CSVError(
                    f"{where}, line {line}: {len(row)} fields, but the header has {len(header)}"
                )
            for name, cell in zip(header, row):
                if name is None:  # the label column
                    continue
                value = cell.strip()
                if not value:
                    raise CSVError(
                        f"{where}, line {line}, column {name!r} is empty; feature columns "
                        "must be numeric"
                    )
                try:
                    float(value)
                except ValueError:
                    raise CSVError(
                        f"{where}, line {line}, column {name!r} is not a number: {value!r}; "
                        "feature columns must be numeric"
                    ) from None
    except csv.Error as exc:
        raise CSVError(f"cannot read {where} as CSV: {exc}") from None


def _row_lines(text, skip):
    """File line number of every data row (blank lines are not rows)."""
    reader = csv.reader(io.StringIO(text))
    return [reader.line_num for row in reader if row and reader.line_num > skip]


def read_csv(source, *, label="label", require_label=True, features=None, where=None):
    """Read a numeric table with a header row and an optional label column.

    Parameters
    ----------
    source : str, os.PathLike or importlib.resources.abc.Traversable
        The file, plain or gzipped (recognised by its first bytes), UTF-8
        with or without a byte-order mark. Fields may be quoted as the
        :mod:`csv` module quotes them; blank lines are skipped.
    label : str or None, default="label"
        Name of the label column; ``None`` reads every column as a feature.
    require_label : bool, default=True
        If false, a table without the ``label`` column is read as features
        only (``labels`` is then None).
    features : sequence of str, optional
        Expected feature column names, in order (a model's training
        columns); any difference is an error.
    where : str, optional
        How to name the file in messages; by default ``str(source)``.

    Returns
    -------
    X : ndarray of shape (n_rows, n_features), float64
        The feature columns, finite, C-contiguous.
    labels : ndarray of shape (n_rows,), str, or None
        The label column as text with surrounding spaces removed; see
        :func:`class_labels` to turn it into class labels.
    feature_names : list of str
        Names of the feature columns, in file order.

    Raises
    ------
    CSVError
        For a missing, unreadable or empty file, a header without data rows,
        repeated column names, a missing label column, feature columns other
        than ``features``, a row with the wrong number of fields, and an
        empty, non-numeric or non-finite feature value or an empty label.
        Cell errors give the file's line number and the column name.
    """
    where = str(source) if where is None else where
    text = _read_text(source, where)
    header, skip = _header(text, where)
    if len(set(header)) != len(header):
        raise CSVError(f"{where}: repeated column names in the header")

    j = None
    if label is not None and label in header:
        j = header.index(label)
    elif label is not None and require_label:
        cols = ", ".join(header[:8]) + (f", ... ({len(header)} columns)" if len(header) > 8 else "")
        raise CSVError(f"{where}: no column named {label!r} (columns: {cols})")
    names = [h for i, h in enumerate(header) if i != j]
    if not names:
        raise CSVError(f"{where}: no feature columns besides the label")
    if features is not None and names != list(features):
        missing = [f for f in features if f not in names]
        extra = [f for f in names if f not in features]
        if missing or extra:
            what = "; ".join(
                f"{kind} {', '.join(cols[:5])}{', ...' if len(cols) > 5 else ''}"
                for kind, cols in (("missing", missing), ("unexpected", extra))
                if cols
            )
        else:
            what = "the same columns in another order"
        raise CSVError(f"{where}: feature columns differ from the model's ({what})")

    # One structured row type reads every column in one pass: runs of
    # feature columns as float sub-arrays, the label as a Python string.
    # Without `usecols`, loadtxt also insists that every row has exactly
    # len(header) fields.
    fields, parts = [], []
    start = 0
    for stop in ([j] if j is not None else []) + [len(header)]:
        if stop > start:
            fields.append((f"x{start}", np.float64, (stop - start,)))
            parts.append(f"x{start}")
        if stop == j:
            fields.append(("label", object))
        start = stop + 1
    try:
        with warnings.catch_warnings():
            # loadtxt warns about blank lines and about a body without rows;
            # the first are fine and the second is reported below.
            warnings.simplefilter("ignore", UserWarning)
            table = np.loadtxt(
                io.StringIO(text),
                dtype=np.dtype(fields),
                delimiter=",",
                comments=None,
                quotechar='"',
                skiprows=skip,
                ndmin=1,
            )
    except ValueError as exc:
        _locate_error(text, skip, [None if i == j else h for i, h in enumerate(header)], where)
        raise CSVError(f"cannot read {where} as CSV: {exc}") from None
    if table.shape[0] == 0:
        raise CSVError(f"{where} has a header but no data rows")
    X = np.ascontiguousarray(
        np.hstack([table[p] for p in parts]) if len(parts) > 1 else table[parts[0]]
    )
    if not np.all(np.isfinite(X)):
        i, c = np.argwhere(~np.isfinite(X))[0]
        line = _row_lines(text, skip)[i]
        raise CSVError(f"{where}, line {line}, column {names[c]!r}: NaN or infinite value")
    labels = None
    if j is not None:
        labels = np.char.strip(table["label"].astype(str))
        empty = labels == ""
        if np.any(empty):
            line = _row_lines(text, skip)[np.argmax(empty)]
            raise CSVError(f"{where}, line {line}: the label column {label!r} is empty")
    return X, labels, names


def class_labels(labels, *, where="the file", label="label"):
    """Class labels from the text of a label column.

    Parameters
    ----------
    labels : ndarray of shape (n_rows,), str
        A label column as :func:`read_csv` returns it.
    where, label : str
        The file and the column, for the message.

    Returns
    -------
    ndarray of shape (n_rows,)
        int64 when every label is an integer (``1``, ``-1``, ``2.0``),
        otherwise the labels as strings (class names).

    Raises
    ------
    CSVError
        If the labels are numbers but not all integers (a regression target
        is not a class label).
    """
    try:
        values = labels.astype(np.float64)
    except ValueError:
        return labels
    if not (np.all(np.isfinite(values)) and np.all(values == np.round(values))):
        raise CSVError(
            f"{where}: the label column {label!r} holds non-integer numbers; it must "
            "hold class labels (integers or names)"
        )
    return values.astype(np.int64)
