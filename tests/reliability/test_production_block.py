"""The Production block of docs/operating.md, followed literally: gunicorn and the delivery worker started with the
environment the block gives each of them, and the crontab's commands with the crontab's. Only the
block's placeholders and hosts (database, secrets, SMTP server, metrics folder) become the test's own."""
import os
import re
import shlex
import signal
import subprocess
import sys
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

from app.extensions import db
from app.models import User
from app.notifications import notify
from tests.ports import free_port
from tests.receivers import SmtpSink
from tests.signing import WEBHOOK_SECRET
from tests.support.processes import ROOT
from tests.support.reliability import Gunicorn

TOKEN = "scrape-token-of-the-production-block-test"
_ASSIGNMENT = re.compile(r"^[A-Z_][A-Z0-9_]*=")


def production_section():
    """Return the Production block (sh) of docs/operating.md and its crontab, as text."""
    section = (ROOT / "docs" / "operating.md").read_text().split("\n## Production\n", 1)[1].split("\n## ", 1)[0]
    blocks = dict(re.findall(r"```(sh|cron)\n(.*?)```", section, re.S))
    return blocks["sh"], blocks["cron"]


def commands(block):
    """Return ``[(env, argv)]`` of the block's commands: the ``export``s made so far plus the line's own."""
    exported, found = {}, []
    for line in block.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        if words[:1] == ["export"]:
            exported.update(word.split("=", 1) for word in words[1:])
            continue
        own = {}
        while words and _ASSIGNMENT.match(words[0]):
            own.update([words.pop(0).split("=", 1)])
        if words:
            found.append(({**exported, **own}, words))
    return found


def crontab_environment(crontab):
    """Return the variables the crontab sets for its commands (``NAME=value`` lines)."""
    return dict(line.split("=", 1) for line in crontab.splitlines() if _ASSIGNMENT.match(line))


def command(block, *argv_end):
    (found,) = [(env, argv) for env, argv in commands(block) if tuple(argv[-len(argv_end):]) == argv_end]
    return found


def as_the_test_runs_it(documented, substitutes, tmp_path):
    """The documented environment with the test's own values for what it names, nothing added from it."""
    env = {"PATH": os.environ["PATH"], "TMPDIR": str(tmp_path)}  # not the developer's PROMETHEUS_MULTIPROC_DIR
    for name, value in documented.items():
        if not name.startswith("NOTIFY_WEBHOOK_"):  # optional, and the block's URL is not reachable
            env[name] = substitutes.get(name, value)
    return env


def sent(server):
    body = server.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"}).text
    return sum(sample.value for family in text_string_to_metric_families(body) for sample in family.samples
               if sample.name == "notifications_total" and sample.labels.get("state") == "sent")


@pytest.fixture
def smtp():
    sink = SmtpSink().start()
    yield sink
    sink.stop()


def test_the_workers_sent_count_reaches_metrics_as_the_production_block_runs_them(make_app, database_url, smtp,
                                                                                   tmp_path):
    block, _ = production_section()
    port = free_port()
    substitutes = {"DATABASE_URL": database_url, "PROVIDER_API_KEY": "sk_test_x", "PROVIDER_WEBHOOK_SECRET":
                   WEBHOOK_SECRET, "PROVIDER_PLANS": "{}", "RATELIMIT_STORAGE_URI": "memory://",
                   "MAIL_SERVER": "127.0.0.1", "MAIL_PORT": str(smtp.port), "MAIL_USE_TLS": "false",
                   "MAIL_USERNAME": "", "MAIL_PASSWORD": "", "METRICS_TOKEN": TOKEN,
                   "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics")}
    web_env, web_argv = command(block, "gunicorn", "-c", "gunicorn.conf.py", "wsgi:app")
    worker_env, worker_argv = command(block, "flask", "--app", "wsgi", "deliver-notifications")
    # The block's store is Redis; the test's memory:// beside two workers is meant.
    web_env = {**as_the_test_runs_it(web_env, substitutes, tmp_path), "BIND": f"127.0.0.1:{port}",
               "WEB_CONCURRENCY": "2", "RATELIMIT_ALLOW_MEMORY": "true"}
    log = tmp_path / "gunicorn.log"
    with log.open("wb") as out:
        web = subprocess.Popen([sys.executable, "-m", *web_argv], cwd=ROOT, env=web_env, stdout=out,
                               stderr=subprocess.STDOUT)
    with (tmp_path / "worker.log").open("wb") as out:
        worker = subprocess.Popen([sys.executable, "-m", *worker_argv], cwd=ROOT, stdout=out,
                                  stderr=subprocess.STDOUT, env=as_the_test_runs_it(worker_env, substitutes, tmp_path))
    server = Gunicorn(f"http://127.0.0.1:{port}", web, log)
    try:
        server.wait_healthy(workers=2)
        app = make_app(MAIL_SERVER="127.0.0.1", MAIL_PORT=smtp.port)
        with app.app_context():
            user = User(email="ops@example.com", password_hash="x", name="Ops")
            db.session.add(user)
            db.session.flush()
            notify(user, "evt_production_block", "payment_failed", {"subscription": "sub_1", "invoice": "in_1"})
            db.session.commit()
        deadline = time.monotonic() + 30
        while not smtp.messages and time.monotonic() < deadline:
            assert worker.poll() is None, (tmp_path / "worker.log").read_text()
            time.sleep(0.1)
        assert len(smtp.messages) == 1
        assert sent(server) == 1, "the worker's count is in the folder gunicorn's scrape adds up"
    finally:
        for process in (worker, web):
            process.send_signal(signal.SIGTERM)
            process.wait(35)


def test_the_crontab_shares_the_production_blocks_metrics_folder():
    block, crontab = production_section()
    folder = command(block, "gunicorn", "-c", "gunicorn.conf.py", "wsgi:app")[0].get("PROMETHEUS_MULTIPROC_DIR")
    assert folder, "the block names one folder for every process it starts"
    assert crontab_environment(crontab).get("PROMETHEUS_MULTIPROC_DIR") == folder
