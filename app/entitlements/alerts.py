"""Quota alerts (CONTRACT "Entitlements"): crossing each ``ENTITLEMENT_ALERT_THRESHOLDS`` percentage of a quota in a
period stores ``quota_warning`` (below 100) or ``quota_reached`` (100), once per threshold, feature and period, for
the user or the organisation's owner and admins, delivered like every notification.

A threshold counts as crossed when reached. Each consume moves ``used`` over an interval of its own (the ledger's
single conditional UPDATE), so of concurrent consumes exactly one crosses a threshold; the notification's
``event_id`` names the feature, period and threshold, so even a replay stores none twice.
"""
from flask import current_app

from app.extensions import db
from app.models import EntitlementBalance
from app.notifications import notified, notify
from app.signals import quota_consumed


def crossed(before, after, limit, thresholds):
    """The percentages of ``thresholds`` that ``used`` reached going from ``before`` to ``after`` units of ``limit``."""
    if not limit:
        return []
    return [percent for percent in thresholds if before * 100 < percent * limit <= after * 100]


@quota_consumed.connect
def alert_thresholds(sender, billable, feature, spec, amount, balance_id=None, used=None, **extra):
    """Notify the thresholds of the quota's limit (its plan's, or an override's) this take crossed: ``used`` is the
    balance's after it (what the take's own statement returned), so a take that crosses none reads nothing."""
    if not spec or spec.get("type") != "quota" or balance_id is None or used is None:
        return
    crossings = crossed(used - amount, used, spec.get("limit"), current_app.config["ENTITLEMENT_ALERT_THRESHOLDS"])
    if not crossings:
        return
    balance, owner = db.session.get(EntitlementBalance, balance_id), billable.load()
    for percent in crossings:
        kind = "quota_reached" if percent >= 100 else "quota_warning"
        event_id = f"quota:{feature}:{balance.period}:{percent}"
        if not notified(owner, kind, "alert", event_id):
            notify(owner, event_id, kind, {"feature": feature, "threshold": percent, "limit": spec["limit"],
                                           "used": used, "period": balance.period,
                                           "reset_at": int(balance.reset_at.timestamp()) if balance.reset_at
                                           else None, "alert": event_id})
