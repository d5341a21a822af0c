"""Lifecycle notifications (SPEC 6): stored for ``GET /notifications`` and, where configured, delivered."""
from app.extensions import db
from app.models import Notification


def notify(user, event_id, kind, data):
    """Store a notification of ``kind`` (a CONTRACT notification kind) for the provider event ``event_id``.

    ``data`` is the kind's JSON object. At most one per event and kind: the webhook ledger processes
    an event id once, and the unique key (event_id, kind) refuses a second row should anything else
    try. The caller owns the transaction.
    """
    db.session.add(Notification(user_id=user.id, event_id=event_id, kind=kind, data=data))
