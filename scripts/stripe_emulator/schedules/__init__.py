"""Subscription schedules: phases of a subscription's prices over time (https://docs.stripe.com/api/subscription_schedules)."""
