"""What a ``flask`` command's start-up leaves for first use, and what a gunicorn worker loads anyway before it freezes.

Each ``flask`` process the suite starts paid about 0.45 s of CPU for the Stripe SDK (and requests under it),
psycopg on SQLite and the mappers' configuration, which a command that never calls Stripe or locks a customer
does not use, and 0.1 s for Alembic, which only ``flask db`` uses; a gunicorn worker loads the first ones in
``post_worker_init`` so that ``gc.freeze`` still covers them.
"""
import json
import subprocess
import sys

from tests.support.processes import ROOT, environ

_PROBE = """
import json, sys
import wsgi
from app import load_for_requests
from app.extensions import db

def configured():
    return all(mapper.configured for mapper in db.Model.registry.mappers)

LAZY = ("stripe", "requests", "psycopg", "alembic")
started = {"modules": [m for m in LAZY if m in sys.modules], "configured": configured()}
load_for_requests()
loaded = {"modules": [m for m in LAZY if m in sys.modules], "configured": configured()}
print(json.dumps([started, loaded]))
"""


def test_a_started_app_leaves_the_sdk_and_the_mappers_to_first_use_and_a_worker_loads_them(tmp_path):
    answer = subprocess.run([sys.executable, "-c", _PROBE], cwd=ROOT, env=environ(tmp_path),
                            capture_output=True, text=True, timeout=60)
    assert answer.returncode == 0, answer.stderr
    started, loaded = json.loads(answer.stdout)
    assert started == {"modules": [], "configured": False}
    # psycopg stays out: the app runs on SQLite here; Alembic until something migrates (``app.schema``).
    assert loaded == {"modules": ["stripe", "requests"], "configured": True}
