"""``make bench``'s row of ``POST /auth/password/forgot``: a registered address against an unknown one.

CONTRACT "Accounts": forgot answers any address "in the same time", so that the time does not tell
an attacker which addresses have accounts. The row runs its own gunicorn (the production settings
file, 2 sync workers, as every measured app) on the bench's database, with an email channel
configured (otherwise forgot writes nothing for either address) and no delivery worker (the
request's own work is measured, not the email's), and the forgot limit raised out of the way.
Requests alternate between the two addresses, one at a time, so drift hits both alike; the target
is that their p50 and their p99 each differ by at most ``MAX_GAP``.

``measure_forgot(env, workdir, count)`` returns the raw results; ``table_row(kind, result)`` the
table's row. ``scripts.bench.main`` calls the two.
"""
import http.client
import json
import subprocess
import sys
import time
from pathlib import Path

from scripts.bench.settings import HOST, REPO
from scripts.bench.webhook_load import percentile
from tests.ports import free_port

PASSWORD = "bench password 123"
KNOWN, UNKNOWN = "forgot@bench.example", "nobody@bench.example"
REQUESTS = 1000
# The target (issue 27): the two addresses' p50 and p99 within 20% of each other.
MAX_GAP = 0.20


def _post(port, path, payload):
    """POST JSON on a new connection (gunicorn's sync workers close each one); return the status."""
    conn = http.client.HTTPConnection(HOST, port, timeout=30)
    try:
        conn.request("POST", path, body=json.dumps(payload).encode(), headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def _serve(env, workdir, port):
    log = open(Path(workdir) / "gunicorn-forgot.log", "wb")  # noqa: SIM115 - closed by the caller
    argv = [sys.executable, "-m", "gunicorn", "-c", str(REPO / "gunicorn.conf.py"), "-w", "2", "-k", "sync",
            "-b", f"{HOST}:{port}", "--log-level", "warning", "wsgi:app"]
    process = subprocess.Popen(argv, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while process.poll() is None and time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection(HOST, port, timeout=2)
            conn.request("GET", "/health")
            if conn.getresponse().status == 200:
                return process, log
        except OSError:
            time.sleep(0.2)
    process.kill()
    log.close()
    raise RuntimeError("gunicorn for the forgot row did not come up:\n"
                       + (Path(workdir) / "gunicorn-forgot.log").read_text()[-4000:])


def measure_forgot(env, workdir, count=REQUESTS):
    """Time ``count`` forgot requests for each of a registered and an unknown address, alternating.

    ``env`` is the bench's service environment (database migrated). Returns ``{"known": {...},
    "unknown": {...}}``, each ``{"p50_ms", "p99_ms", "requests", "errors"}`` (an error is any answer
    but 202), plus ``"gap_p50"`` and ``"gap_p99"``: ``|known - unknown| / min(known, unknown)``.
    """
    port = free_port()
    env = {**env, "MAIL_SERVER": HOST, "AUTH_PASSWORD_RESET_RATE_LIMIT": "1000000 per hour"}
    process, log = _serve(env, workdir, port)
    try:
        _post(port, "/auth/register", {"email": KNOWN, "password": PASSWORD})
        timings = {"known": [], "unknown": []}
        errors = {"known": 0, "unknown": 0}
        for _ in range(count):
            for name, email in (("known", KNOWN), ("unknown", UNKNOWN)):
                started = time.perf_counter()
                status = _post(port, "/auth/password/forgot", {"email": email})
                timings[name].append((time.perf_counter() - started) * 1000)
                errors[name] += status != 202
    finally:
        process.terminate()
        process.wait(15)
        log.close()
    result = {name: {"p50_ms": percentile(spent, 0.50), "p99_ms": percentile(spent, 0.99), "requests": count,
                     "errors": errors[name]} for name, spent in timings.items()}
    for key in ("p50", "p99"):
        known, unknown = result["known"][f"{key}_ms"], result["unknown"][f"{key}_ms"]
        result[f"gap_{key}"] = abs(known - unknown) / min(known, unknown)
    known, unknown = result["known"]["p50_ms"], result["unknown"]["p50_ms"]
    print(f"[bench {time.strftime('%H:%M:%S')}] forgot: p50 registered {known:.2f} ms, unknown {unknown:.2f} ms "
          f"over {count} each", file=sys.stderr, flush=True)
    return result


def table_row(kind, result):
    """Return the bench table's row (DB, Row, Throughput, p50, p99, Errors, Measured, Target, Result)."""
    known, unknown = result["known"], result["unknown"]
    ok = (result["gap_p50"] <= MAX_GAP and result["gap_p99"] <= MAX_GAP
          and known["errors"] == unknown["errors"] == 0)
    return [kind, f"`POST /auth/password/forgot`, registered vs unknown address, alternating, "
                  f"{known['requests']} each", "",
            f"{known['p50_ms']:.1f} / {unknown['p50_ms']:.1f}", f"{known['p99_ms']:.1f} / {unknown['p99_ms']:.1f}",
            str(known["errors"] + unknown["errors"]),
            f"registered / unknown; gap p50 {result['gap_p50']:.0%}, p99 {result['gap_p99']:.0%}",
            f"p50 and p99 within {MAX_GAP:.0%} of each other, 0 errors", "PASS" if ok else "MISS"]
