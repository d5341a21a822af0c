"""The bench's child processes (gunicorn, the emulator, aiosmtpd) and the HTTP calls it makes itself."""
import http.client
import json
import subprocess
import sys
import time
from pathlib import Path

from scripts import apt
from scripts.bench.settings import HOST, PASSWORD, REPO


def ensure_wrk():
    """Return the path of wrk, installing the Debian package when it is missing (we run as root)."""
    return apt.ensure("wrk", "wrk") or sys.exit("wrk could not be installed")


# --- processes ------------------------------------------------------------------------------------


class Service:
    """A child process (gunicorn or the emulator) with its output in a log file; stopped on exit."""

    def __init__(self, name, argv, env, workdir):
        self.name = name
        self.log_path = Path(workdir) / f"{name}.log"
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(argv, cwd=REPO, env=env, stdout=self._log, stderr=subprocess.STDOUT)

    def wait_http(self, port, path, timeout=60):
        """Wait until ``GET path`` answers 200, or stop the process and raise with its log."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                break
            try:
                status, _ = request(port, "GET", path, timeout=2)
                if status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"{self.name} did not come up; its log:\n{self.log_path.read_text()[-4000:]}")

    def stop(self):
        """Terminate the process (killed after 15 s) and close its log."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()


def request(port, method, path, body=None, headers=None, timeout=30):
    """Send one request to the service on ``port``; return its status and body."""
    conn = http.client.HTTPConnection(HOST, port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def post_json(port, path, payload):
    """POST ``payload`` as JSON; return the status and the decoded answer."""
    status, body = request(port, "POST", path, json.dumps(payload).encode(), {"Content-Type": "application/json"})
    return status, json.loads(body or b"null")


def register_and_login(port, email):
    """Register ``email`` and log in; return the user's id and a login token."""
    status, body = post_json(port, "/auth/register", {"email": email, "password": PASSWORD})
    if status != 201:
        raise RuntimeError(f"register failed: {status} {body}")
    status, login = post_json(port, "/auth/login", {"email": email, "password": PASSWORD})
    if status != 200:
        raise RuntimeError(f"login failed: {status} {login}")
    return body["id"], login["access_token"]


def create_scoped_token(port, token):
    """Create a personal access token with only ``profile:read``, what ``/auth/me`` needs; return its plain text."""
    status, body = request(port, "POST", "/auth/tokens",
                           json.dumps({"name": "bench", "abilities": ["profile:read"]}).encode(),
                           {"Content-Type": "application/json", "Authorization": f"Bearer {token}"})
    if status != 201:
        raise RuntimeError(f"creating a scoped token failed: {status} {body!r}")
    return json.loads(body)["access_token"]


def gunicorn_argv(port, app):
    """The one gunicorn command line of every measured app: the production settings file
    (``gunicorn.conf.py``, access log included), 2 sync workers on loopback."""
    return [sys.executable, "-m", "gunicorn", "-c", str(REPO / "gunicorn.conf.py"), "-w", "2", "-k", "sync",
            "-b", f"{HOST}:{port}", "--log-level", "warning", app]
