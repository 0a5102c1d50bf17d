"""``MKLClassifier(client=...)``: the kernels sharded over a small in-process Dask cluster.

Two workers in threads (``processes=False``), so the numbers are the cost
of sharding and of the scheduler's round trips against the same fit
without a client (``client`` = "none"), not of a network.
"""

from distributed import Client, LocalCluster

from mklopt import MKLClassifier

from .common import CONFIG, Fit, estimator_metrics, paper_split


class Sharded(Fit):
    params = [CONFIG["datasets"][-1:], ["dask", "none"]]
    param_names = ["dataset", "client"]
    timeout = 600

    def setup_cache(self):
        return self.fit_all()

    def make(self, name, client):
        X_tr, X_te, y_tr, y_te = paper_split(name)
        if CONFIG["dask_n"]:
            X_tr, y_tr = X_tr[: CONFIG["dask_n"]], y_tr[: CONFIG["dask_n"]]
        self.client = None
        if client == "dask":
            cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                   dashboard_address=":0")
            self.client = Client(cluster)

        def fit():
            return MKLClassifier(client=self.client).fit(X_tr, y_tr)

        def metrics(est):
            out = estimator_metrics(X_te, y_te)(est)
            self.teardown()
            return out

        return fit, metrics

    def teardown(self, *args):
        client = getattr(self, "client", None)
        if client is not None:
            cluster = client.cluster
            client.close()
            cluster.close()
            self.client = None
