"""Lifecycle notifications (SPEC 6): stored for ``GET /notifications`` and, where configured, delivered.

Delivery goes through a transactional outbox: ``notify`` writes the notification and one
``NotificationDelivery`` row per configured channel in the caller's transaction, and the worker
(``flask deliver-notifications``, ``app.notifications.outbox``) sends them afterwards.
"""
import secrets

from flask import current_app
from sqlalchemy import bindparam, select

from app.billing import writer
from app.extensions import db
from app.models import Notification, NotificationDelivery
from app.notifications.channels import configured_channel_names
from app.notifications.kinds import ACCOUNT_EMAILS, APP_EVENTS
from app.observability import metrics
from app.pagination import newest_first

_NOTIFIED = select(Notification.__table__.c.data).where(
    Notification.__table__.c.user_id.in_(bindparam("recipients", expanding=True)),
    Notification.__table__.c.kind == bindparam("kind"))


def notify(billable, event_id, kind, data):
    """Store a notification of ``kind`` (a CONTRACT notification kind) for the provider event ``event_id``.

    ``billable`` is a user, or an organisation whose owner and admins each get their own row with
    ``"organization": {"id", "name"}`` in ``data`` (``Billable.recipients``, ``notification_data``).
    ``data`` is the kind's JSON object. At most one per user, event and kind: the webhook ledger
    processes an event id once, and the unique key (user_id, event_id, kind) refuses a second row
    should anything else try. Queues each for delivery on every configured channel in the same
    transaction, so a rolled-back webhook queues nothing (its ``notifications_total{state="queued"}``
    count stays: the retry counts again). The caller owns the transaction.
    """
    data = {**data, **billable.notification_data()}
    channels = configured_channel_names(current_app.config)
    for user in billable.recipients():
        writer.write_notification(user, event_id, kind, data, channels)
        for channel in channels:
            metrics.notification_queued(channel)


def notify_membership(organization, kind, member, data):
    """Tell the organisation's owner and admins (``notify``) that ``member`` (a ``User``) joined or left:
    ``kind`` is ``member_joined`` or ``member_left``. Not caused by a provider event, the rows get an
    ``event_id`` of their own (``member_`` and random hex). The caller owns the transaction."""
    notify(organization, f"member_{secrets.token_hex(12)}", kind,
           {"member": {"id": member.id, "email": member.email, "name": member.name}, **data})


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


def notify_app(billable, kind, data):
    """Queue the ``APP_EVENTS`` event ``kind`` about ``billable`` for the client app's webhook, once (an
    organisation's not once per admin); return its notification id, or ``None`` when no webhook is configured.

    Held by the billable's first recipient (the outbox sends a user's rows); never emailed nor listed. A stored
    row is the last ``data`` the app was sent (``app_event_sent``). The caller owns the transaction.
    """
    recipients = billable.recipients()
    if "webhook" not in configured_channel_names(current_app.config) or not recipients:
        return None
    event_id = f"app_{secrets.token_hex(12)}"
    notification_id = writer.write_notification(recipients[0], event_id, kind, data, ["webhook"])
    metrics.notification_queued("webhook")
    return notification_id


def app_event_sent(billable, kind, field, value):
    """The ``data`` of the newest ``kind`` event queued for the app (``notify_app``) whose ``data[field] == value``,
    or ``None``."""
    recipients = [user.id for user in billable.recipients()]
    found = db.session.connection().scalars(
        select(Notification.__table__.c.data).where(Notification.__table__.c.user_id.in_(recipients),
                                                    Notification.__table__.c.kind == kind)
        .order_by(Notification.__table__.c.id.desc()))
    return next((data for data in found if (data or {}).get(field) == value), None)


def _about(data):
    """The id of the organisation a notification's ``data`` is about, ``None`` for a user's own billing."""
    return ((data or {}).get("organization") or {}).get("id")


def notified(billable, kind, field, value):
    """Whether ``billable`` was already told of ``kind`` with ``data[field] == value``.

    For the kinds that come once per object whatever events arrive (a receipt per invoice, one
    ``subscribed`` per subscription), where two different events may call for the same one.
    """
    about = _about(billable.notification_data())
    recipients = [user.id for user in billable.recipients()]
    # On the session's connection: the rows ``notify`` wrote are there, no ORM object is involved.
    found = db.session.connection().scalars(_NOTIFIED, {"recipients": recipients, "kind": kind})
    return any((data or {}).get(field) == value and _about(data) == about for data in found)


def announce_trial(billable, event_id, subscription, ended=False):
    """Store ``trial_started`` for the trialing ``subscription`` row, or, when the card-fingerprint rule
    ``ended`` it at once, ``subscribed`` (it is paid from now); once per subscription either way.

    Called when the trial's card was saved (``setup_intent.succeeded``, or a Checkout session's
    completion): a trial the rule ended is never announced as started (CONTRACT "Changes to the
    fourth round"). ``data``: ``{"subscription", "trial_end"}`` (Unix seconds), or ``subscribed``'s.
    """
    kind = "subscribed" if ended else "trial_started"
    if subscription.provider_status != ("active" if ended else "trialing") \
            or notified(billable, kind, "subscription", subscription.provider_id):
        return
    if ended:
        notify(billable, event_id, kind, {"subscription": subscription.provider_id, "from_status": "trialing",
                                          "status": "active"})
        return
    trial_end = int(subscription.trial_ends_at.timestamp()) if subscription.trial_ends_at else None
    notify(billable, event_id, kind, {"subscription": subscription.provider_id, "trial_end": trial_end})


def list_notifications(user, limit=20, starting_after=None):
    """Return ``(notifications, has_more)``: the user's notifications newest first, ``limit`` per page.

    Account emails (verification, email change, reset) and events for the app (``APP_EVENTS``) are outbox
    rows, not notices: never listed.
    """
    return newest_first(select(Notification).where(Notification.user_id == user.id,
                                                   Notification.kind.not_in([*ACCOUNT_EMAILS, *APP_EVENTS])),
                        Notification.id, limit, starting_after)
