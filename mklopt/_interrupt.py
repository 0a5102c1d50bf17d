"""Stopping long jitted work from outside: a flag the loops read, and who sets it.

The long jitted loops (kernel evaluation, combine, ``q``, SMO, logistic
SMO, MKBoost rounds) take a one-element int64 array ``stop`` and look at
``stop[0]`` between blocks of rows or iterations. When it is non-zero they
return early, having written only whole rows (or left the dual variables
feasible, for SMO). The Python code around them then calls :func:`check`,
which raises :class:`Stopped`; :func:`mklopt.solve` catches it.

Who sets the flag, inside a :class:`Run` (entered by ``solve`` and by the
estimators' ``fit``):

* a **deadline** (``time_limit``, :class:`~mklopt.stopping.TimeLimit`): a
  watcher thread sleeps until it and sets the flag. The jitted functions
  release the GIL (``nogil=True``), so the watcher runs while they do;
* **SIGINT** (Ctrl-C), in the main thread only: a handler is installed
  for the duration of the run (the previous one is restored at the end),
  and :func:`signal.set_wakeup_fd` makes the interpreter write the signal
  number to a socket the watcher reads. The Python-level handler only runs
  once the main thread is back in the interpreter, which is exactly what a
  long jitted call prevents; the socket is written by the C-level handler
  at once, so the watcher sets the flag while the jitted call is running;
* :func:`mklopt.solve`, when a ``callback`` asks to stop.

Runs nest (an estimator's fit holds a run; each ``solve`` inside it opens
its own, with its own deadline): setting an outer run's flag sets the
flags of the runs inside it as well. The current run is held in a
:mod:`contextvars` variable, so two fits in two threads have two flags.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import select
import signal
import socket
import threading
import time

import numpy as np

__all__ = ["Run", "Stopped", "check", "current_flag", "INTERRUPT", "TIME_LIMIT", "CALLBACK"]

#: Values of ``stop[0]``: 0 runs on; the others name the reason.
INTERRUPT = 1
TIME_LIMIT = 2
CALLBACK = 3
REASONS = {INTERRUPT: "interrupted", TIME_LIMIT: "time_limit", CALLBACK: "callback"}

_CURRENT = contextvars.ContextVar("mklopt_run", default=None)
#: Byte written to the watcher's socket to end it (signal numbers are >= 1).
_QUIT = b"\x00"


class Stopped(Exception):
    """A stop flag was found set after a jitted call returned early.

    ``reason`` is ``"interrupted"``, ``"time_limit"`` or ``"callback"``.
    """

    def __init__(self, reason):
        super().__init__(reason)
        self.reason = reason


def current_flag():
    """The stop flag of the run in progress (a fresh, never-set one outside any run)."""
    run = _CURRENT.get()
    return run.flag if run is not None else np.zeros(1, dtype=np.int64)


def check(flag=None):
    """Raise :class:`Stopped` if ``flag`` (default: the current run's) is set."""
    if flag is None:
        run = _CURRENT.get()
        if run is None:
            return
        flag = run.flag
    code = int(flag[0])
    if code:
        raise Stopped(REASONS.get(code, "interrupted"))


def stop_current(code):
    """Set the current run's flag (and those of the runs inside it) to ``code``."""
    run = _CURRENT.get()
    if run is not None:
        run.set(code)


def _in_main_thread():
    return threading.current_thread() is threading.main_thread()


class Run:
    """A stretch of work that a deadline, Ctrl-C or a callback can stop.

    Parameters
    ----------
    deadline : float, optional
        Wall-clock time (:func:`time.time`) at which to set the flag to
        ``TIME_LIMIT``; None for none. A run inside another keeps the
        earlier of the two deadlines (the outer one sets both flags).
    sigint : bool, default=True
        Catch SIGINT during the run, if in the main thread and no
        enclosing run already does.

    Notes
    -----
    Entering installs the SIGINT handler and the wakeup socket (main
    thread, outermost run only) and starts the watcher thread (only when
    there is a deadline or a handler); leaving stops the thread and
    restores the previous handler and wakeup fd, whatever happened inside.
    """

    def __init__(self, deadline=None, sigint=True):
        self.deadline = None if deadline is None else float(deadline)
        self.sigint = bool(sigint)
        self.flag = np.zeros(1, dtype=np.int64)
        self.children = []
        self._lock = threading.Lock()
        self._parent = None
        self._token = None
        self._thread = None
        self._socks = None
        self._old_handler = None
        self._old_fd = None
        self._handled = False

    # ---- the flag ------------------------------------------------------------
    def set(self, code):
        """Set this run's flag and those inside it (the first reason wins)."""
        with self._lock:
            if self.flag[0] == 0:
                self.flag[0] = code
            children = list(self.children)
        for c in children:
            c.set(code)

    @property
    def reason(self):
        """``None`` while running, else why the flag was set."""
        code = int(self.flag[0])
        return REASONS.get(code) if code else None

    # ---- entering and leaving ----------------------------------------------
    def __enter__(self):
        parent = _CURRENT.get()
        self._parent = parent
        if parent is not None:
            with parent._lock:
                parent.children.append(self)
                if parent.flag[0]:
                    self.flag[0] = parent.flag[0]
        self._token = _CURRENT.set(self)
        if self.deadline is not None and time.time() >= self.deadline:
            self.set(TIME_LIMIT)  # already past: no race with the watcher's start
        want_sigint = (self.sigint and _in_main_thread() and not _sigint_caught(parent)
                       and signal.getsignal(signal.SIGINT) is not None)
        if want_sigint or self.deadline is not None:
            self._start(want_sigint)
        return self

    def __exit__(self, *exc):
        try:
            self._stop_watching()
        finally:
            _CURRENT.reset(self._token)
            if self._parent is not None:
                with self._parent._lock:
                    if self in self._parent.children:
                        self._parent.children.remove(self)
        return False

    def _start(self, want_sigint):
        r, w = socket.socketpair()
        r.setblocking(False)
        w.setblocking(False)
        self._socks = (r, w)
        if want_sigint:
            try:
                self._old_fd = signal.set_wakeup_fd(w.fileno(), warn_on_full_buffer=False)
                self._old_handler = signal.signal(signal.SIGINT, self._on_sigint)
                self._handled = True
            except ValueError:  # not the main thread after all (embedded interpreters)
                self._handled = False
        self._thread = threading.Thread(target=self._watch, name="mklopt-stop-watcher",
                                        daemon=True)
        self._thread.start()

    def _stop_watching(self):
        if self._socks is None:
            return
        r, w = self._socks
        try:
            if self._handled:
                signal.signal(signal.SIGINT, self._old_handler)
                signal.set_wakeup_fd(self._old_fd)
                self._handled = False
        finally:
            try:
                w.send(_QUIT)
            except OSError:  # pragma: no cover - the buffer is full of signal bytes
                pass
            self._thread.join()
            r.close()
            w.close()
            self._socks = None

    def _on_sigint(self, signum, frame):
        # Never raises: the jitted loops see the flag (set here or, sooner,
        # by the watcher) and the run ends at a clean point.
        self.set(INTERRUPT)

    def _watch(self):
        r = self._socks[0]
        while True:
            timeout = None
            if self.deadline is not None:
                timeout = self.deadline - time.time()
                if timeout <= 0.0:
                    self.set(TIME_LIMIT)
                    timeout = None  # only the quit byte is left to wait for
            ready, _, _ = select.select([r], [], [], timeout)
            if not ready:
                continue
            try:
                data = r.recv(256)
            except BlockingIOError:  # pragma: no cover - spurious wakeup
                continue
            if _QUIT in data or not data:
                return
            if self._handled and bytes([signal.SIGINT]) in data:
                self.set(INTERRUPT)


def _sigint_caught(run):
    while run is not None:
        if run._handled:
            return True
        run = run._parent
    return False


def grace(seconds):
    """Slack after a fit's time limit before the fit itself is stopped.

    Half the overshoot the time limit promises (10 % or 2 s, whichever is
    larger): the solves inside the fit stop at the limit itself, and the
    fit's own deadline, later by this much, stops only the work outside
    them (kernel construction) while leaving the model's assembly after a
    stopped solve time to finish.
    """
    return 0.5 * max(2.0, 0.1 * seconds)


@contextlib.contextmanager
def fit_run(name, time_limit, verbose=0):
    """An estimator's ``fit`` as a stoppable :class:`Run` (see :func:`grace`).

    ``time_limit`` is the estimator's parameter (None, or seconds; an
    invalid value is left for the fit to reject). At ``verbose >= 2`` long
    oracle calls print progress lines while they run (:mod:`mklopt._heartbeat`).
    Work stopped outside a solve (kernel construction, or a binary problem that had no time left)
    ends the fit with :class:`~mklopt.stopping.NoPointError`, or with
    ``KeyboardInterrupt`` on Ctrl-C.
    """
    deadline = None
    if isinstance(time_limit, (int, float)) and math.isfinite(time_limit) and time_limit > 0:
        deadline = time.time() + time_limit + grace(time_limit)
    from ._heartbeat import heartbeat

    try:
        with Run(deadline), heartbeat(verbose, name):
            yield
    except Stopped as exc:
        if exc.reason == "interrupted":
            raise KeyboardInterrupt(f"{name}.fit interrupted; nothing was fitted") from None
        from .stopping import NoPointError

        raise NoPointError(
            f"{name}.fit stopped ({exc.reason}) before any point was certified (while "
            "building the kernels); nothing was fitted. Raise time_limit"
        ) from None
