"""The service as ``wsgi.py`` builds it, plus one bench-only route: ``gunicorn scripts.bench.service_app:app``.

``GET /_bench/bare`` answers ``{"status": "ok"}`` and touches no database, so its throughput is the
ceiling of the stack (gunicorn, Flask, the app's before/after-request hooks) that the other rows of
the bench are compared with. ``POST /_bench/write`` is the ceiling of any consume: the consume's take
statement alone, durably committed, with no key, no validation, no billable read and no claim.
They exist only here: the service itself has no such routes.
Every bench row is served by this same app, so the ratios compare like with like.
"""
from flask import jsonify, request

from app import create_app
from app.entitlements import ledger
from app.extensions import db
from app.timeutil import utcnow

app = create_app()


@app.get("/_bench/bare")
def bare():
    """The ceiling: the full request path of the app with no database work."""
    return jsonify(status="ok")


@app.post("/_bench/write")
def write():
    """Take 1 unit of ``{"customer": {"user": id}, "feature"}``'s balance in one statement on a connection of its
    own in autocommit (one round trip, then the WAL flush a commit waits for): what every consume must at least
    do, for the consume row's ratio."""
    body, now = request.get_json(), utcnow()
    user_id = body["customer"]["user"]
    with db.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        taken = connection.execute(ledger._TAKE_LIMITED, {
            "billable": f"user:{user_id}", "user_id": user_id, "organization_id": None, "feature": body["feature"],
            "period": "bench", "reset_at": None, "amount": 1, "limit": 10**15, "now": now}).first()
    return jsonify(used=taken.used)
