"""The bundled data files (CSV, some gzipped), read by :mod:`mklopt.datasets`.

This folder is a package only so that setuptools installs it as one and
``importlib.resources`` finds it; it holds no code.
"""
