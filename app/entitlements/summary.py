"""A billable's features as JSON (CONTRACT "Entitlements", **Feature**): ``GET /entitlements``, the Feature part of a
check's answer and of ``entitlements.updated``. Database reads only, no Stripe call.

Apart from ``service`` (which takes units) so that what reads the features (``updates``, which Stripe's and the
plan's writers call) does not import what consumes them.
"""
from app.entitlements import ledger
from app.entitlements.features import entitled
from app.timeutil import isoformat_z


def periodic(state, spec, now):
    """``spec`` with the current period's ``period`` key and ``reset_at``."""
    period, reset_at = ledger.period_of(spec, state.subscription, now)
    return {**spec, "period": period, "reset_at": reset_at}


def quota(spec, owner, name, now):
    """The Feature JSON of a quota: ``spec`` is ``periodic``'s, the balance read now."""
    balance = ledger.find(owner, name, spec["period"])
    used, reserved = (balance.used, balance.reserved - ledger.unreturned(balance.id, now)) if balance else (0, 0)
    return quota_of(spec, used, reserved)


def quota_of(spec, used, reserved):
    """The Feature JSON of a quota (``spec`` is ``periodic``'s) with ``used`` and live ``reserved`` units."""
    limit = spec["limit"]
    return {"type": "quota", "limit": limit, "used": used, "reserved": reserved,
            "remaining": None if limit is None else max(0, limit - used - reserved),
            "reset_at": isoformat_z(spec["reset_at"]), "overage": spec["overage"], "source": spec["source"]}


def present(state, owner, name, spec, now):
    """The Feature JSON of ``name`` for ``owner`` (``ledger.owner_of``)."""
    if spec["type"] == "boolean":
        return {"type": "boolean", "enabled": spec["enabled"], "source": spec["source"]}
    return quota(periodic(state, spec, now), owner, name, now)


def features(billable, now):
    """``GET /entitlements``'s ``{"plan", "features": {name: Feature}, "as_of"}``; quotas the plan lacks left out."""
    state, owner = entitled(billable, now), ledger.owner_of(billable)
    shown = {name: present(state, owner, name, spec, now) for name, spec in sorted(state.features.items())
             if spec is not None}
    return {"plan": state.plan, "features": shown, "as_of": isoformat_z(state.as_of)}
