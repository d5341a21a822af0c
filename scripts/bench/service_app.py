"""The service as ``wsgi.py`` builds it, plus one bench-only route: ``gunicorn scripts.bench.service_app:app``.

``GET /_bench/bare`` answers ``{"status": "ok"}`` and touches no database, so its throughput is the
ceiling of the stack (gunicorn, Flask, the app's before/after-request hooks) that the other rows of
the bench are compared with. It exists only here: the service itself has no such route.
Every bench row is served by this same app, so the ratios compare like with like.
"""
from flask import jsonify

from app import create_app

app = create_app()


@app.get("/_bench/bare")
def bare():
    """The ceiling: the full request path of the app with no database work."""
    return jsonify(status="ok")
