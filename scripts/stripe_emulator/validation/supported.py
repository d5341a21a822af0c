"""What the emulator applies of each operation's parameters; the rest is refused, never dropped.

Stripe's SDK types name hundreds of parameters per operation; the emulator models a subset. A
parameter the types allow but no handler applies would be silently ignored, so a test could pass here
and fail at Stripe. Each ``/v1`` route lists the parameters its handler applies, as paths (``items[].price``:
the ``price`` of every ``items`` entry; a path covers everything below it, ``metadata`` its keys);
any other parameter the SDK types for that operation is 400 ``parameter_unsupported``, naming it.
``tests/emulator/test_supported.py`` walks every SDK-typed parameter of every route served and checks
it is one or the other. Routes are Flask rules, matched as ``operations.route_key`` matches them.
"""

from __future__ import annotations

from typing import Any

from ..core.store import StripeError
from .operations import route_key

LIST = ("limit", "starting_after", "ending_before", "expand")
_ITEM = ("price", "quantity")
_DISCOUNT = ("discounts[].coupon", "discounts[].promotion_code")

_TABLE: dict[tuple[str, str], tuple[str, ...]] = {
    ("POST", "/v1/billing_portal/sessions"): ("customer", "return_url", "locale", "configuration", "expand"),
    # The features are kept as given (``pages/portal_configurations.py`` refuses one it does not know) and the
    # portal page keeps the rules of those it models.
    ("POST", "/v1/billing_portal/configurations"): ("features", "business_profile", "default_return_url",
                                                    "metadata", "name", "expand"),
    ("POST", "/v1/billing_portal/configurations/<config_id>"): ("features", "business_profile", "default_return_url",
                                                                "metadata", "name", "active", "expand"),
    ("GET", "/v1/billing_portal/configurations/<config_id>"): ("expand",),
    ("GET", "/v1/billing_portal/configurations"): (*LIST, "active", "is_default"),
    ("POST", "/v1/invoices/<inv_id>/void"): ("expand",),
    ("POST", "/v1/billing/meters"): ("display_name", "event_name", "default_aggregation.formula", "customer_mapping",
                                     "value_settings.event_payload_key", "event_time_window", "expand"),
    ("GET", "/v1/billing/meters"): (*LIST, "status"),
    ("GET", "/v1/billing/meters/<meter_id>"): ("expand",),
    ("POST", "/v1/billing/meters/<meter_id>"): ("display_name", "expand"),
    ("POST", "/v1/billing/meters/<meter_id>/deactivate"): ("expand",),
    ("POST", "/v1/billing/meters/<meter_id>/reactivate"): ("expand",),
    ("GET", "/v1/billing/meters/<meter_id>/event_summaries"): (*LIST, "customer", "start_time", "end_time",
                                                               "value_grouping_window"),
    ("POST", "/v1/billing/meter_events"): ("event_name", "identifier", "payload", "timestamp", "expand"),
    ("POST", "/v1/checkout/sessions"): (
        "mode", "customer", "success_url", "cancel_url", "client_reference_id", "metadata", "expand", "locale",
        "line_items[].price", "line_items[].quantity", "allow_promotion_codes", *_DISCOUNT,
        "subscription_data.trial_period_days", "subscription_data.metadata", "subscription_data.billing_mode.type",
        "automatic_tax.enabled",
        "customer_update.address"),
    ("GET", "/v1/checkout/sessions/<session_id>"): ("expand",),
    ("POST", "/v1/checkout/sessions/<session_id>/expire"): ("expand",),
    ("GET", "/v1/checkout/sessions"): (*LIST, "customer", "status", "subscription"),
    ("POST", "/v1/coupons"): ("id", "name", "percent_off", "amount_off", "currency", "duration", "duration_in_months",
                              "applies_to.products", "max_redemptions", "redeem_by", "metadata", "expand"),
    ("GET", "/v1/coupons/<coupon_id>"): ("expand",),
    ("POST", "/v1/customers"): ("email", "name", "description", "phone", "metadata", "address", "shipping",
                                "tax_exempt", "preferred_locales", "tax.validate_location", "test_clock",
                                "payment_method", "invoice_settings.default_payment_method", "expand"),
    ("GET", "/v1/customers/<cus_id>"): ("expand",),
    ("POST", "/v1/customers/<cus_id>"): ("email", "name", "description", "phone", "metadata", "address", "shipping",
                                         "tax_exempt", "preferred_locales", "tax.validate_location",
                                         "invoice_settings.default_payment_method", "expand"),
    ("DELETE", "/v1/customers/<cus_id>"): (),
    ("GET", "/v1/customers/<cus_id>/payment_methods"): (*LIST, "type"),
    ("POST", "/v1/customers/<cus_id>/tax_ids"): ("type", "value", "expand"),
    ("GET", "/v1/customers/<cus_id>/tax_ids"): LIST,
    ("GET", "/v1/customers/<cus_id>/tax_ids/<tax_id_id>"): ("expand",),
    ("DELETE", "/v1/customers/<cus_id>/tax_ids/<tax_id_id>"): (),
    ("POST", "/v1/entitlements/features"): ("lookup_key", "name", "metadata", "expand"),
    ("GET", "/v1/entitlements/features"): (*LIST, "archived", "lookup_key"),
    ("GET", "/v1/entitlements/features/<feat_id>"): ("expand",),
    ("POST", "/v1/entitlements/features/<feat_id>"): ("name", "active", "metadata", "expand"),
    ("GET", "/v1/entitlements/active_entitlements"): (*LIST, "customer"),
    ("GET", "/v1/entitlements/active_entitlements/<ent_id>"): ("expand",),
    ("GET", "/v1/events"): (*LIST, "type", "types"),
    ("GET", "/v1/events/<evt_id>"): ("expand",),
    ("GET", "/v1/invoices"): (*LIST, "customer", "subscription", "status"),
    ("GET", "/v1/invoices/<inv_id>"): ("expand",),
    # Always off-session here, as the service pays; ``off_session`` says so.
    ("POST", "/v1/invoices/<inv_id>/pay"): ("payment_method", "off_session", "expand"),
    ("POST", "/v1/invoices/create_preview"): (
        "customer", "subscription", "automatic_tax.enabled", *_DISCOUNT, "expand",
        "subscription_details.items[].id", "subscription_details.items[].price",
        "subscription_details.items[].quantity", "subscription_details.items[].deleted",
        "subscription_details.proration_behavior", "subscription_details.proration_date"),
    ("GET", "/v1/payment_intents/<pi_id>"): ("expand",),
    ("POST", "/v1/payment_intents/<pi_id>/confirm"): ("payment_method", "expand"),
    ("GET", "/v1/payment_methods"): (*LIST, "customer", "type"),
    # Any CVC passes with Stripe's test numbers (https://docs.stripe.com/testing#cards): ``card.cvc`` is checked so.
    ("POST", "/v1/payment_methods"): ("type", "card.number", "card.exp_month", "card.exp_year", "card.cvc",
                                      "card.token", "expand"),
    ("GET", "/v1/payment_methods/<pm_id>"): ("expand",),
    ("POST", "/v1/payment_methods/<pm_id>/attach"): ("customer", "expand"),
    ("POST", "/v1/payment_methods/<pm_id>/detach"): ("expand",),
    ("POST", "/v1/prices"): ("product", "product_data.name", "unit_amount", "currency", "recurring.interval",
                             "recurring.interval_count", "recurring.usage_type", "recurring.meter", "lookup_key",
                             "transfer_lookup_key", "nickname", "active",
                             "metadata", "expand"),
    ("GET", "/v1/prices"): (*LIST, "product", "lookup_keys", "active", "type", "currency"),
    ("GET", "/v1/prices/<price_id>"): ("expand",),
    ("POST", "/v1/prices/<price_id>"): ("active", "nickname", "lookup_key", "transfer_lookup_key", "metadata",
                                        "expand"),
    ("POST", "/v1/products"): ("id", "name", "description", "active", "metadata", "expand"),
    ("GET", "/v1/products"): (*LIST, "active", "ids"),
    ("GET", "/v1/products/<prod_id>"): ("expand",),
    ("POST", "/v1/products/<prod_id>"): ("name", "description", "active", "metadata", "expand"),
    ("DELETE", "/v1/products/<prod_id>"): (),
    ("POST", "/v1/products/<prod_id>/features"): ("entitlement_feature", "expand"),
    ("GET", "/v1/products/<prod_id>/features"): LIST,
    ("GET", "/v1/products/<prod_id>/features/<prodft_id>"): ("expand",),
    ("DELETE", "/v1/products/<prod_id>/features/<prodft_id>"): (),
    ("POST", "/v1/promotion_codes"): ("promotion.type", "promotion.coupon", "code", "active", "expires_at",
                                      "max_redemptions", "customer", "restrictions.first_time_transaction",
                                      "restrictions.minimum_amount", "restrictions.minimum_amount_currency",
                                      "metadata", "expand"),
    ("GET", "/v1/promotion_codes"): (*LIST, "code", "active", "customer", "coupon"),
    ("GET", "/v1/promotion_codes/<promo_id>"): ("expand",),
    ("POST", "/v1/promotion_codes/<promo_id>"): ("active", "metadata", "expand"),
    ("POST", "/v1/setup_intents"): ("customer", "usage", "payment_method", "confirm", "metadata", "description",
                                    "expand"),
    ("GET", "/v1/setup_intents"): (*LIST, "customer", "payment_method"),
    ("GET", "/v1/setup_intents/<seti_id>"): ("expand",),
    ("POST", "/v1/setup_intents/<seti_id>/confirm"): ("payment_method", "expand"),
    ("POST", "/v1/subscriptions"): (
        "customer", *(f"items[].{key}" for key in _ITEM), "payment_behavior",
        "payment_settings.save_default_payment_method", "trial_period_days", "trial_end",
        "trial_settings.end_behavior.missing_payment_method", "default_payment_method", "cancel_at_period_end",
        "cancel_at", "metadata", "description", "automatic_tax.enabled", *_DISCOUNT, "billing_mode.type", "expand"),
    ("GET", "/v1/subscriptions"): (*LIST, "customer", "status", "price"),
    ("GET", "/v1/subscriptions/<sub_id>"): ("expand",),
    ("POST", "/v1/subscriptions/<sub_id>"): (
        "items[].id", "items[].deleted", *(f"items[].{key}" for key in _ITEM), "payment_behavior",
        "proration_behavior", "proration_date", "cancel_at_period_end", "cancel_at", "cancellation_details",
        "default_payment_method", "metadata", "description", "trial_end", *_DISCOUNT,
        "payment_settings.save_default_payment_method", "trial_settings.end_behavior.missing_payment_method",
        "expand"),
    ("DELETE", "/v1/subscriptions/<sub_id>"): ("prorate", "invoice_now", "cancellation_details", "expand"),
    ("POST", "/v1/subscriptions/<sub_id>/resume"): ("billing_cycle_anchor", "expand"),
    ("POST", "/v1/subscriptions/<sub_id>/migrate"): ("billing_mode.type", "expand"),
    # Subscription schedules (``schedules/``): made from a subscription only, phases by items, discounts, payment
    # method, automatic tax, metadata and their length.
    ("POST", "/v1/subscription_schedules"): ("from_subscription", "expand"),
    ("GET", "/v1/subscription_schedules"): (*LIST, "customer"),
    ("GET", "/v1/subscription_schedules/<sched_id>"): ("expand",),
    ("POST", "/v1/subscription_schedules/<sched_id>"): (
        "phases[].items[].price", "phases[].items[].quantity", "phases[].start_date", "phases[].end_date",
        "phases[].duration.interval", "phases[].duration.interval_count", "phases[].discounts[].coupon",
        "phases[].discounts[].promotion_code", "phases[].discounts[].discount", "phases[].default_payment_method",
        "phases[].automatic_tax.enabled", "phases[].metadata", "end_behavior", "metadata", "proration_behavior",
        "expand"),
    ("POST", "/v1/subscription_schedules/<sched_id>/release"): ("expand",),
    ("POST", "/v1/subscription_schedules/<sched_id>/cancel"): ("invoice_now", "prorate", "expand"),
    ("POST", "/v1/test_helpers/test_clocks"): ("frozen_time", "name", "expand"),
    ("GET", "/v1/test_helpers/test_clocks"): LIST,
    ("GET", "/v1/test_helpers/test_clocks/<clock_id>"): ("expand",),
    ("DELETE", "/v1/test_helpers/test_clocks/<clock_id>"): (),
    ("POST", "/v1/test_helpers/test_clocks/<clock_id>/advance"): ("frozen_time", "expand"),
    ("POST", "/v1/webhook_endpoints"): ("url", "enabled_events", "description", "metadata", "api_version", "expand"),
    ("GET", "/v1/webhook_endpoints"): LIST,
    ("GET", "/v1/webhook_endpoints/<we_id>"): ("expand",),
    ("POST", "/v1/webhook_endpoints/<we_id>"): ("url", "enabled_events", "disabled", "description", "metadata",
                                                "expand"),
    ("DELETE", "/v1/webhook_endpoints/<we_id>"): (),
}

SUPPORTED: dict[tuple[str, str], frozenset[str]] = {route_key(*key): frozenset(paths) for key, paths in _TABLE.items()}


def supported(method: str, rule: str) -> frozenset[str] | None:
    """The parameter paths the route's handler applies; ``None`` for a route not in the table (every one is)."""
    return SUPPORTED.get(route_key(method, rule))


def covered(path: str, paths: frozenset[str]) -> bool:
    """Whether ``path`` (``items[].price``) or a path above it (``items``) is applied."""
    parts = path.replace("[]", ".[]").split(".")
    return any(".".join(parts[:n]).replace(".[]", "[]") in paths for n in range(1, len(parts) + 1))


def _name(parts: list) -> str:
    return str(parts[0]) + "".join(f"[{part}]" for part in parts[1:])


def check_supported(method: str, rule: str, params: dict) -> None:
    """Raises 400 ``parameter_unsupported`` for the first parameter (already typed) the route does not apply."""
    paths = supported(method, rule)
    if paths is not None:
        _walk(params, "", [], paths)


def _walk(node: Any, path: str, parts: list, paths: frozenset[str]) -> None:
    if path and covered(path, paths):
        return
    if isinstance(node, dict) and node and not (parts and parts[-1] == "metadata"):  # a free-form hash is one
        for key, value in node.items():
            _walk(value, f"{path}.{key}" if path else key, [*parts, key], paths)
    elif isinstance(node, list) and node and path:
        for i, value in enumerate(node):
            _walk(value, f"{path}[]", [*parts, i], paths)
    elif path and not (node in ("", []) and any(p.startswith((f"{path}.", f"{path}[]")) for p in paths)):
        # ``""`` or ``[]`` unsets a hash or list whose applied parameters are below it (``discounts=""``).
        name = _name(parts)
        raise StripeError(400, f"The emulator does not model the parameter {name}: Stripe accepts it, and "
                          "ignoring it would answer what Stripe would not (scripts/stripe_emulator/README.md).",
                          code="parameter_unsupported", param=name)
