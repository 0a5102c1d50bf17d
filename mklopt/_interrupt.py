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

The watcher is one daemon thread for the whole process, started by the
first run that needs it and then kept: a run registers its deadline (or
its SIGINT handling) with it on entering and withdraws it on leaving, which
costs a few microseconds, where starting and joining a thread per run cost
about 100 µs of the caller's CPU time (a program that calls
:func:`mklopt.solve` many times on small problems paid it on every call).
A process forked from one holding the watcher starts its own when needed,
and one forked during a run that catches SIGINT writes its signals to no
stale descriptor.

Runs nest (an estimator's fit holds a run; each ``solve`` inside it opens
its own, with its own deadline): setting an outer run's flag sets the
flags of the runs inside it as well. The current run is held in a
:mod:`contextvars` variable, so two fits in two threads have two flags.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import os
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
#: Byte written to the watcher's socket to make it read the deadlines again
#: (signal numbers are >= 1).
_WAKE = b"\x00"


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
        Catch SIGINT during the run, if in the main thread, no enclosing
        run already does, and the program does not ignore SIGINT (a
        process started with ``SIG_IGN``, as a shell's background job is,
        keeps ignoring it).

    Notes
    -----
    Entering installs the SIGINT handler and the wakeup socket (main
    thread, outermost run only) and registers the deadline and the handler
    with the process's watcher thread (started by the first run that needs
    it, then kept); leaving withdraws them and restores the previous handler
    and wakeup fd, whatever happened inside.
    """

    def __init__(self, deadline=None, sigint=True):
        self.deadline = None if deadline is None else float(deadline)
        self.sigint = bool(sigint)
        self.flag = np.zeros(1, dtype=np.int64)
        self.children = []
        self._lock = threading.Lock()
        self._parent = None
        self._token = None
        self._watched = False
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
        # A program that ignores SIGINT (SIG_IGN: started in the background
        # by a shell, or by nohup-like launchers) keeps ignoring it; None is a
        # handler not installed from Python, which is left alone too.
        want_sigint = (self.sigint and _in_main_thread() and not _sigint_caught(parent)
                       and signal.getsignal(signal.SIGINT) not in (None, signal.SIG_IGN))
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
        if want_sigint:
            fd = _WATCHER.sigint_fd()
            try:
                self._old_fd = signal.set_wakeup_fd(fd, warn_on_full_buffer=False)
                self._old_handler = signal.signal(signal.SIGINT, self._on_sigint)
                self._handled = True
            except ValueError:  # not the main thread after all (embedded interpreters)
                self._handled = False
            if self._handled:
                _WATCHER.handle_sigint(self)
        if self.deadline is not None:
            _WATCHER.add_deadline(self)
        self._watched = True

    def _stop_watching(self):
        if not self._watched:
            return
        self._watched = False
        try:
            if self._handled:
                signal.signal(signal.SIGINT, self._old_handler)
                signal.set_wakeup_fd(self._old_fd)
        finally:
            if self._handled:
                _WATCHER.handle_sigint(None)
                self._handled = False
            if self.deadline is not None:
                _WATCHER.remove_deadline(self)

    def _on_sigint(self, signum, frame):
        # Never raises: the jitted loops see the flag (set here or, sooner,
        # by the watcher) and the run ends at a clean point.
        self.set(INTERRUPT)


class _Watcher:
    """The thread that sets runs' flags while the main thread is in jitted code.

    One per process, started by the first run that has a deadline or
    catches SIGINT, and kept for the next ones (a daemon thread: it never
    holds the interpreter's exit). It sleeps in :func:`select.select` on
    two sockets until the earliest registered deadline: the interpreter's
    C-level SIGINT handler writes the signal number to the first (see
    :func:`signal.set_wakeup_fd`), and :meth:`add_deadline` writes
    :data:`_WAKE` to the second, so that a new, earlier deadline is seen at
    once.

    A signal byte is read and given to the run catching SIGINT in one step
    under the lock, and that run, when it leaves, empties the signal socket
    under the lock after giving the wakeup fd back: a byte is never read
    after its run has ended, so a Ctrl-C cannot stop the next run (the
    thread may wait for the GIL for milliseconds while the main thread goes
    on).
    """

    def __init__(self):
        self._reset()

    def _reset(self):
        # Also the child's state after a fork: the thread did not follow.
        self.lock = threading.Lock()
        self.deadlines = []
        self.sigint_run = None
        self.sig = None
        self.wake = None
        self.thread = None
        self.pid = None

    def _ensure(self):
        """Start the thread if this process has none (call with the lock held)."""
        if self.thread is not None and self.pid == os.getpid():
            return
        self.sig = socket.socketpair()
        self.wake = socket.socketpair()
        for sock in (*self.sig, *self.wake):
            sock.setblocking(False)
        self.pid = os.getpid()
        self.thread = threading.Thread(target=self._watch, args=(self.sig[0], self.wake[0]),
                                       name="mklopt-stop-watcher", daemon=True)
        self.thread.start()

    def sigint_fd(self):
        """The socket the interpreter is to write signal numbers to."""
        with self.lock:
            self._ensure()
            return self.sig[1].fileno()

    def handle_sigint(self, run):
        """``run`` catches the SIGINTs read from now on; None when it leaves.

        Leaving (the wakeup fd already given back) empties the signal
        socket: its run has ended, and its own handler has had the signal.
        """
        with self.lock:
            if run is None and self.sig is not None:
                _drain(self.sig[0])
            self.sigint_run = run

    def add_deadline(self, run):
        with self.lock:
            self._ensure()
            self.deadlines.append(run)
            try:
                self.wake[1].send(_WAKE)
            except OSError:  # pragma: no cover - full of unread bytes: it wakes anyway
                pass

    def remove_deadline(self, run):
        # The thread may still wake at this deadline; it then finds nothing due.
        with self.lock:
            if run in self.deadlines:
                self.deadlines.remove(run)

    def _watch(self, sig, wake):
        while True:
            with self.lock:
                now = time.time()
                due = [run for run in self.deadlines if run.deadline <= now]
                for run in due:
                    self.deadlines.remove(run)
                nxt = min((run.deadline for run in self.deadlines), default=None)
            for run in due:
                run.set(TIME_LIMIT)
            timeout = None if nxt is None else max(0.0, nxt - time.time())
            ready, _, _ = select.select([sig, wake], [], [], timeout)
            if wake in ready:
                _drain(wake)
            if sig in ready:
                with self.lock:
                    run = self.sigint_run
                    if bytes([signal.SIGINT]) not in _drain(sig):
                        run = None
                if run is not None:
                    run.set(INTERRUPT)


def _drain(sock):
    """Every byte waiting on the non-blocking ``sock``."""
    data = b""
    while True:
        try:
            chunk = sock.recv(256)
        except (BlockingIOError, InterruptedError):
            return data
        if not chunk:
            return data
        data += chunk


_WATCHER = _Watcher()


def _after_fork_in_child():
    """A forked child's stop machinery: its own watcher, and no wakeup fd of the parent's.

    A run catching SIGINT at the fork had pointed the interpreter's wakeup
    fd at the watcher's socket. In the child the watcher's state is reset
    and its copies of the sockets are closed, so that fd number would be
    stale: the next SIGINT's byte would go to a closed descriptor (an error
    printed as ignored) or into whatever file the child opened under the
    same number. The wakeup fd is cleared first. The child keeps the run's
    Python-level handler, so a Ctrl-C still stops its copy of the run
    between two jitted calls; its own runs set up their own watcher.
    """
    caught = _WATCHER.sigint_run is not None
    if caught:
        try:
            signal.set_wakeup_fd(-1)
        except ValueError:  # pragma: no cover - not the child's main thread
            pass
    _WATCHER._reset()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


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

    Before the deadline starts, the numba kernels of the estimator's default
    fit are compiled or loaded from the cache (:func:`mklopt._compile.prepare`;
    a first run after install says so at ``verbose >= 1``), so that
    ``time_limit`` counts the problem, not the compiling. A ``NoPointError``
    of a fit that compiled other kernels meanwhile says how long that took.
    """
    from . import _compile
    from ._heartbeat import heartbeat

    loud = isinstance(verbose, int) and not isinstance(verbose, bool) and verbose >= 1
    _compile.watch()  # every estimator: the message, and the NoPointError's note
    with _compile.echo(loud):
        _compile.prepare(name)
    compiled = _compile.compile_seconds()
    limit = None
    deadline = None
    if isinstance(time_limit, (int, float)) and math.isfinite(time_limit) and time_limit > 0:
        limit = float(time_limit)
        deadline = time.time() + time_limit + grace(time_limit)
    from .stopping import NoPointError

    try:
        with Run(deadline), heartbeat(verbose, name), _compile.echo(loud):
            yield
    except Stopped as exc:
        if exc.reason == "interrupted":
            raise KeyboardInterrupt(f"{name}.fit interrupted; nothing was fitted") from None
        note = _compile.compile_note(_compile.compile_seconds() - compiled, limit)
        raise NoPointError(
            f"{name}.fit stopped ({exc.reason}) before any point was certified (while "
            f"building the kernels); nothing was fitted.{note} Raise time_limit"
        ) from None
    except NoPointError as exc:
        note = _compile.compile_note(_compile.compile_seconds() - compiled, limit)
        if note and exc.args and isinstance(exc.args[0], str):
            exc.args = (exc.args[0] + note,) + exc.args[1:]
        raise
