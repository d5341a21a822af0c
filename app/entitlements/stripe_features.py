"""Stripe Entitlements: the lookup keys of a billable's active entitlements, as Stripe last said (CONTRACT
"Additions (sixth round)", "Entitlements": they turn on boolean features of the same name).

Written only from Stripe's answers, in the caller's transaction, under the billable's lock:

- ``entitlements.active_entitlement_summary.updated`` (``commit_summary``, the webhook's listener). Its
  summary lists at most 10 entitlements, ``has_more`` telling there are more (stripe/sync-engine#197);
  then, or when the event ties with the state stored (same second: which is newer cannot be told), or
  its list cannot be read, the live list is read instead (https://docs.stripe.com/billing/entitlements:
  "Listen to the Active Entitlement Summary webhook and use the List Active Entitlements API"). An event
  older than the state stored changes nothing, so a late delivery never turns a feature back on.
- ``sync`` (``refresh``): the live list, as of now.

The live list is one page of 100 (``SubscriptionProvider.list_active_entitlements``): beyond it the
other features stay off (logged), never on. ``features.active_lookup_keys`` reads the table: no Stripe call.
Each write that may change the keys ``announce``s the billable's features (``entitlements.updated``).
"""
import logging

from sqlalchemy import select

from app.billing.state import live_as_of
from app.entitlements.updates import announce
from app.errors import ProviderRejected
from app.extensions import db
from app.models.stripe_entitlement import StripeEntitlementSummary
from app.timeutil import from_timestamp

log = logging.getLogger(__name__)

# Stripe's limit on a feature's lookup key (the SDK's ``FeatureCreateParams.lookup_key``).
LOOKUP_KEY_LENGTH = 80


def _row(billable):
    return db.session.scalar(select(StripeEntitlementSummary)
                             .where(StripeEntitlementSummary.billable == billable.billable_key))


def _lookup_keys(entitlements):
    """The lookup keys of a Stripe list of active entitlements (a dict) and whether every entry had a valid one."""
    data = entitlements.get("data") if isinstance(entitlements, dict) else None
    keys = [entry.get("lookup_key") if isinstance(entry, dict) else None for entry in data or ()]
    valid = {key for key in keys if isinstance(key, str) and 0 < len(key) <= LOOKUP_KEY_LENGTH}
    return valid, isinstance(data, list) and len(valid) == len(set(keys))


def _live_keys(provider, billable):
    """Read the customer's active entitlements from Stripe (one page of 100)."""
    page = provider.list_active_entitlements(billable.provider_id)
    keys, readable = _lookup_keys(page)
    if not readable or page.get("has_more"):
        # Fail closed: a feature not read stays off, none is turned on by guesswork.
        log.warning("active entitlements of customer %s: kept the %d readable lookup keys of the first page",
                    billable.provider_id, len(keys))
    return keys


def _write(billable, row, keys, as_of):
    """Store ``keys`` as the billable's as of ``as_of``; return the keys stored before (a set)."""
    if row is None:
        row = StripeEntitlementSummary(billable=billable.billable_key, lookup_keys=[], as_of=as_of,
                                       **billable.owner_columns())
        db.session.add(row)
    before = set(row.lookup_keys)
    row.lookup_keys, row.as_of = sorted(keys), as_of
    db.session.flush()
    return before


def commit_summary(provider, billable, event):
    """Write an ``entitlements.active_entitlement_summary.updated`` event's keys; nothing when the stored state
    is newer. Raises ``ProviderUnavailable`` when the live list must be read and cannot be now (the delivery
    fails, Stripe retries it)."""
    as_of = from_timestamp(event["created"])
    row = _row(billable)
    if row is not None and as_of < row.as_of:
        return
    entitlements = event["data"]["object"].get("entitlements")
    keys, readable = _lookup_keys(entitlements)
    if not readable or entitlements.get("has_more") is not False or (row is not None and as_of == row.as_of):
        as_of = live_as_of()
        try:
            keys = _live_keys(provider, billable)
        except ProviderRejected:
            # Stripe knows no such customer (any more): it has no entitlements. A 5xx would only bring the
            # same event back for days.
            log.warning("event %s: active entitlements of customer %s refused; none kept", event["id"],
                        billable.provider_id)
            keys = set()
    _write(billable, row, keys, as_of)
    announce(billable)


def refresh(provider, billable):
    """``sync``: write the billable's live active entitlements as of now. Returns the change as
    ``[("stripe_features", old, new)]`` (comma-separated sorted keys, ``None`` for none), or ``[]``."""
    row = _row(billable)
    if not billable.provider_id and row is None:
        return []
    keys = _live_keys(provider, billable) if billable.provider_id else set()
    before = _write(billable, row, keys, live_as_of())
    # Here too for the plan ``sync`` has just recomputed: the one place of ``sync`` an announcement can run.
    announce(billable)
    if before == keys:
        return []
    return [("stripe_features", ",".join(sorted(before)) or None, ",".join(sorted(keys)) or None)]
