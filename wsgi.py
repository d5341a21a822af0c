"""WSGI entry point: ``gunicorn wsgi:app``; also the ``flask --app wsgi`` target."""
import sys

from app import create_app
from app.config import ConfigError

try:
    app = create_app()
except ConfigError as exc:
    # One line naming the variable, not a traceback. Exit status 4 is gunicorn's "App failed to
    # load": its master then stops, where any other status from a worker makes it boot another,
    # forever. The flask command exits with it too.
    print(f"Error: {exc}", file=sys.stderr)
    sys.exit(4)
