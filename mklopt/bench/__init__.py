"""The benchmark harness behind ``mklopt bench``.

``mklopt.bench.runs`` runs the methods under the papers' protocols on the
bundled data sets (tables, CSV and figures), ``mklopt.bench.scale`` the
cases whose kernels are never stored (each in its own process, with its
peak memory) and ``mklopt.bench.kloft`` the two experiments of Kloft et
al.'s Lp-norm MKL poster. Importing this package loads only the protocols'
settings (:data:`PROTOCOLS`); the command line imports the runners when
``mklopt bench`` runs.
"""

from ._protocols import PROTOCOLS, Protocol

__all__ = ["PROTOCOLS", "Protocol"]
