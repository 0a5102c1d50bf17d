"""Named views end to end, channels, psd= and samples-first stacks (issue 44)."""

import warnings

import numpy as np
import pytest

from mklopt import KernelBank, KernelStack, MKLClassifier, MKLClassifierCV
from mklopt.kernels import (
    channel_views,
    feature_views,
    flatten_channels,
    linear,
    rbf,
)
from mklopt.kernels import psd as psd_mod
from mklopt.kernels.columns import resolve_specs
from mklopt.persist import load_model, save_model

pd = pytest.importorskip("pandas")

COLS = ["lipid_a", "lipid_b", "lipid_c", "gene_1", "gene_2", "gene_3", "gene_4"]


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _data(n=90, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, len(COLS)))
    y = np.digitize(X[:, 0] + X[:, 4], [-0.6, 0.6])  # three classes
    return pd.DataFrame(X, columns=COLS), y


VIEWS = {"lipid": ["lipid_a", "lipid_b", "lipid_c"], "gene": slice(3, None)}
SPECS = [rbf(1.0), linear()]


def test_named_views_match_the_same_kernels_by_index():
    df, y = _data()
    named = MKLClassifier(kernels=feature_views(VIEWS, SPECS), C=3.0).fit(df, y)
    plain = MKLClassifier(kernels=[rbf(1.0, [0, 1, 2]), linear([0, 1, 2]),
                                   rbf(1.0, [3, 4, 5, 6]), linear([3, 4, 5, 6])],
                          C=3.0).fit(df.to_numpy(), y)
    np.testing.assert_array_equal(named.weights_, plain.weights_)
    assert named.kernel_specs_ == plain.kernel_specs_
    assert named.kernel_names_ == ["rbf(1)[lipid]", "linear[lipid]", "rbf(1)[gene]",
                                   "linear[gene]"]
    assert named.kernel_views_ == ["lipid", "lipid", "gene", "gene"]
    # without view names: the DataFrame's columns, then the indices
    assert plain.kernel_names_[2] == "rbf(1)[f3..f6 (4)]"
    cols = MKLClassifier(kernels=[rbf(1.0, features=["gene_2", "lipid_a"])]).fit(df, y)
    assert cols.kernel_names_ == ["rbf(1)[gene_2,lipid_a]"]
    assert cols.kernel_specs_[0].features == (4, 0)


def test_names_reach_the_table_the_saved_model_and_its_reload(tmp_path):
    df, y = _data()
    clf = MKLClassifier(kernels=feature_views(VIEWS, SPECS), C=3.0).fit(df, y)
    table = clf.kernel_weights_
    assert list(dict.fromkeys(table["view"])) == ["lipid", "gene"]
    W = np.atleast_2d(clf.weights_)
    for v in ("lipid", "gene"):
        ks = [k for k, s in enumerate(clf.kernel_views_) if s == v]
        assert table["weight"][table["view"] == v].sum() == pytest.approx(
            W[:, ks].sum(axis=1).mean())
    path = tmp_path / "m.npz"
    save_model(clf, path)
    back, meta = load_model(path)
    assert meta["kernel_names"] == clf.kernel_names_
    assert back.kernel_names_ == clf.kernel_names_
    assert list(back.kernels) == ["lipid", "gene"]
    np.testing.assert_array_equal(back.decision_function(df), clf.decision_function(df))
    # a reloaded model refits the same model
    again = back.fit(df, y)
    np.testing.assert_array_equal(again.weights_, clf.weights_)


def test_named_columns_errors():
    df, y = _data()
    with pytest.raises(ValueError, match="no column names.*DataFrame"):
        MKLClassifier(kernels=[rbf(1.0, features=["lipid_a"])]).fit(df.to_numpy(), y)
    with pytest.raises(ValueError, match=r"not in the data: \['lipid_z'\]"):
        MKLClassifier(kernels=[rbf(1.0, features=["lipid_z"])]).fit(df, y)
    with pytest.raises(TypeError, match="mixes column names and indices"):
        rbf(1.0, features=["lipid_a", 3])
    with pytest.raises(TypeError, match=r"for one column pass \['lipid_a'\]"):
        rbf(1.0, features="lipid_a")
    with pytest.raises(ValueError, match="selects no column"):
        MKLClassifier(kernels=[rbf(1.0, features=slice(20, None))]).fit(df, y)
    with pytest.raises(ValueError, match="a KernelBank needs integer column indices"):
        KernelBank.from_specs(df.to_numpy(), [rbf(1.0, features=["lipid_a"])])
    with pytest.raises(TypeError, match="kernels.*view"):
        MKLClassifier(kernels={"a": []}).fit(df, y)
    with pytest.raises(ValueError, match="kernel_names names precomputed kernels"):
        MKLClassifier(kernels=SPECS, kernel_names=["a", "b"]).fit(df, y)


def test_channels_are_column_groups_of_the_flattened_series():
    rng = np.random.default_rng(1)
    X3 = rng.standard_normal((6, 3, 5))
    X2, kernels = flatten_channels(X3, [rbf(1.0)], names=["x", "y", "z"])
    assert list(kernels) == ["x", "y", "z"]
    for c, name in enumerate(kernels):
        (spec,) = resolve_specs(kernels[name], X2.shape[1])
        np.testing.assert_array_equal(X2[:, list(spec.features)], X3[:, c, :])
    assert channel_views(3, 5, [rbf(1.0)]).keys() == {"ch0", "ch1", "ch2"}
    with pytest.raises(ValueError, match="3-D"):
        flatten_channels(X2)
    with pytest.raises(ValueError, match="3 distinct channel names"):
        channel_views(3, 5, [rbf(1.0)], names=["a", "a", "b"])


# ---- psd= ------------------------------------------------------------------
def _indefinite(n, lam_rel, seed=0):
    """A symmetric matrix of trace 1 whose smallest eigenvalue is ``lam_rel``."""
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    e = rng.uniform(0.0, 1.0, n) ** 4
    e[0] = 0.0
    e = e / e.sum()
    e[0] = lam_rel
    A = (Q * e) @ Q.T
    return 0.5 * (A + A.T)


def test_lanczos_estimate_is_never_below_lambda_min_and_catches_indefinite():
    for seed in range(3):
        A = _indefinite(600, -1e-3, seed)
        lam = np.linalg.eigvalsh(A)[0]
        est = psd_mod.lambda_min_estimate(A, seed=seed)
        assert est >= lam - 1e-12  # a Ritz value: never below lambda_min
        ok, exact = psd_mod.psd_test(A)  # the Lanczos path (n > _EXACT_N)
        assert A.shape[0] > psd_mod._EXACT_N
        assert not ok and exact == pytest.approx(lam, rel=1e-8)
    X = np.random.default_rng(0).standard_normal((600, 5))
    bank = KernelBank.from_specs(X, [rbf(0.5), rbf(4.0), linear()], storage="dense")
    for K in bank.K:  # PSD kernels pass, rank-deficient ones included
        assert psd_mod.psd_test(np.array(K))[0]


def test_diagonally_dominant_kernels_pass_without_a_factorisation(monkeypatch):
    # A narrow Gaussian kernel is certified by Gershgorin's theorem; a wide
    # one and an indefinite kernel still go through the exact test.
    X = np.random.default_rng(1).standard_normal((80, 4))
    bank = KernelBank.from_specs(X, [rbf(0.05), rbf(4.0)], storage="dense")
    narrow, wide = (np.array(K) for K in bank.K)
    calls = []
    real = psd_mod._shifted_cholesky
    monkeypatch.setattr(psd_mod, "_shifted_cholesky",
                        lambda *a: calls.append(1) or real(*a))
    assert psd_mod.psd_test(narrow, asym=0.0) == (True, None) and not calls
    assert psd_mod.psd_test(wide, asym=0.0)[0] and len(calls) == 1
    assert psd_mod.psd_test(narrow)[0] and len(calls) == 2  # no asym: no Gershgorin test
    # Dominant in its rows, but its upper triangle's symmetric matrix (the
    # one the factorisation reads) is indefinite: the asymmetry's slack
    # sends it to the factorisation.
    A = np.array([[1.0, 0.95, 0.0], [0.0, 1.0, 0.95], [0.95, 0.0, 1.0]])
    assert np.linalg.eigvalsh(np.triu(A) + np.triu(A, 1).T)[0] < -0.3
    psd_mod.psd_test(A, asym=0.95)
    assert len(calls) == 3
    with pytest.raises(ValueError, match=r"K\[1\] is not positive semi-definite"):
        KernelBank.from_matrices([narrow, _indefinite(80, -1e-3, seed=0)])
    KernelBank.from_matrices([narrow, wide])  # both PSD: accepted


def test_exact_psd_test_shares_its_scratch_across_kernels():
    # One scratch for every kernel (as from_matrices passes it): each answer
    # is that kernel's own, whatever the scratch held before.
    n = 60
    assert n <= psd_mod._EXACT_N
    scratch = np.full((n, n), np.nan)
    for lam_rel, want in ((1e-3, True), (-1e-3, False), (0.0, True), (-0.05, False)):
        A = _indefinite(n, lam_rel, seed=2)
        ok, lam = psd_mod.psd_test(A, scratch)
        assert ok is want
        assert ok == psd_mod.psd_test(A)[0]
        if not ok:
            assert lam == pytest.approx(np.linalg.eigvalsh(A)[0], rel=1e-8)
    # The user's matrices are never written.
    A = _indefinite(n, -1e-3, seed=3)
    before = A.copy()
    KernelBank.from_matrices([A, np.eye(n)], psd="shift")
    np.testing.assert_array_equal(A, before)


def test_psd_check_error_names_the_option():
    S = _indefinite(40, -0.2)
    with pytest.raises(ValueError, match=r"K\[0\] is not positive semi-definite.*psd='clip'"):
        KernelBank.from_matrices(S[None])
    with pytest.raises(ValueError, match="psd='clip'.*psd='shift'.*psd='trust'"):
        MKLClassifier(kernels="precomputed").fit(S[None], np.arange(40) % 2)
    assert KernelBank.from_matrices(S[None], psd="trust").psd_maps == (None,)
    with pytest.raises(ValueError, match="psd"):
        KernelBank.from_matrices(S[None], psd="fix")


def _sigmoid(X, Y):
    return np.tanh(0.4 * X @ Y.T - 0.5)


@pytest.mark.parametrize("mode", ["clip", "shift"])
def test_psd_repair_maps_test_kernels_as_the_training_kernel(mode):
    rng = np.random.default_rng(3)
    X = rng.standard_normal((70, 4))
    y = np.where(X[:, 0] - X[:, 1] > 0, 1, -1)
    Xt = rng.standard_normal((25, 4))
    d2 = ((X[:, None] - X[None]) ** 2).sum(-1)
    d2t = ((Xt[:, None] - X[None]) ** 2).sum(-1)
    K, Kt = np.stack([np.exp(-d2 / 2), _sigmoid(X, X)]), np.stack([np.exp(-d2t / 2),
                                                                     _sigmoid(Xt, X)])
    clf = MKLClassifier(kernels="precomputed", psd=mode, C=3.0, tol=1e-4).fit(K, y)
    assert clf.psd_maps_[0] is None and clf.psd_maps_[1].kind == mode
    # the repair done by hand (numpy's eigh), and the maps of its docstring
    e, V = np.linalg.eigh(K[1])
    if mode == "clip":
        Vp = V[:, e > 0]
        fixed, fixed_t = (Vp * e[e > 0]) @ Vp.T, Kt[1] @ Vp @ Vp.T
    else:
        fixed, fixed_t = K[1] - e[0] * np.eye(70), Kt[1]
    ref = MKLClassifier(kernels="precomputed", C=3.0, tol=1e-4).fit(
        np.stack([K[0], fixed]), y)
    np.testing.assert_allclose(clf.decision_function(Kt),
                               ref.decision_function(np.stack([Kt[0], fixed_t])), atol=1e-6)
    if mode == "clip":
        # a training point given as a test point gets its row of the clipped kernel
        np.testing.assert_allclose(clf.psd_maps_[1].apply(K[1]), fixed, atol=1e-10)
    assert np.array_equal(K[1], _sigmoid(X, X))  # the user's array is not written


# ---- samples-first stacks ---------------------------------------------------
def _stack(n=60, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    y = np.where(X[:, 0] + 0.3 * rng.standard_normal(n) > 0, "yes", "no")
    d2 = ((X[:, None] - X[None]) ** 2).sum(-1)
    return np.stack([np.exp(-d2 / 2), np.exp(-d2 / 8), X @ X.T]), y


def test_cross_val_score_and_grid_search_split_samples_first_stacks():
    sk = pytest.importorskip("sklearn.model_selection")
    K, y = _stack()
    K_sf = np.ascontiguousarray(np.moveaxis(K, 0, -1))
    est = MKLClassifier(kernels="precomputed", kernel_axis=-1, C=3.0)
    assert est.__sklearn_tags__().input_tags.pairwise
    scores = sk.cross_val_score(est, K_sf, y, cv=3)
    ref = sk.cross_val_score(MKLClassifier(kernels="precomputed", C=3.0), KernelStack(K), y,
                             cv=3)
    np.testing.assert_array_equal(scores, ref)
    grid = sk.GridSearchCV(est, {"C": [0.3, 3.0]}, cv=3).fit(K_sf, y)
    ref = sk.GridSearchCV(MKLClassifier(kernels="precomputed"), {"C": [0.3, 3.0]},
                          cv=3).fit(KernelStack(K), y)
    np.testing.assert_array_equal(grid.cv_results_["mean_test_score"],
                                  ref.cv_results_["mean_test_score"])
    cv = MKLClassifierCV(kernels="precomputed", kernel_axis=-1, Cs=[0.3, 3.0], cv=3).fit(K_sf, y)
    np.testing.assert_array_equal(cv.predict(K_sf[:10]), cv.predict(K_sf[:10]))


def test_layout_errors_name_kernel_axis():
    K, y = _stack()
    K_sf = np.moveaxis(K, 0, -1)
    with pytest.raises(ValueError, match="looks samples first.*kernel_axis=-1"):
        MKLClassifier(kernels="precomputed").fit(K_sf, y)
    with pytest.raises(ValueError, match="kernel_axis=-1.*y has 60 labels.*kernel_axis=0"):
        MKLClassifier(kernels="precomputed", kernel_axis=-1).fit(K, y)  # kernels first
    with pytest.raises(ValueError, match="kernel_axis"):
        MKLClassifier(kernels="precomputed", kernel_axis=1).fit(K, y)
    clf = MKLClassifier(kernels="precomputed", kernel_axis=-1).fit(K_sf, y)
    with pytest.raises(ValueError, match="read with kernel_axis=-1"):
        clf.predict(K_sf[:5, :50])


def test_precomputed_names_reach_the_plot_and_the_model(tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from mklopt import plot

    K, y = _stack()
    clf = MKLClassifier(kernels="precomputed", kernel_names=["narrow", "wide", "linear"]).fit(K, y)
    assert clf.kernel_names_ == ["narrow", "wide", "linear"]
    fig = plot.weights(clf)
    labels = {t.get_text() for ax in fig.axes for t in ax.get_yticklabels()}
    assert {"narrow", "wide"} & labels
    path = tmp_path / "m.npz"
    save_model(clf, path)
    back, meta = load_model(path)
    assert back.kernel_names_ == meta["kernel_names"] == clf.kernel_names_
    with pytest.raises(ValueError, match="3 non-empty strings"):
        MKLClassifier(kernels="precomputed", kernel_names=["a"]).fit(K, y)


def test_plot_shows_the_dataframe_column_names_and_warns_nothing():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from mklopt import plot

    df, y = _data()
    by_view = MKLClassifier(kernels=feature_views(VIEWS, SPECS), C=3.0).fit(df, y)
    by_col = MKLClassifier(kernels=[rbf(1.0, features=["lipid_a", "gene_2"]),
                                    linear(features=["gene_4"])], C=3.0).fit(df, y)
    for clf, must in ((by_view, {"lipid", "gene"}), (by_col, {"lipid_a,gene_2", "gene_4"})):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no layout (or any other) warning
            fig = plot.weights(clf)
            fig.canvas.draw()
        view_ax, kernel_ax, heat_ax = fig.axes[:3]
        assert {t.get_text() for t in view_ax.get_yticklabels()} == must
        assert {t.get_text() for t in kernel_ax.get_yticklabels()} <= set(clf.kernel_names_)
        assert {t.get_text() for t in heat_ax.get_xticklabels()} <= set(clf.kernel_names_)
        # every name inside the figure: none is clipped
        renderer = fig.canvas.get_renderer()
        box = fig.bbox
        for ax in (view_ax, kernel_ax, heat_ax):
            for t in ax.get_yticklabels() + ax.get_xticklabels():
                if t.get_text():
                    ext = t.get_window_extent(renderer)
                    assert ext.x0 >= box.x0 - 1 and ext.x1 <= box.x1 + 1
                    assert ext.y0 >= box.y0 - 1 and ext.y1 <= box.y1 + 1
        # the view panel: each view's total weight, averaged over the pairs
        W = np.atleast_2d(clf.weights_)
        views = clf.kernel_views_
        for bar, label in zip(view_ax.patches, view_ax.get_yticklabels(), strict=True):
            ks = [k for k, v in enumerate(views) if v == label.get_text()]
            assert bar.get_width() == pytest.approx(W[:, ks].sum(axis=1).mean())
        matplotlib.pyplot.close(fig)


def test_plot_heat_map_of_45_pairs_and_shared_weights():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from mklopt import plot

    rng = np.random.default_rng(0)
    X = np.concatenate([rng.normal(c, 0.6, size=(8, 4)) for c in np.linspace(0, 6, 10)])
    X[:, 2:] = rng.standard_normal((80, 2))
    y = np.repeat(np.arange(10), 8)
    kernels = feature_views({"signal": [0, 1], "noise": [2, 3]}, [rbf(1.0), linear()])
    ovo = MKLClassifier(kernels=kernels, C=3.0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig = plot.weights(ovo)
        fig.canvas.draw()
    heat = fig.axes[2]
    rows = [t.get_text() for t in heat.get_yticklabels()]
    assert len(rows) == 45 and len(set(rows)) == 45  # every pair, each once (reordered)
    assert sorted(rows) == sorted(f"{i} vs {j}" for i, j in ovo.pairs_)
    matplotlib.pyplot.close(fig)
    shared = MKLClassifier(kernels=kernels, C=3.0, multiclass="shared").fit(X, y)
    fig = plot.weights(shared)
    assert "shared weights of all 45 pairs" in fig.axes[0].get_title()
    assert len(fig.axes) == 2  # no heat map for one vector
    matplotlib.pyplot.close(fig)
