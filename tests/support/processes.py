"""The service run as its own process (``flask`` commands, gunicorn) from the repository's root."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


FLASK = [sys.executable, "-m", "flask", "--app", "wsgi"]


def environ(tmp_path, **settings):
    """The test process's environment without the service's settings, plus ``settings``."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PROVIDER_", "RATELIMIT_", "AUTH_", "DATABASE_URL", "FLASK_"))}
    return {**env, "DATABASE_URL": f"sqlite:///{tmp_path / 'app.db'}", "SECRET_KEY": "test secret key", **settings}


def run(args, env, **kwargs):
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, **kwargs)
