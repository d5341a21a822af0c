"""The subscription status vocabulary and the grace-period rule, in one place.

Stripe's statuses (https://docs.stripe.com/api/subscriptions/object#subscription_object-status):
``incomplete``, ``incomplete_expired``, ``trialing``, ``active``, ``past_due``, ``canceled``,
``unpaid``, ``paused``. SPEC 3 names only some of them; the sets below are the README's
"Decisions" on the rest.
"""

# Statuses in which the user has what they pay for (CONTRACT: valid = active or trialing).
VALID_STATUSES = frozenset({"active", "trialing"})

# Dunning (Stripe's retries of a failed renewal): the subscription is still the user's, it just
# does not entitle until paid. Moving into one is ``past_due``, out of one ``payment_recovered``.
DUNNING_STATUSES = frozenset({"past_due", "unpaid"})

# SPEC 3 "dead" statuses: an update from one of these to a valid status means a payment cleared.
DEAD_STATUSES = frozenset({"incomplete", "incomplete_expired", "paused", "canceled"}) | DUNNING_STATUSES

# A payment clearing from these is a new subscription (``subscribed``); from dunning it is a
# recovery instead, and one notification per change is enough.
SUBSCRIBING_STATUSES = DEAD_STATUSES - DUNNING_STATUSES

# A subscription the user can change (swap, seats, cancel): paid for, or in dunning.
LIVE_STATUSES = VALID_STATUSES | DUNNING_STATUSES

# A trial that ended without a card (trial_settings.end_behavior.missing_payment_method=pause): it
# does not entitle, and stays the user's until a card resumes it. Moving out of it to a valid
# status is ``subscribed`` (it is in DEAD_STATUSES).
PAUSED_STATUSES = frozenset({"paused"})

# Statuses that end a subscription for good at the provider.
TERMINAL_STATUSES = frozenset({"canceled", "incomplete_expired"})

# The status only a new subscription is ever in (its first payment failed or needs action); once it
# leaves it, it never returns.
FIRST_STATUSES = frozenset({"incomplete"})

# Every status Stripe documents at the pinned API version; a tie is ordered by statuses only among these.
KNOWN_STATUSES = VALID_STATUSES | DEAD_STATUSES


def awaits_card(status, card_saved):
    """Whether a subscription is a free trial whose card is not saved yet (its SetupIntent has not succeeded)."""
    return status == "trialing" and not card_saved


def entitles(subscription, now):
    """Whether ``subscription`` (a ``Subscription`` row or its snapshot) grants its plan at ``now`` (aware UTC)."""
    return is_valid(subscription.provider_status, subscription.ends_at, now,
                    subscription.default_payment_method is not None)


def on_grace_period(subscription, now):
    """Whether ``subscription`` is cancelled but still valid until ``ends_at`` (Cashier's ``onGracePeriod``)."""
    return subscription.ends_at is not None and entitles(subscription, now)


def waits_for_card(subscription):
    """Whether ``subscription`` is a free trial whose card is not saved yet: it grants nothing until it is."""
    return awaits_card(subscription.provider_status, subscription.default_payment_method is not None)


def is_valid(status, ends_at, now, card_saved=True):
    """Whether a subscription entitles at ``now``: a valid status, and ``ends_at`` (if set) still ahead.

    All times aware UTC. ``ends_at`` is a cancellation's end (at period end, or when the provider
    ended it); until then the user keeps the plan (SPEC 6 listener rule 1). A trial entitles only
    once its card is saved (``card_saved``: the subscription has a default payment method), so that
    trials cannot be farmed without a card (CONTRACT "Changes to the third round").
    """
    return status in VALID_STATUSES and not awaits_card(status, card_saved) and (ends_at is None or ends_at > now)


def _stage(status):
    return 0 if status in FIRST_STATUSES else 2 if status in TERMINAL_STATUSES else 1


def tie_order(stored, incoming):
    """Which of two states of one subscription from the same second is newer, told by their statuses:
    ``1`` when ``incoming`` is, ``-1`` when ``stored`` is, ``0`` when the statuses cannot tell.

    Stripe's status moves one way through three stages (subscription object, ``status``): only a new
    subscription is ever ``incomplete`` and it never returns there, and ``incomplete_expired`` and
    ``canceled`` are terminal. A state at a later stage is therefore the newer one, whatever the clock
    says; within a stage (``active`` and ``past_due`` go both ways) only a live read can tell, and so
    it is for a status this service does not know (one Stripe adds later) or a missing one.
    """
    if stored not in KNOWN_STATUSES or incoming not in KNOWN_STATUSES:
        return 0
    return (_stage(incoming) > _stage(stored)) - (_stage(incoming) < _stage(stored))
