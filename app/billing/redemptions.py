"""Which promotion codes a billable's subscriptions carried (``PromotionRedemption``): the database side of
``promotions``, written by the subscription writer (``state``) and read before a code is accepted again.
Rows outlive accounts: they are keyed by ``Billable.redeemer_keys`` (address hashes for a user)."""
from sqlalchemy import select

from app.extensions import db
from app.models import PromotionRedemption
from app.models.account import address_hashes


def remember(billable, promotion_code_id, provider_subscription):
    """Record that a subscription of ``billable`` took the promotion code (an id), under each of its
    ``redeemer_keys`` (for a user every address the account has had); ``promotions.resolve`` refuses it
    after, also once the account is deleted and an address registered again (CONTRACT "Changes to the
    fourth round")."""
    if promotion_code_id:
        _record(billable.redeemer_keys(), promotion_code_id, provider_subscription)


def _record(redeemers, promotion_code_id, provider_subscription):
    known = set(db.session.scalars(select(PromotionRedemption.redeemer).where(
        PromotionRedemption.redeemer.in_(redeemers), PromotionRedemption.promotion_code == promotion_code_id)))
    db.session.add_all(PromotionRedemption(redeemer=redeemer, promotion_code=promotion_code_id,
                                           provider_subscription=provider_subscription)
                       for redeemer in dict.fromkeys(redeemers) if redeemer not in known)


def carry_redemptions(user):
    """Record the codes any earlier address of ``user`` redeemed under its current one too (an email change)."""
    hashes = address_hashes(user)
    for code, subscription in db.session.execute(select(
            PromotionRedemption.promotion_code, PromotionRedemption.provider_subscription).where(
            PromotionRedemption.redeemer.in_(hashes[1:])).distinct()).all():
        _record(hashes[:1], code, subscription)


def redeemed(billable, promotion_code_id):
    """Whether any of ``billable``'s ``redeemer_keys`` took the code; a first subscription still unpaid
    (``incomplete``, asked again with the same code) has redeemed nothing yet."""
    taken = db.session.scalars(select(PromotionRedemption.provider_subscription).where(
        PromotionRedemption.redeemer.in_(billable.redeemer_keys()),
        PromotionRedemption.promotion_code == promotion_code_id)).all()
    unpaid = {s.provider_id for s in billable.subscriptions if s.provider_status == "incomplete"}
    return any(subscription not in unpaid for subscription in taken)
