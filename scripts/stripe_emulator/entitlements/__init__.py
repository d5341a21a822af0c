"""Stripe Entitlements: features, the features attached to products, and each customer's active entitlements
(``/v1/entitlements/features``, ``/v1/products/{id}/features``, ``/v1/entitlements/active_entitlements``)."""
