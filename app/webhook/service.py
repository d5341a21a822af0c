"""Processing one provider webhook delivery: verify -> ledger -> write the row -> ``webhook_handled``.

Replays of failed events (``flask webhook-replay``) take the same path after the verification.

SPEC 4 rule 5 and CONTRACT "Webhook processing". Everything happens in the caller's one
transaction, so a failure anywhere leaves nothing behind and the provider's retry starts afresh.
"""
import logging

from flask import current_app
from sqlalchemy import bindparam, text

from app.billing import objects, redemptions, state, statuses
from app.billing.events import ACCOUNT_TYPES, CHECKOUT_TYPES, EXPECTED_OBJECT, SUBSCRIPTION_WRITING_TYPES
from app.billing.provider import get_provider
from app.errors import InvalidPayload, ProviderRejected, ServiceUnavailable
from app.extensions import db
from app.models import WebhookEvent
from app.models.types import UTCDateTime
from app.observability import annotate
from app.signals import webhook_handled
from app.timeutil import from_timestamp, utcnow
from app.webhook import failures
from app.webhook.schemas import EventSchema, SubscriptionObjectSchema

log = logging.getLogger(__name__)

_EVENT = EventSchema()
_SUBSCRIPTION_OBJECT = SubscriptionObjectSchema()
# PROVIDER_LIVEMODE -> the ``livemode`` an event must carry to be processed.
_LIVEMODE = {"live": True, "test": False}


def write_subscription(provider, billable, event):
    """Write the subscription row from an event carrying a subscription, never rolling it back.

    An event older than the newest applied is skipped, and the answer is ``"stale"``; one whose
    subscription is another billable's is ``"ignored"`` with a warning (else ``None``).
    Two events of the same second cannot be ordered by ``created``: on such a tie the statuses'
    one-way order decides when it can (``statuses.tie_order``), else the live subscription is read and
    written instead; when the provider refuses that read (it knows no such subscription), the row is
    left as it is.
    """
    obj = event["data"]["object"]
    as_of = from_timestamp(event["created"])
    existing = state.subscription_of(billable, obj["id"])
    if existing is None and state.owner_of_subscription(obj["id"]) not in (None, billable.billable_key):
        # Signed, yet it names another billable's subscription under this customer (Stripe never moves a
        # subscription between customers): nothing here can be right to write, and a 5xx would only
        # bring the same body back for three days.
        log.warning("event %s: subscription %s belongs to another user or organisation than customer %s; ignored",
                    event["id"], obj["id"], obj.get("customer"))
        return "ignored"
    if state.is_stale(existing, as_of):
        return "stale"
    unordered = False
    if existing is not None and as_of == existing.provider_updated_at:
        # Most ties are a creation's burst (incomplete, then active in the same second): the
        # statuses' one-way order tells those apart without a Stripe call.
        order = statuses.tie_order(existing.provider_status, objects.text_of(obj.get("status")))
        if order < 0:
            return "stale"
        unordered = order == 0
    # A tie the statuses cannot order, or a discount named by id only (which cannot be shown): the
    # live object says both.
    unread = objects.discount_of(obj, existing.discount if existing else None) is objects.UNREAD
    if unordered or unread:
        try:
            obj = provider.retrieve_subscription(obj["id"])
        except ProviderRejected:
            # A refusal is final: answering 5xx would only repeat it on every retry for days.
            log.warning("subscription %s of event %s is unknown to the provider", obj["id"], event["id"])
            return
    state.apply_subscription(billable, obj, as_of)


def write_checkout(provider, billable, event):
    """Sync the subscription of a completed Checkout Session (SPEC 4 ``sync``: a live read, as of now).

    The session names its subscription by id; the live one is written whatever the order of the
    subscription's own events, which then change nothing older. A session without one (not paid
    yet), or one Stripe refuses to read, writes nothing.
    """
    subscription_id = objects.ref_id(event["data"]["object"].get("subscription"))
    if not subscription_id:
        return None
    if state.owner_of_subscription(subscription_id) not in (None, billable.billable_key):
        log.warning("event %s: subscription %s belongs to another user or organisation; ignored", event["id"],
                    subscription_id)
        return "ignored"
    try:
        live = provider.retrieve_subscription(subscription_id)
    except ProviderRejected:
        log.warning("subscription %s of event %s is unknown to the provider", subscription_id, event["id"])
        return None
    state.apply_subscription(billable, live, state.live_as_of())
    return None


# Event type -> row writer (STYLE rule 8), from the table in ``app.billing.events``; every other
# type writes no row.
WRITERS = {event_type: write_subscription for event_type in SUBSCRIPTION_WRITING_TYPES}
WRITERS.update({event_type: write_checkout for event_type in CHECKOUT_TYPES})


def check_event(event):
    """Raise ``InvalidPayload`` unless ``event`` has the shape of a provider event that can be stored."""
    errors = _EVENT.validate(event) if isinstance(event, dict) else {"_schema": ["Not an object."]}
    if errors:
        raise InvalidPayload(details=errors)
    obj = event["data"]["object"]
    # Types the service does not handle go unchecked: they are acknowledged and ignored, whatever
    # they carry (an endpoint with every event enabled gets customer.discount.*, ... too).
    expected = EXPECTED_OBJECT.get(event["type"])
    if expected and obj.get("object", expected) != expected:
        raise InvalidPayload(f"A {event['type']} event must carry a {expected}, not a {obj.get('object')}.")
    if expected == "subscription":
        errors = _SUBSCRIPTION_OBJECT.validate(obj)
        if errors:
            raise InvalidPayload("The subscription in the event cannot be stored.", details=errors)


# Text, not ``postgresql.insert(...).on_conflict_do_nothing()``: SQLAlchemy's dialect INSERTs are
# not cacheable (``inherit_cache = False``), so that statement was compiled again on every
# delivery, a third of the ledger write. Both databases speak this SQL (SQLite since 3.35).
_LEDGER_VALUES = (f"INSERT INTO {WebhookEvent.__tablename__} (id, type, received_at, processed_at, created) "
                  "VALUES (:id, :type, :received_at, :processed_at, :created) ON CONFLICT (id) DO NOTHING RETURNING id")
_TIMES = tuple(bindparam(name, type_=UTCDateTime()) for name in ("received_at", "processed_at", "created"))
_LEDGER_INSERT = text(_LEDGER_VALUES).bindparams(*_TIMES)
# On PostgreSQL the failure record is resolved in the same statement, a data-modifying WITH (run
# once whether or not the INSERT reads it): one round trip fewer per event. SQLite's WITH takes
# only a SELECT, so there it is a statement of its own.
_LEDGER_INSERT_RESOLVING = text(f"WITH resolved AS ({failures.RESOLVE_SQL}) {_LEDGER_VALUES}").bindparams(
    *_TIMES, bindparam("now", type_=UTCDateTime()))


def record(event):
    """Add the event to the ledger and resolve its failure record, if any; return ``False`` when it was
    already processed (a redelivery).

    ``INSERT ... ON CONFLICT DO NOTHING`` rather than catching a duplicate key: no savepoint is
    needed (pysqlite's savepoints do not nest in the outer transaction), and on PostgreSQL a
    concurrent delivery of the same event waits on the key until the first one commits (then it
    is a duplicate) or rolls back (then it processes the event itself). Finding it processed
    already resolves the failure record too: an earlier attempt failed after another succeeded.
    """
    now = utcnow()
    values = {"id": event["id"], "type": event["type"], "received_at": now, "processed_at": now,
              "created": from_timestamp(event["created"])}
    # On the session's connection (its transaction): the ORM's execution layer has nothing to
    # add to an INSERT of no mapped object, and it cost a fifth of a delivery.
    connection = db.session.connection()
    if connection.dialect.name == "postgresql":
        return connection.execute(_LEDGER_INSERT_RESOLVING, {**values, "now": now}).first() is not None
    first = connection.execute(_LEDGER_INSERT, values).first() is not None
    failures.resolve(event["id"])
    return first


def read_delivery(payload, signature_header):
    """Return the event dict of one signed delivery (``payload``: the raw body, bytes).

    Raises ``InvalidSignature`` / ``InvalidPayload`` (400): such a body is neither stored nor processed;
    ``ServiceUnavailable`` (503) when ``PROVIDER_WEBHOOK_SECRET`` is not set.
    """
    config = current_app.config
    if not config["PROVIDER_WEBHOOK_SECRET"]:
        raise ServiceUnavailable.not_configured("PROVIDER_WEBHOOK_SECRET")
    event = get_provider().verify_event(payload, signature_header, config["PROVIDER_WEBHOOK_SECRET"],
                                        config["PROVIDER_WEBHOOK_TOLERANCE"])
    check_event(event)
    return event


def mode_accepted(event):
    """Whether the event's ``livemode`` matches ``PROVIDER_LIVEMODE`` (``any`` accepts every event; the
    default follows the API key's mode)."""
    wanted = current_app.config["PROVIDER_LIVEMODE"]
    return wanted == "any" or event.get("livemode") is _LIVEMODE[wanted]


def process_event(event):
    """Apply one verified event; return ``"processed"``, ``"stale"`` (no row changed: a newer event
    was applied first), ``"duplicate"`` or ``"ignored"``.

    The one path of deliveries and replays: the ledger, the ordering guard, ``webhook_handled``.
    Ignored: an event of the other mode (``PROVIDER_LIVEMODE``, not even recorded, as Pay does), of
    an unknown customer, or naming another user's subscription. The account's catalogue events
    (``ACCOUNT_TYPES``) name no customer and reach the listeners with ``billable=None``. Processing it, or finding it
    processed already, resolves its failure record. Raises ``ProviderUnavailable`` or any other
    error (5xx) when processing fails; the caller commits, or rolls back.
    """
    annotate(event_id=event["id"], event_type=event["type"])
    if not mode_accepted(event):
        return "ignored"
    if not record(event):
        return "duplicate"
    if event["type"] in CHECKOUT_TYPES:  # the person who opened it first, then the billable (redemptions.lock_person)
        redemptions.lock_person_of(event["data"]["object"])
    billable = state.lock_customer(objects.customer_id_of(event["data"]["object"]))
    if billable is None and event["type"] not in ACCOUNT_TYPES:
        return "ignored"
    writer = WRITERS.get(event["type"])
    outcome = writer(get_provider(), billable, event) if writer is not None else None
    if outcome == "ignored":
        return outcome
    # A stale event still reaches the listeners: its notification is news even when its row is old.
    webhook_handled.send(current_app._get_current_object(), event=event, billable=billable)
    return outcome or "processed"
