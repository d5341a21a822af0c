"""The ceiling of ``make bench``: a minimal Flask app, one JSON route and nothing else.

``gunicorn scripts.bench.minimal_app:app``, with the same settings as the service, in the same run:
every ratio in the bench table is taken against this app's ``GET /`` (issue 13). It shares no
code with the service, so it measures what gunicorn, Werkzeug and Flask cost on their own.
"""
from flask import Flask, jsonify

app = Flask(__name__)


@app.get("/")
def status():
    """Answer ``{"status": "ok"}``."""
    return jsonify(status="ok")
