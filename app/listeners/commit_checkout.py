"""``CommitCheckout``: a completed Checkout Session announces its subscription (CONTRACT "Selling").

Stripe creates a Checkout subscription after its payment cleared: it is ``active`` from its
``customer.subscription.created`` and no activating update follows, so the session's completion
(``checkout.session.completed``, or ``checkout.session.async_payment_succeeded`` for a payment
that cleared later) is its activating event. The webhook controller has synced the subscription
(``app.webhook.service.write_checkout``); here the plan is recomputed and ``subscribed`` sent for an
active one, once per subscription whatever order or duplicates Stripe delivers (a trialing one has
its ``trial_started`` from here, once the card it saved passed the one-trial-per-card rule: a card
that already had a trial here ends the new one at once, unannounced).
"""
from app.billing import objects, plans, promotions, state, trials
from app.billing.events import COMMIT_CHECKOUT, handled_by
from app.billing.provider import get_provider
from app.notifications import announce_trial, notified, notify
from app.signals import webhook_handled

EVENT_TYPES = handled_by(COMMIT_CHECKOUT)


@webhook_handled.connect
def commit_checkout(sender, event, **extra):
    """Recompute the plan and send the session's ``subscribed``; ``True`` when the type is one it acts on."""
    if event["type"] not in EVENT_TYPES:
        return False
    session = event["data"]["object"]
    user = extra.get("user") or state.user_for_customer(objects.customer_id_of(session))
    if user is None:
        return False
    subscription_id = objects.ref_id(session.get("subscription"))
    row = state.subscription_of(user, subscription_id) if subscription_id else None
    status = row.provider_status if row is not None else None
    for discount in session.get("discounts") or ():
        # The code the service resolved for the session (Stripe's own box is off): redeemed now.
        promotions.remember(user, objects.ref_id((discount or {}).get("promotion_code")), subscription_id)
    if status == "trialing":
        ended = _one_trial_per_card(user, row, event)
        announce_trial(user, event["id"], row, ended=ended)
        status = row.provider_status
    plans.recompute_plan(user)
    if status == "active" and not notified(user, "subscribed", "subscription", subscription_id):
        notify(user, event["id"], "subscribed", {"subscription": subscription_id, "from_status": None,
                                                 "status": "active"})
    return True


def _one_trial_per_card(user, row, event):
    """End a Checkout trial at once when its card already saved another trial here (``trials.card_had_a_trial``),
    or when the user has another subscription (sessions opened side by side each carried the trial of a
    first subscription): the card Checkout saved pays the first period now, as for an intent's trial.
    Returns whether it ended the trial."""
    provider = get_provider()
    another = any(s.provider_id != row.provider_id for s in user.subscriptions)
    if another or (row.default_payment_method and trials.card_had_a_trial(provider, row,
                                                                          row.default_payment_method)):
        live = provider.update_subscription(row.provider_id, {"trial_end": "now"},
                                            f"trial-end-{row.provider_id}-{event['id']}")
        state.apply_subscription(user, live, state.live_as_of())
        return True
    return False
