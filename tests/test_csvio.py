"""The CSV reader shared by the bundled data sets and the command line."""

import gzip

import numpy as np
import pytest

from mklopt._csvio import CSVError, class_labels, read_csv

TABLE = "a,b,label\n1,2.5,x\n-3,4e1,y\n"


def _write(tmp_path, text, name="t.csv", compress=False):
    data = text.encode("utf-8")
    path = tmp_path / name
    path.write_bytes(gzip.compress(data) if compress else data)
    return path


def test_reads_features_labels_and_names(tmp_path):
    X, labels, names = read_csv(_write(tmp_path, TABLE))
    np.testing.assert_array_equal(X, [[1.0, 2.5], [-3.0, 40.0]])
    assert X.dtype == np.float64 and X.flags.c_contiguous
    assert labels.tolist() == ["x", "y"] and labels.dtype.kind == "U"
    assert names == ["a", "b"]


@pytest.mark.parametrize(
    "text",
    [
        "\ufeffa,b,label\r\n1,2.5,x\r\n\r\n-3,4e1,y\r\n",  # byte-order mark, CRLF, blank line
        "\n\na , b,label\n\n1, 2.5 ,x\n   \n-3,4e1, y \n\n",  # blank and spaces-only lines
        '"a","b","label"\n"1",2.5,"x"\n-3,"4e1",y\n',  # quoted fields
    ],
)
def test_layout_variants_read_the_same(tmp_path, text):
    expected = read_csv(_write(tmp_path, TABLE, "plain.csv"))
    got = read_csv(_write(tmp_path, text))
    np.testing.assert_array_equal(got[0], expected[0])
    assert got[1].tolist() == expected[1].tolist() and got[2] == expected[2]


def test_gzip_is_recognised_by_content_not_name(tmp_path):
    plain = read_csv(_write(tmp_path, TABLE))
    for name in ("t.csv.gz", "t2.csv"):
        X, labels, names = read_csv(_write(tmp_path, TABLE, name, compress=True))
        np.testing.assert_array_equal(X, plain[0])
        assert labels.tolist() == plain[1].tolist() and names == plain[2]


@pytest.mark.parametrize("column", [0, 1, 2])
def test_label_column_anywhere(tmp_path, column):
    cols = [["f0", "1", "2"], ["f1", "3", "4"]]
    cols.insert(column, ["label", "p", "q"])
    text = "\n".join(",".join(row) for row in zip(*cols)) + "\n"
    X, labels, names = read_csv(_write(tmp_path, text))
    np.testing.assert_array_equal(X, [[1.0, 3.0], [2.0, 4.0]])
    assert labels.tolist() == ["p", "q"] and names == ["f0", "f1"]


def test_quoted_label_with_a_comma(tmp_path):
    _, labels, _ = read_csv(_write(tmp_path, 'a,label\n1,"soil, red"\n2,"say ""hi"""\n'))
    assert labels.tolist() == ["soil, red", 'say "hi"']


def test_without_label(tmp_path):
    path = _write(tmp_path, "a,b\n1,2\n3,4\n")
    X, labels, names = read_csv(path, require_label=False)
    assert labels is None and names == ["a", "b"] and X.shape == (2, 2)
    with pytest.raises(CSVError, match="no column named 'label'"):
        read_csv(path)


def test_all_columns_as_features(tmp_path):
    X, labels, names = read_csv(_write(tmp_path, "a,label\n1,2\n3,4\n"), label=None)
    assert labels is None and names == ["a", "label"]
    np.testing.assert_array_equal(X, [[1.0, 2.0], [3.0, 4.0]])


def test_expected_feature_columns(tmp_path):
    path = _write(tmp_path, TABLE)
    assert read_csv(path, features=["a", "b"])[2] == ["a", "b"]
    with pytest.raises(CSVError, match="another order"):
        read_csv(path, features=["b", "a"])
    with pytest.raises(CSVError, match="missing c; unexpected b"):
        read_csv(path, features=["a", "c"])


@pytest.mark.parametrize(
    "text, message",
    [
        # line numbers are the file's, blank lines included
        ("a,b,label\n1,2,x\n\n1,oops,y\n", "line 4, column 'b' is not a number: 'oops'"),
        ("a,b,label\n1,,x\n", "line 2, column 'b' is empty"),
        ("a,b,label\n1,2,x\n\n1,2\n", "line 4: 2 fields, but the header has 3"),
        ("a,b,label\n1,2,x\n1,2,x,4\n", "line 3: 4 fields, but the header has 3"),
        ("a,b,label\n\n1,2,x\n1,inf,y\n", "line 4, column 'b': NaN or infinite value"),
        ("a,b,label\n1,2,x\n\n1,2, \n", "line 4: the label column 'label' is empty"),
        ("", "is empty"),
        ("\n  \n", "is empty"),
        ("a,b,label\n\n", "has a header but no data rows"),
        ("a,a,label\n1,2,x\n", "repeated column names"),
        ("label\nx\n", "no feature columns"),
    ],
)
def test_errors_name_the_line_and_column(tmp_path, text, message):
    with pytest.raises(CSVError, match="t.csv") as info:
        read_csv(_write(tmp_path, text))
    assert message in str(info.value)


def test_unreadable_files(tmp_path):
    with pytest.raises(CSVError, match="no such file"):
        read_csv(tmp_path / "missing.csv")
    with pytest.raises(CSVError, match="is a directory"):
        read_csv(tmp_path)
    (tmp_path / "bin.csv").write_bytes(bytes(range(256)))
    with pytest.raises(CSVError, match="cannot read"):
        read_csv(tmp_path / "bin.csv")
    (tmp_path / "bad.gz").write_bytes(b"\x1f\x8b not really gzip")
    with pytest.raises(CSVError, match="cannot read"):
        read_csv(tmp_path / "bad.gz")
    assert issubclass(CSVError, ValueError)


def test_class_labels():
    assert class_labels(np.array(["1", "-1", "2.0"])).tolist() == [1, -1, 2]
    assert class_labels(np.array(["1", "-1"])).dtype == np.int64
    names = class_labels(np.array(["cat", "1"]))
    assert names.tolist() == ["cat", "1"] and names.dtype.kind == "U"
    with pytest.raises(CSVError, match="column 'y' holds non-integer numbers"):
        class_labels(np.array(["0.5", "1"]), label="y")
    with pytest.raises(CSVError, match="non-integer"):
        class_labels(np.array(["nan", "1"]))
