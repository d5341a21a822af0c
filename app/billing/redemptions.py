"""Which promotion codes a billable's subscriptions carried (``PromotionRedemption``): the database side of
``promotions``, written by the subscription writer (``state``) and read before a code is accepted again."""
from sqlalchemy import select

from app.extensions import db
from app.models import PromotionRedemption


def remember(billable, promotion_code_id, provider_subscription):
    """Record that a subscription of ``billable`` took the promotion code (an id); ``resolve`` refuses it after."""
    if promotion_code_id and db.session.scalar(select(PromotionRedemption.id).where(
            billable.owns(PromotionRedemption), PromotionRedemption.promotion_code == promotion_code_id)) is None:
        db.session.add(PromotionRedemption(**billable.owner_columns(), promotion_code=promotion_code_id,
                                           provider_subscription=provider_subscription))


def redeemed(billable, promotion_code_id):
    """Whether a subscription of ``billable`` took the code; a first subscription still unpaid (``incomplete``,
    asked again with the same code) has redeemed nothing yet."""
    taken = db.session.scalars(select(PromotionRedemption.provider_subscription).where(
        billable.owns(PromotionRedemption), PromotionRedemption.promotion_code == promotion_code_id)).all()
    unpaid = {s.provider_id for s in billable.subscriptions if s.provider_status == "incomplete"}
    return any(subscription not in unpaid for subscription in taken)
