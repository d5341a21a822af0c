"""One service host: ``gunicorn -c gunicorn.conf.py -w 2``, the notification worker and the usage
worker, one process group.

A host is what docs/operating.md "Scaling out" puts on each machine behind the load balancer.
Its processes share a process group, so ``kill()`` takes the whole host down at once with
SIGKILL (a power cut, an OOM kill of the container), mid-request and mid-delivery; ``start()``
brings it back with the same command lines.
"""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import requests

REPO = Path(__file__).resolve().parent.parent.parent
PORT = 8000
# Each host's long-running commands besides gunicorn: the notification outbox's and the usage ledger's workers.
WORKERS = [["deliver-notifications"], ["deliver-usage"]]


class Host:
    """Host ``name`` at ``address`` (its gunicorn on ``PORT``), its commands prefixed by ``prefix``."""

    def __init__(self, name, address, prefix, env, workdir):
        self.name, self.address, self.prefix, self.env = name, address, prefix, env
        self.url = f"http://{address}:{PORT}"
        self.log = open(Path(workdir) / f"host-{name}.log", "ab")  # noqa: SIM115 - closed by stop()
        self.processes = []

    def start(self, seconds=60):
        """Start gunicorn and the workers in a new process group; wait until ``/health`` answers."""
        web = subprocess.Popen([*self.prefix, sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py", "-w", "2",
                                "-b", f"{self.address}:{PORT}", "wsgi:app"],
                               cwd=REPO, env=self.env, stdout=self.log, stderr=subprocess.STDOUT, process_group=0)
        self.processes = [web] + [
            subprocess.Popen([*self.prefix, sys.executable, "-m", "flask", "--app", "wsgi", *command], cwd=REPO,
                             env=self.env, stdout=self.log, stderr=subprocess.STDOUT, process_group=web.pid)
            for command in WORKERS]
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if web.poll() is not None:
                raise RuntimeError(f"host {self.name}: gunicorn exited with {web.returncode} (see {self.log.name})")
            try:
                if requests.get(f"{self.url}/health", timeout=2).status_code == 200:
                    return self
            except requests.RequestException:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"host {self.name} did not become healthy in {seconds} s (see {self.log.name})")

    def kill(self):
        """SIGKILL the host's whole process group (gunicorn's master, its workers, the workers)."""
        os.killpg(self.processes[0].pid, signal.SIGKILL)
        for process in self.processes:
            process.wait(10)

    def stop(self):
        """SIGTERM the group (gunicorn finishes its requests), SIGKILL what is left after 15 s."""
        if self.processes and self.processes[0].poll() is None:
            os.killpg(self.processes[0].pid, signal.SIGTERM)
            deadline = time.monotonic() + 15
            for process in self.processes:
                try:
                    process.wait(max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(5)
        self.log.close()
