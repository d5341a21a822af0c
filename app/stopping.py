"""How a long-running worker (``flask deliver-usage``, ``flask deliver-notifications``) learns to stop.

SIGTERM (a deploy, systemd, Kubernetes) and SIGINT (Ctrl-C) end the batch in flight, then the loop.
The handler must take no lock. Python runs a signal handler in the main thread between two bytecodes,
which can fall while that thread holds the lock inside ``threading.Event.wait``, and ``Event.set``
there waits on that lock forever: the worker then ignores every later SIGTERM until it is killed.
Python's ``signal`` docs warn against locks in handlers; django-ox#45 measured about one hang in a
thousand stops of an idle worker so made; ``tests/test_stopping.py`` makes it happen. (A ``flask
deliver-usage`` that outlived its SIGTERM by 30 s in a CI run is why it was looked for, though what held
that one was not seen.) So the handler sets a flag and writes a byte to a pipe, which wakes a ``wait``
blocked in ``select``.

SIGUSR1 prints every thread's stack to standard error (``faulthandler``) and goes on: what a worker
that does not stop, or does not progress, is doing, without stopping it. A worker without a usable
standard error (closed, or a command run in-process by click's runner) goes without.
"""
import faulthandler
import os
import select
import signal
import sys
from contextlib import contextmanager

SIGNALS = (signal.SIGTERM, signal.SIGINT)


class Stop:
    """A flag set by a signal handler: ``is_set()`` and ``wait(seconds)`` as a ``threading.Event``'s, lock-free."""

    def __init__(self):
        self._read, self._write = os.pipe()
        os.set_blocking(self._write, False)
        self._set = False

    def set(self, *_signal_args):
        """Set the flag and wake a ``wait``; safe in a signal handler (no lock, no blocking write)."""
        self._set = True
        try:
            os.write(self._write, b"\0")
        except BlockingIOError:  # the pipe is full of earlier wake-ups: one is enough
            pass

    def is_set(self):
        return self._set

    def wait(self, seconds):
        """Return once the flag is set or after ``seconds``; return whether it is set."""
        if not self._set:
            # A set() between the check and the select left a byte in the pipe: select returns at once.
            select.select([self._read], [], [], seconds)
        return self._set

    def close(self):
        os.close(self._read)
        os.close(self._write)


@contextmanager
def stop_on_signals():
    """Yield a ``Stop`` that SIGTERM and SIGINT set, while SIGUSR1 dumps the stacks; on exit, put back the
    handlers found and close its pipe."""
    stop, previous, dumps = Stop(), {}, _dump_stacks_on_sigusr1()
    try:
        for signum in SIGNALS:
            previous[signum] = signal.signal(signum, stop.set)
        yield stop
    finally:
        if dumps:
            faulthandler.unregister(signal.SIGUSR1)
        for signum, handler in previous.items():
            # None: the handler found was not set from Python; the default is the nearest to it.
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)
        stop.close()


def _dump_stacks_on_sigusr1():
    """Register SIGUSR1's stack dump on the process's own standard error; return whether it could be."""
    # sys.__stderr__, not sys.stderr: a command run in-process (click's runner) has swapped the latter.
    try:
        faulthandler.register(signal.SIGUSR1, file=sys.__stderr__, all_threads=True)
    except (AttributeError, OSError, RuntimeError, ValueError):  # None, closed, or without a file descriptor
        return False
    return True
