"""A card saved with a SetupIntent becomes what pays (CONTRACT "Additions (third round)").

On ``setup_intent.succeeded`` (``CommitPaymentMethod``) the method becomes the customer's default
and the default of each of the user's subscriptions that bills, or would once resumed, so that
the next renewal charges it. A subscription in dunning has its open invoice paid with it at once
(``Invoice.pay``: Stripe's next retry may be days away), and one paused at the end of a trial
without a card is resumed (https://docs.stripe.com/billing/subscriptions/trials#resume-a-paused-subscription).
Stripe's answers are written as ``sync`` writes them; the webhooks these calls cause bring the
notifications (``payment_recovered``, ``subscribed``). Every call carries an idempotency key
derived from the event, so a webhook retried after a failure changes nothing twice at Stripe.
Nothing here commits.
"""
import logging

from app.billing import objects, payment_methods, plans, state, trials
from app.billing.statuses import DUNNING_STATUSES, LIVE_STATUSES, PAUSED_STATUSES, VALID_STATUSES
from app.errors import ProviderRejected

log = logging.getLogger(__name__)

# The subscriptions a new card pays for: those that bill, and those a card resumes.
BILLING_STATUSES = LIVE_STATUSES | PAUSED_STATUSES

# What saving a card did to a trial: it runs on with this card, or the card had a trial here before.
TRIAL_RUNS, TRIAL_ENDED = "runs", "ended"


def replaced_since(customer, method, since):
    """Whether the customer's default is another method than ``method``, made after ``since`` (Unix s).

    ``customer`` is ``retrieve_customer``'s answer (its default expanded). Saving a card makes a
    new method (or reuses one saved before), so a default made after a SetupIntent succeeded is
    a card the user saved since.
    """
    default = (customer.get("invoice_settings") or {}).get("default_payment_method")
    if not isinstance(default, dict) or default.get("id") == method:
        return False
    created = default.get("created")
    return isinstance(created, int) and isinstance(since, int) and created > since


def adopt(provider, user, event):
    """Make the method a ``setup_intent.succeeded`` event's SetupIntent saved what pays for the user.

    Stripe does not deliver in order: when the customer's default card was made after the event
    (the user saved another card since, and its event came first), nothing changes but the
    mirrored card, and the newer card stays. Returns ``[(subscription row, outcome)]`` for the trials
    this card met: ``TRIAL_RUNS`` (its card now; ``trial_started`` is due) or ``TRIAL_ENDED`` (the
    one-trial-per-card rule ended it at once, charged: ``subscribed`` is due, never ``trial_started``).
    Raises ``ProviderUnavailable`` (503), so that the webhook is retried.
    """
    setup_intent = event["data"]["object"]
    method = objects.ref_id(setup_intent.get("payment_method"))
    if setup_intent.get("status") != "succeeded" or method is None:
        return []
    customer = provider.retrieve_customer(user.provider_id)
    if replaced_since(customer, method, event.get("created")):
        log.info("setup intent %s is older than the default card of customer %s; not promoted",
                 setup_intent.get("id"), user.provider_id)
        payment_methods.refresh_from_customer(provider, user, customer)
        return []
    payment_methods.promote(provider, user, method, customer)
    trials_met = []
    for subscription in [s for s in user.subscriptions if s.provider_status in BILLING_STATUSES]:
        outcome = _pay_with(provider, user, subscription, method, f"{subscription.provider_id}-{event['id']}")
        if outcome is not None:
            trials_met.append((subscription, outcome))
    plans.recompute_plan(user)
    return trials_met


def _pay_with(provider, user, subscription, method, key):
    """Make ``method`` the subscription's default; pay its open invoice in dunning; resume it when paused.

    A trial whose card already saved another trial here ends now instead, charged to that card
    (``trials.card_had_a_trial``). Returns ``TRIAL_RUNS`` / ``TRIAL_ENDED`` for a trial, else ``None``.
    """
    params = {"default_payment_method": method}
    trialing = subscription.provider_status == "trialing"
    if trialing and trials.card_had_a_trial(provider, subscription, method):
        params["trial_end"] = "now"
    elif subscription.default_payment_method == method and subscription.provider_status in VALID_STATUSES:
        return TRIAL_RUNS if trialing else None  # nothing waits for this card; Stripe saved it on the trial
    try:
        live = provider.update_subscription(subscription.provider_id, params, f"card-{key}")
        if live.get("status") in PAUSED_STATUSES:
            live = provider.resume_subscription(subscription.provider_id, f"resume-{key}")
        elif live.get("status") in DUNNING_STATUSES and _pay_open_invoice(provider, live, method, key):
            live = provider.retrieve_subscription(subscription.provider_id)
    except ProviderRejected as exc:
        # A refusal is final (the method was detached since, say): failing the webhook would only
        # repeat it on every retry for days.
        log.warning("card %s not applied to subscription %s: %s", method, subscription.provider_id, exc)
        return None
    state.apply_subscription(user, live, state.live_as_of())
    if not trialing:
        return None
    return TRIAL_RUNS if live.get("status") == "trialing" else TRIAL_ENDED


def _pay_open_invoice(provider, live, method, key):
    """Pay the subscription's open latest invoice with ``method``; return whether it was paid."""
    invoice = live.get("latest_invoice")
    if not isinstance(invoice, dict) or invoice.get("status") != "open":
        return False
    return provider.pay_invoice(invoice["id"], method, f"pay-{key}")
