"""The Standard Webhooks event ``entitlements.updated`` (CONTRACT "Additions (sixth round)", "Entitlements": "A change
of a billable's features sends the Standard Webhooks event ``entitlements.updated`` with the new features").

A billable's features change with its entitled plan (``CommitPlan``'s webhooks, ``sync``), its active Stripe
Entitlements features (their webhook, ``sync``) and support overrides (``flask entitlements grant|revoke``); each
of those paths calls ``announce`` after it wrote, in its own transaction. The event is a row of the notification
outbox (``notify_app``): sent once that transaction commits, retried with backoff, never sent for a rolled-back
change, and to the client app's webhook alone.

A change is judged against the terms the app was last *sent*, not against the row's previous state: a change made
where no ``announce`` runs (a swap's answer from Stripe, written before its webhook arrives) is sent by the next
path that runs one instead of never, and a duplicate webhook or a renewal, which change no term, send nothing. An
override's ``--until`` passing is announced by ``flask entitlements announce-expired``, from cron. Before its first
event a billable is taken to have the free plan's features, as every billable starts.
"""
from flask import current_app

from app.entitlements import summary
from app.entitlements.features import PLAN, catalog
from app.notifications import app_event_sent, notify_app
from app.notifications.channels import configured_channel_names
from app.timeutil import utcnow

KIND = "entitlements.updated"


def _term(feature_type, enabled, limit, overage, source, resets):
    return feature_type, enabled, limit, overage, source, resets


def terms(features):
    """What an app gates on, of ``{name: Feature JSON}`` (``GET /entitlements``'s): everything but the counters and
    the reset time, which move with every consume and renewal and are no change of features."""
    return {name: _term(f["type"], f.get("enabled"), f.get("limit"), f.get("overage"), f["source"],
                        f.get("reset_at") is not None) for name, f in features.items()}


def _free_terms():
    """``terms`` of a billable on the free plan without Stripe features or overrides: the baseline."""
    free = current_app.config["PLAN_FEATURES"].get(current_app.config["FREE_PLAN"], {})
    found = {}
    for name, spec in catalog().items():
        granted = free.get(name)
        if spec["type"] == "boolean":
            found[name] = _term("boolean", bool(granted and granted["enabled"]), None, None, PLAN, False)
        elif granted is not None:
            found[name] = _term("quota", None, granted["limit"], granted["overage"], PLAN, granted["reset"] != "never")
    return found


def announce(billable, now=None):
    """Queue ``entitlements.updated`` for ``billable`` (a ``User`` or ``Organization``) when its features' ``terms``
    differ from the last ones sent; return the notification's id, or ``None`` (no change, or no
    ``NOTIFY_WEBHOOK_URL``: nothing reads it). Database reads only, no Stripe call; the caller commits.

    Body ``data``: ``{"customer": {"user": id} | {"organization": id}, "plan", "features": {name: Feature}}``,
    the features as ``GET /entitlements`` shows them at ``now`` (counters included).
    """
    if "webhook" not in configured_channel_names(current_app.config):
        return None
    customer = {billable.kind: billable.id}
    shown = summary.features(billable, now or utcnow())
    sent = app_event_sent(billable, KIND, "customer", customer)
    if terms(shown["features"]) == (terms(sent["features"]) if sent else _free_terms()):
        return None
    return notify_app(billable, KIND, {"customer": customer, "plan": shown["plan"], "features": shown["features"]})
