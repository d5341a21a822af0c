"""Lifecycle notifications (SPEC 6): stored for ``GET /notifications`` and, where configured, delivered.

Delivery goes through a transactional outbox: ``notify`` writes the notification and one
``NotificationDelivery`` row per configured channel in the caller's transaction, and the worker
(``flask deliver-notifications``, ``app.notifications.outbox``) sends them afterwards.
"""
import secrets

from flask import current_app
from sqlalchemy import select

from app.extensions import db
from app.models import Notification, NotificationDelivery
from app.notifications.channels import configured_channel_names
from app.notifications.kinds import ACCOUNT_EMAILS
from app.observability import metrics


def notify(user, event_id, kind, data):
    """Store a notification of ``kind`` (a CONTRACT notification kind) for the provider event ``event_id``.

    ``data`` is the kind's JSON object. At most one per event and kind: the webhook ledger processes
    an event id once, and the unique key (event_id, kind) refuses a second row should anything else
    try. Queues it for delivery on every configured channel in the same transaction, so a rolled-back
    webhook queues nothing (its ``notifications_total{state="queued"}`` count stays: the retry counts
    again). The caller owns the transaction.
    """
    notification = Notification(user_id=user.id, event_id=event_id, kind=kind, data=data)
    db.session.add(notification)
    for channel in configured_channel_names(current_app.config):
        db.session.add(NotificationDelivery(notification=notification, channel=channel))
        metrics.notification_queued(channel)


def notify_account(user, kind, data=None):
    """Queue an account email or notice of ``kind`` for ``user``; the caller owns the transaction.

    ``kind`` is an ``ACCOUNT_EMAILS`` kind (queued for the email channel alone, nothing when email
    is not configured) or a notice kind such as ``password_changed`` (stored and queued as
    ``notify`` does). ``data`` never holds a token. Not caused by a provider event, the row gets
    an ``event_id`` of its own (``account_`` and random hex), unique as the (event_id, kind) key needs.
    """
    event_id = f"account_{secrets.token_hex(12)}"
    if kind not in ACCOUNT_EMAILS:
        notify(user, event_id, kind, data or {})
    elif "email" in configured_channel_names(current_app.config):
        notification = Notification(user_id=user.id, event_id=event_id, kind=kind, data=data or {})
        db.session.add(notification)
        db.session.add(NotificationDelivery(notification=notification, channel="email"))
        metrics.notification_queued("email")


def notified(user, kind, field, value):
    """Whether ``user`` already has a ``kind`` notification whose ``data[field]`` is ``value``.

    For the kinds that come once per object whatever events arrive (a receipt per invoice, one
    ``subscribed`` per subscription), where two different events may call for the same one.
    """
    found = db.session.scalars(select(Notification.data).where(Notification.user_id == user.id,
                                                               Notification.kind == kind))
    return any((data or {}).get(field) == value for data in found)


def announce_trial(user, event_id, subscription, ended=False):
    """Store ``trial_started`` for the trialing ``subscription`` row, or, when the card-fingerprint rule
    ``ended`` it at once, ``subscribed`` (it is paid from now); once per subscription either way.

    Called when the trial's card was saved (``setup_intent.succeeded``, or a Checkout session's
    completion): a trial the rule ended is never announced as started (CONTRACT "Changes to the
    fourth round"). ``data``: ``{"subscription", "trial_end"}`` (Unix seconds), or ``subscribed``'s.
    """
    kind = "subscribed" if ended else "trial_started"
    if subscription.provider_status != ("active" if ended else "trialing") \
            or notified(user, kind, "subscription", subscription.provider_id):
        return
    if ended:
        notify(user, event_id, kind, {"subscription": subscription.provider_id, "from_status": "trialing",
                                      "status": "active"})
        return
    trial_end = int(subscription.trial_ends_at.timestamp()) if subscription.trial_ends_at else None
    notify(user, event_id, kind, {"subscription": subscription.provider_id, "trial_end": trial_end})
