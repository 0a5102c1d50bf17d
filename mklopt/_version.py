"""The version of mklopt (its own module, so that any module can import it)."""

__version__ = "0.1.0"
