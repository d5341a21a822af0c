"""A worker stops on SIGTERM or SIGINT whatever its main thread was doing (``app.stopping``)."""
import os
import signal
import subprocess
import sys
import threading
import time

from app.stopping import stop_on_signals
from tests.support.processes import ROOT

# A worker's idle loop, its stop signalled 300 times, a millisecond apart, from another thread, so
# that signals land at every point of ``wait``. A handler that takes a lock (``threading.Event.set``)
# blocks there, and the signals that follow nest in it until a RecursionError or a hang (5 runs of 5).
_HAMMERED = """
import os, signal, threading, time
from app.stopping import stop_on_signals

def hammer():
    for _ in range(300):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.001)
    hammered.set()

hammered = threading.Event()
with stop_on_signals() as stop:
    threading.Thread(target=hammer, daemon=True).start()
    waits = 0
    while not hammered.is_set():
        stop.wait(0.0005)
        waits += 1
    print("stopped" if stop.is_set() else "not stopped", waits)
"""


def test_a_stop_set_by_300_signals_mid_wait_never_blocks_the_worker():
    done = subprocess.run([sys.executable, "-c", _HAMMERED], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("stopped "), done.stdout


def test_a_signal_wakes_a_long_wait_at_once_and_the_handlers_found_are_put_back():
    found = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    with stop_on_signals() as stop:
        assert not stop.wait(0.01)
        threading.Timer(0.1, os.kill, (os.getpid(), signal.SIGINT)).start()
        started = time.monotonic()
        assert stop.wait(30) and stop.is_set()
        assert time.monotonic() - started < 10, "woken by the signal, not by the end of the wait"
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == found


def test_sigusr1_prints_every_threads_stack_and_the_worker_goes_on(tmp_path):
    script = ("import sys, time\nfrom app.stopping import stop_on_signals\n"
              "with stop_on_signals() as stop:\n    print('ready', flush=True)\n    while not stop.wait(0.05):\n"
              "        pass\nprint('stopped', flush=True)\n")
    worker = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        assert worker.stdout.readline() == "ready\n"
        worker.send_signal(signal.SIGUSR1)
        time.sleep(0.5)
        assert worker.poll() is None, "SIGUSR1 does not stop the worker"
        worker.send_signal(signal.SIGTERM)
        out, err = worker.communicate(timeout=30)
    finally:
        worker.kill()
    assert out == "stopped\n" and worker.returncode == 0
    assert "Current thread" in err and "File " in err, err
