"""``CommitCheckout``: a completed Checkout Session announces its subscription (CONTRACT "Selling").

Stripe creates a Checkout subscription after its payment cleared: it is ``active`` from its
``customer.subscription.created`` and no activating update follows, so the session's completion
(``checkout.session.completed``, or ``checkout.session.async_payment_succeeded`` for a payment
that cleared later) is its activating event. The webhook controller has synced the subscription
(``app.webhook.service.write_checkout``); here the plan is recomputed and ``subscribed`` sent for an
active one, once per subscription whatever order or duplicates Stripe delivers (a trialing one has
its ``trial_started`` from here, once the card it saved passed the one-trial-per-card rule: a card
that already had a trial here ends the new one at once, unannounced).

Only here are the person who opened the session (its ``metadata[person]``) and the card Stripe's page
took known together: the trial and the promotion code are recorded for both (CONTRACT "Changes to
the fifth round": once per person), and what the page could not know is settled as Stripe lets us
(docs/billing.md "What Stripe's pages cannot know"): a trial the person or the card had already ends
at once; a code they had already redeemed for another subscription is taken off this one.
"""
from app.billing import objects, plans, redemptions, state, trials
from app.billing.events import COMMIT_CHECKOUT, handled_by
from app.billing.provider import get_provider
from app.extensions import db
from app.models import User
from app.notifications import announce_trial, notified, notify
from app.signals import webhook_handled

EVENT_TYPES = handled_by(COMMIT_CHECKOUT)


@webhook_handled.connect
def commit_checkout(sender, event, **extra):
    """Recompute the plan and send the session's ``subscribed``; ``True`` when the type is one it acts on."""
    if event["type"] not in EVENT_TYPES:
        return False
    session = event["data"]["object"]
    billable = extra.get("billable") or state.billable_for_customer(objects.customer_id_of(session))
    if billable is None:
        return False
    subscription_id = objects.ref_id(session.get("subscription"))
    row = state.subscription_of(billable, subscription_id) if subscription_id else None
    status = row.provider_status if row is not None else None
    person = _person_of(session)
    _one_redemption_per_person(billable, row, session, person, event)
    if status == "trialing":
        ended = _one_trial_per_card(billable, row, event, person)
        announce_trial(billable, event["id"], row, ended=ended)
        status = row.provider_status
    trials.remember_person(person, subscription_id)
    plans.recompute_plan(billable)
    if status == "active" and not notified(billable, "subscribed", "subscription", subscription_id):
        notify(billable, event["id"], "subscribed", {"subscription": subscription_id, "from_status": None,
                                                 "status": "active"})
    return True


def _person_of(session):
    """The ``User`` who opened the session (``metadata[person]``, ``service.create_checkout``), or ``None``
    (a session made elsewhere, or an account deleted since)."""
    person = str((session.get("metadata") or {}).get("person") or "")
    return db.session.get(User, int(person)) if person.isdigit() else None


def _one_redemption_per_person(billable, row, session, person, event):
    """Record the session's promotion codes for the billable, ``person`` and the card Checkout took; take the
    discount off the subscription when the person or the card redeemed one of them for another subscription.

    Two sessions opened side by side (for two organisations, say) each passed ``promotions.resolve`` before
    either was paid, and the card is known only now. What the page charged is paid and stays; removing
    the discount (``discounts=""``, https://docs.stripe.com/api/subscriptions/update#update_subscription-discounts)
    bills every later invoice in full: all of a trial's, a ``repeating`` or ``forever`` code's rest.
    Raises ``ProviderUnavailable`` (503), so that the webhook is retried.
    """
    codes = [code for code in (objects.ref_id((discount or {}).get("promotion_code"))
                               for discount in session.get("discounts") or ()) if code]
    if not codes:
        return
    subscription_id = objects.ref_id(session.get("subscription"))
    provider = get_provider()
    method = row.default_payment_method if row is not None else None
    fingerprint = trials.fingerprint_of(provider.retrieve_payment_method(method)) if method else None
    if row is not None and row.discount and any(
            redemptions.redeemed_elsewhere(billable, person, fingerprint, code) for code in codes):
        live = provider.update_subscription(row.provider_id, {"discounts": ""},
                                            f"discount-off-{row.provider_id}-{event['id']}")
        state.apply_subscription(billable, live, state.live_as_of())
    for code in codes:
        redemptions.remember(billable, code, subscription_id, person, fingerprint)


def _one_trial_per_card(billable, row, event, person):
    """End a Checkout trial at once when its card already saved another trial here (``trials.card_had_a_trial``),
    when the billable has another subscription (sessions opened side by side each carried the trial of a
    first subscription), or when ``person`` who opened it started another subscription, for any billable
    (``trials.person_had_a_subscription``): the card Checkout saved pays the first period now, as for an
    intent's trial. Returns whether it ended the trial."""
    provider = get_provider()
    another = any(s.provider_id != row.provider_id for s in billable.subscriptions) \
        or trials.person_had_a_subscription(person, other_than=row.provider_id)
    if another or (row.default_payment_method and trials.card_had_a_trial(provider, row,
                                                                          row.default_payment_method)):
        live = provider.update_subscription(row.provider_id, {"trial_end": "now"},
                                            f"trial-end-{row.provider_id}-{event['id']}")
        state.apply_subscription(billable, live, state.live_as_of())
        return True
    return False
