"""Which subscriptions are still in Stripe's ``classic`` billing mode, and moving them to ``flexible``.

CONTRACT "Changes to the fifth round" (credits never exceed what was paid): subscriptions are created
``flexible``, whose credit prorations are computed from the amounts actually debited
(https://docs.stripe.com/billing/subscriptions/billing-mode/compare); one created ``classic`` credits the
unused time at the current price, whatever was paid (a seat bought under a 100%-off code). The row's
``billing_mode`` is Stripe's ``billing_mode.type`` as last written from Stripe (``state``).
"""
from flask import has_app_context
from sqlalchemy import select

from app.billing import state
from app.billing.statuses import TERMINAL_STATUSES
from app.extensions import db
from app.models import Subscription

CLASSIC = "classic"


def is_classic(provider_id):
    """Whether the service knows the subscription ``provider_id`` as ``classic`` (a row it has not written: no)."""
    if not has_app_context():  # the provider on its own (a script, a test of its calls) knows no rows
        return False
    return db.session.scalar(select(Subscription.billing_mode).where(Subscription.provider_id == provider_id)) \
        == CLASSIC


def classic_live():
    """The live subscriptions the service knows as ``classic``, oldest first."""
    return db.session.scalars(select(Subscription).where(Subscription.billing_mode == CLASSIC,
                                                         Subscription.provider_status.not_in(TERMINAL_STATUSES))
                              .order_by(Subscription.id)).all()


def migrate_one(provider, subscription):
    """Migrate ``subscription`` at Stripe and write Stripe's answer to its row (the caller commits)."""
    answer = provider.migrate_billing_mode(subscription.provider_id)
    state.apply_subscription(subscription.user or subscription.organization, answer, state.live_as_of())
