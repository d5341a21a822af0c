"""Which features a billable has now: its entitled plan's, Stripe's active entitlements, support overrides.

The plan is ``CommitPlan``'s (``app.billing.plans.entitled_plan``: the newest valid subscription's, grace
period included; ``FREE_PLAN`` without one), read from the database: no Stripe call (CONTRACT
"Entitlements"). Precedence: an active override, else the plan, else (booleans only) Stripe.
"""
from dataclasses import dataclass

from flask import current_app
from sqlalchemy import select

from app.billing.plans import entitled_plan, entitled_subscription
from app.entitlements.errors import UnknownFeature
from app.entitlements.plan_features import FEATURE_NAME
from app.entitlements.reads import BillableSnapshot, active_override_condition
from app.extensions import db
from app.models.entitlement import EntitlementOverride
from app.models.stripe_entitlement import StripeEntitlementSummary

PLAN, STRIPE, OVERRIDE = "plan", "stripe", "override"


@dataclass
class Entitled:
    """A billable's entitlements at one moment: ``plan`` (name), ``features`` (name -> spec with ``source``;
    ``None`` for a quota its plan lacks), ``subscription`` (the entitled one or ``None``), ``as_of`` (when
    Stripe last confirmed its subscriptions, or ``None`` when it never had one)."""

    plan: str
    features: dict
    subscription: object
    as_of: object

    def spec(self, feature):
        """The feature's spec; raise ``UnknownFeature`` (422) for a name no plan grants."""
        if feature not in self.features:
            raise UnknownFeature.named(feature)
        return self.features[feature]


def catalog():
    """Every feature some plan of ``PLAN_FEATURES`` names -> its first spec (a feature has one type everywhere)."""
    found = {}
    for features in current_app.config["PLAN_FEATURES"].values():
        for name, spec in features.items():
            found.setdefault(name, spec)
    return found


def active_lookup_keys(billable):
    """Return the lookup keys (``set[str]``) of the billable's active Stripe entitlements as Stripe last said
    (``app.entitlements.stripe_features`` writes them); empty when none. No Stripe call."""
    keys = db.session.scalar(select(StripeEntitlementSummary.lookup_keys)
                             .where(StripeEntitlementSummary.billable == billable.billable_key))
    return set(keys or ())


def active_overrides(billable, now):
    """``{feature: EntitlementOverride}``: the newest unrevoked, unexpired override of each feature."""
    rows = db.session.scalars(select(EntitlementOverride).where(
        EntitlementOverride.billable == billable.billable_key, active_override_condition(now))
        .order_by(EntitlementOverride.id))
    return {row.feature: row for row in rows}


def _resolve(name, spec, granted, override, stripe_on):
    """One feature's spec with its ``source``: ``granted`` is the plan's spec of it, or ``None``."""
    if override is not None:
        if spec["type"] == "boolean":
            return {"type": "boolean", "enabled": bool(override.enabled), "source": OVERRIDE}
        return {**(granted or spec), "limit": override.limit, "source": OVERRIDE}
    if spec["type"] == "boolean":
        enabled = bool(granted and granted["enabled"])
        if not enabled and name in stripe_on:
            return {"type": "boolean", "enabled": True, "source": STRIPE}
        return {"type": "boolean", "enabled": enabled, "source": PLAN}
    return None if granted is None else {**granted, "source": PLAN}


def entitled(billable, now):
    """Return the ``Entitled`` of ``billable`` (a ``User`` or ``Organization``, or the check path's
    ``BillableSnapshot``, which carries its Stripe features and whether to read overrides) at ``now``."""
    if isinstance(billable, BillableSnapshot):
        stripe_on = set(billable.lookup_keys)
        overrides = active_overrides(billable, now) if billable.overridden else {}
    else:
        stripe_on, overrides = active_lookup_keys(billable), active_overrides(billable, now)
    plan = entitled_plan(billable, now)
    granted = current_app.config["PLAN_FEATURES"].get(plan, {})
    known = catalog()
    # A Stripe feature no plan names is a boolean of its own (CONTRACT: "of the same lookup_key").
    known.update({key: {"type": "boolean", "enabled": False} for key in stripe_on
                  if key not in known and FEATURE_NAME.fullmatch(key)})
    features = {name: _resolve(name, spec, granted.get(name), overrides.get(name), stripe_on)
                for name, spec in known.items()}
    confirmed = [s.provider_updated_at for s in billable.subscriptions if s.provider_updated_at is not None]
    return Entitled(plan, features, entitled_subscription(billable, now), max(confirmed, default=None))
