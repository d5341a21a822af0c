"""A notification as JSON (CONTRACT "Resources as JSON"): the page of ``GET /notifications`` and the
``data.notification`` of a webhook notification's body carry the same shape."""
from marshmallow import Schema, fields

from app.fields import Timestamp
from app.notifications.kinds import NOTIFICATION_KINDS


class NotificationSchema(Schema):
    id = fields.Integer(required=True)
    kind = fields.String(required=True, metadata={
        "enum": list(NOTIFICATION_KINDS),
        "description": "What happened, decided from a provider event; `data` depends on it. "
                       + " ".join(f"`{kind}`: {text}" for kind, text in NOTIFICATION_KINDS.items())})
    created_at = Timestamp(required=True)
    data = fields.Dict(required=True)
