"""Stripe's object collections: which one an id belongs to, by its prefix, and the name an error gives it."""

# Which store collection an id belongs to, by prefix; used for lookups and ``expand``.
PREFIX_COLLECTION = {
    "cus_": "customers",
    "sub_": "subscriptions",
    "in_": "invoices",
    "pi_": "payment_intents",
    "pm_": "payment_methods",
    "seti_": "setup_intents",
    "evt_": "events",
    "we_": "webhook_endpoints",
    "prod_": "products",
    "price_": "prices",
    "bps_": "portal_sessions",
    "bpc_": "portal_configurations",
    "clock_": "test_clocks",
    "promo_": "promotion_codes",
    "di_": "discounts",
    "cs_": "checkout_sessions",
    "txi_": "tax_ids",
    "mtr_": "meters",
}

COLLECTION_NAMES = {
    "customers": "customer",
    "subscriptions": "subscription",
    "invoices": "invoice",
    "payment_intents": "payment_intent",
    "payment_methods": "PaymentMethod",
    "setup_intents": "setupintent",
    "events": "event",
    "webhook_endpoints": "webhook endpoint",
    "products": "product",
    "prices": "price",
    "portal_sessions": "billing portal session",
    "portal_configurations": "billing portal configuration",
    "test_clocks": "test clock",
    "promotion_codes": "promotion code",
    "discounts": "discount",
    "coupons": "coupon",
    "checkout_sessions": "checkout session",
    "tax_ids": "tax ID",
    "meters": "billing meter",
}

