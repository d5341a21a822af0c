"""The billing portal configuration the service owns (CONTRACT "Changes to the fourth round").

Stripe's portal applies its configuration's rules, not the service's: without one it swaps plans
with the account's default ``create_prorations`` (an upgrade then runs to the period's end
uninvoiced) and offers every price. So every portal session names a configuration:

- ``PROVIDER_PORTAL_CONFIGURATION`` (a ``bpc_`` id), when set, is used as it is: the operator owns it;
- otherwise the service keeps two of its own at Stripe, found by their ``metadata`` and made or
  updated to the terms below on first use in each process (one list call, then at most one write):
  ``locked`` (no plan changes) and, with ``PROVIDER_PORTAL_PLAN_CHANGES=true``, ``plan_changes``
  (only ``PROVIDER_PLANS`` prices of plans without metered prices, ``proration_behavior=always_invoice``:
  an upgrade is invoiced at once, as the service's own swap of a dearer plan is; a downgrade, to a cheaper
  item or a shorter interval, is scheduled for the period's end by ``schedule_at_period_end``: Stripe puts
  the subscription on a schedule of its own, which the service shows as ``scheduled_change`` and never
  releases, ``schedule_not_ours``).

Neither offers quantities (``adjustable_quantity`` off: seats are the service's), promotion codes
(every code passes ``promotions.resolve``) or an email change (the address is the account's). A
subscription in dunning, awaiting a payment or a card, or with metered items, gets ``locked``
(``service.portal_url``).
https://docs.stripe.com/api/customer_portal/configurations/create
"""
import hashlib
import json
import logging

from flask import current_app

from app.billing import catalog, prices
from app.errors import UnknownPrice

log = logging.getLogger(__name__)

MANAGED_BY = "subscription-service"
# The changes the portal schedules for the period's end rather than invoicing now (CONTRACT "Plan changes at the
# period's end"): a cheaper item, a shorter interval. Stripe's condition types, https://docs.stripe.com/api/
# customer_portal/configurations/create#create_portal_configuration-features-subscription_update-schedule_at_period_end
AT_PERIOD_END = ("decreasing_item_amount", "shortening_interval")


def _features(provider, plan_changes):
    update = {"enabled": False}
    if plan_changes:
        by_product = {}
        # A plan with metered prices is not offered: a portal swap moves only the licensed item's price,
        # and the plan's metered items would not follow (the service's swap moves them in the same update).
        configured = current_app.config["PROVIDER_PLANS"]
        metered_plans = {configured[price] for price in catalog.metered_prices()}
        for price in sorted(price for price, plan in configured.items() if plan not in metered_plans):
            try:
                by_product.setdefault(prices.terms(provider, price)["product"], []).append(price)
            except UnknownPrice:
                log.warning("price %s of PROVIDER_PLANS is unknown to Stripe: not offered in the portal", price)
        update = {"enabled": True, "default_allowed_updates": ["price"], "proration_behavior": "always_invoice",
                  "products": [{"product": product, "prices": listed, "adjustable_quantity": {"enabled": False}}
                               for product, listed in sorted(by_product.items())],
                  "schedule_at_period_end": {"conditions": [{"type": condition} for condition in AT_PERIOD_END]}}
    return {
        "customer_update": {"enabled": True, "allowed_updates": ["address", "tax_id"]},
        "invoice_history": {"enabled": True},
        "payment_method_update": {"enabled": True},
        "subscription_cancel": {"enabled": True, "mode": "at_period_end", "proration_behavior": "none"},
        "subscription_update": update,
    }


def configuration_id(provider, plan_changes):
    """Return the id of the portal configuration for a session: with plan changes or ``locked``.

    ``plan_changes`` is what the subscription's state allows; it also needs
    ``PROVIDER_PORTAL_PLAN_CHANGES``. Kept per process once made. Raises ``ProviderUnavailable`` (503).
    """
    pinned = current_app.config["PROVIDER_PORTAL_CONFIGURATION"]
    if pinned:
        return pinned
    variant = "plan_changes" if plan_changes and current_app.config["PROVIDER_PORTAL_PLAN_CHANGES"] else "locked"
    cache = current_app.extensions.setdefault("portal_configurations", {})
    if variant not in cache:
        cache[variant] = _ensure(provider, variant, _features(provider, variant == "plan_changes"))
    return cache[variant]


def _ensure(provider, variant, features):
    """The id of the service's ``variant`` configuration at Stripe, made or brought to ``features``."""
    terms = hashlib.sha256(json.dumps(features, sort_keys=True).encode()).hexdigest()[:32]
    metadata = {"managed_by": MANAGED_BY, "variant": variant, "terms": terms}
    ours = [config for config in provider.list_portal_configurations()
            if (config.get("metadata") or {}).get("managed_by") == MANAGED_BY
            and config["metadata"].get("variant") == variant]
    if not ours:
        # Keyed by the terms: processes starting together make one configuration, not one each.
        return provider.create_portal_configuration({"features": features, "metadata": metadata},
                                                    f"portal-configuration-{variant}-{terms}")
    if ours[0]["metadata"].get("terms") != terms:
        provider.update_portal_configuration(ours[0]["id"], {"features": features, "metadata": metadata})
    return ours[0]["id"]
