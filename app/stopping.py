"""How a long-running worker (``flask deliver-usage``, ``flask deliver-notifications``) learns to stop.

SIGTERM (a deploy, systemd, Kubernetes) and SIGINT (Ctrl-C) end the batch in flight, then the loop.
The handler must take no lock. Python runs a signal handler in the main thread between two bytecodes,
which can fall while that thread holds the lock inside ``threading.Event.wait``, and ``Event.set``
there waits on that lock forever: the worker then ignores every later SIGTERM until it is killed
(a ``flask deliver-usage`` did so in a CI run, its signal arriving as its one-second poll ended).
So the handler sets a flag and writes a byte to a pipe, which wakes a ``wait`` blocked in ``select``.

SIGUSR1 prints every thread's stack to standard error (``faulthandler``) and goes on: what a worker
that does not stop, or does not progress, is doing, without stopping it.
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
    stop = Stop()
    previous = {signum: signal.signal(signum, stop.set) for signum in SIGNALS}
    # The process's own standard error: a command run in-process (click's runner) has swapped sys.stderr.
    faulthandler.register(signal.SIGUSR1, file=sys.__stderr__, all_threads=True)
    try:
        yield stop
    finally:
        faulthandler.unregister(signal.SIGUSR1)
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        stop.close()
