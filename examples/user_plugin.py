"""A user's method and oracle, first-class without editing mklopt.

``examples/plugin`` is a small package, ``mkl_extras``, of the kind a user
writes: a Barzilai-Borwein projected-gradient method (``bb_spg.py``) and a
squared-loss (kernel ridge) oracle (``kernel_ridge.py``), each one file that
registers itself on import. Installed (``pip install examples/plugin``), its
entry points make both visible to ``mklopt fit`` and ``mklopt bench``; here
the folder is put on the path and the modules imported, which is what the
entry points do.

The script checks both with mklopt's conformance kit, fits the oracle
through ``MKLRegressor`` with the new method, and saves and loads the model.
"""

import os
import pathlib
import sys
import tempfile

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "plugin"))

from mkl_extras.bb_spg import BBSPG  # noqa: E402  (registers "bb_spg")
from mkl_extras.kernel_ridge import KernelRidgeOracle  # noqa: E402  (registers "kernel_ridge")

from mklopt import MKLRegressor, datasets, solve  # noqa: E402
from mklopt.kernels import KernelBank, rbf  # noqa: E402
from mklopt.persist import load_model, save_model  # noqa: E402
from mklopt.stopping import DualityGap, MaxOracleCalls  # noqa: E402
from mklopt.testing import SmoothQuadraticOracle, check_method, check_oracle  # noqa: E402

X, y = datasets.load("diabetes")
X, y = X[:120], y[:120]
X = (X - X.mean(0)) / X.std(0)
t = (y - y.mean()) / y.std()
specs = [rbf(s) for s in (1.0, 2.0, 4.0, 8.0)]
bank = KernelBank.from_specs(X, specs)

# 1. the conformance kit: raises AssertionError naming a broken property
check_method(BBSPG)
check_oracle(lambda: KernelRidgeOracle(bank, t, C=10.0))
print("check_method(BBSPG) and check_oracle(KernelRidgeOracle) passed")

# 2. the method certifies a toy optimum, the oracle under a built-in method
toy = SmoothQuadraticOracle.random(8, 6, seed=0)
res = solve(toy, BBSPG(), stop=DualityGap(1e-8) | MaxOracleCalls(1000))
print(f"BBSPG on a toy: relative gap {res.rel_gap:.2e} after {res.n_oracle_calls} calls, "
      f"|J - J*| = {abs(res.value - toy.exact_l1_optimum()):.1e}")

# 3. through the estimator: the registered name is the loss, the method a name
reg = MKLRegressor(kernels=specs, loss="kernel_ridge", method="bb_spg", C=10.0, tol=1e-6)
reg.fit(X, y)
ref = MKLRegressor(kernels=specs, loss="squared", method="level", C=10.0, tol=1e-6).fit(X, y)
diff = np.max(np.abs(reg.predict(X) - ref.predict(X))) / np.std(y)
print(f"MKLRegressor(loss='kernel_ridge', method='bb_spg'): relative gap {reg.gap_:.1e}, "
      f"predictions within {diff:.1e} std of the built-in squared loss")

# 4. saved and loaded (the file names the oracle and the method by registry name)
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "ridge.npz")
    save_model(reg, path)
    back, meta = load_model(path)
    same = np.max(np.abs(back.predict(X) - reg.predict(X)))
print(f"saved and loaded: loss={meta['params']['loss']!r}, method={meta['params']['method']!r}, "
      f"largest prediction change {same:.1e}")
