"""Billing: the ``SubscriptionProvider`` contract, its Stripe implementation, sync and plan resolution."""
