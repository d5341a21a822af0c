"""The provider event types the service handles: one table, and everything derived from it.

For each type: the object ``data.object`` carries (a mismatch is a broken payload), whether the
webhook controller writes the subscription row from it, and which listeners on
``webhook_handled`` act on it (SPEC 6 "Listeners"). The webhook's object check and row writers,
``REQUIRED_EVENT_TYPES`` (``flask check-webhook``, ``make run``'s endpoint) and both listeners'
filters are read from here: adding a type touches this table and the listener that acts on it.
"""
from dataclasses import dataclass

COMMIT_PLAN = "commit_plan"
COMMIT_PAYMENT_METHOD = "commit_payment_method"
SEND_RECEIPT = "send_receipt"
REFRESH_CATALOG = "refresh_catalog"
COMMIT_CHECKOUT = "commit_checkout"
ADMIT_SEATS = "admit_seats"
COMMIT_SCHEDULE = "commit_schedule"
COMMIT_STRIPE_FEATURES = "commit_stripe_features"


@dataclass(frozen=True)
class EventType:
    """How the service treats one provider event type.

    ``twin_of`` names the type a legacy twin duplicates (Stripe sends both for one payment): the
    twin is acted on the same way when it is the one an endpoint sends, but it is not required,
    and the listeners decide notifications on the primary type only, so nobody is told twice.
    """

    object: str
    writes_subscription: bool
    listeners: tuple
    twin_of: str | None = None
    # False for the account's catalogue (products, prices): no customer, acted on without a user.
    customer_bound: bool = True


EVENT_TYPES = {
    "customer.subscription.created": EventType("subscription", True, (COMMIT_PLAN, COMMIT_PAYMENT_METHOD)),
    "customer.subscription.updated": EventType("subscription", True, (COMMIT_PLAN, COMMIT_PAYMENT_METHOD)),
    # A seat held on it ended with it (its writer), and the held invoice, still open, is voided.
    "customer.subscription.deleted": EventType("subscription", True, (COMMIT_PLAN, ADMIT_SEATS)),
    # Stripe sends it three days before a trial ends, with the subscription as it is then.
    "customer.subscription.trial_will_end": EventType("subscription", True, (COMMIT_PLAN,)),
    # A swap's pending update (payment_behavior=pending_if_incomplete) was paid and applied, or
    # expired unpaid: the subscription carries its prices either way.
    # A seat held for an invitee (a declined seat's pending update) is settled by them: admitted, or ended.
    "customer.subscription.pending_update_applied": EventType("subscription", True, (COMMIT_PLAN, ADMIT_SEATS)),
    "customer.subscription.pending_update_expired": EventType("subscription", True, (COMMIT_PLAN, ADMIT_SEATS)),
    # A trial ended without a card (paused: no plan) and a card resumed it: the status says which.
    "customer.subscription.paused": EventType("subscription", True, (COMMIT_PLAN,)),
    # Resumed, it bills the seats it paused with: those of members who left meanwhile are given back.
    "customer.subscription.resumed": EventType("subscription", True, (COMMIT_PLAN, ADMIT_SEATS)),
    "invoice.paid": EventType("invoice", False, (COMMIT_PAYMENT_METHOD, SEND_RECEIPT, ADMIT_SEATS)),
    "invoice.payment_succeeded": EventType("invoice", False, (COMMIT_PAYMENT_METHOD, SEND_RECEIPT, ADMIT_SEATS),
                                           twin_of="invoice.paid"),
    "invoice.payment_failed": EventType("invoice", False, (COMMIT_PLAN,)),
    "customer.updated": EventType("customer", False, (COMMIT_PAYMENT_METHOD,)),
    # A card saved with a SetupIntent (the card form, or a trial's pending SetupIntent).
    "setup_intent.succeeded": EventType("setup_intent", False, (COMMIT_PAYMENT_METHOD,)),
    # A Checkout Session was paid: the controller syncs its subscription, whose activating event it is.
    "checkout.session.completed": EventType("checkout.session", False, (COMMIT_CHECKOUT,)),
    "checkout.session.async_payment_succeeded": EventType("checkout.session", False, (COMMIT_CHECKOUT,)),
    # A subscription's schedule (CONTRACT "Plan changes at the period's end"): the listener reads it live and
    # writes the row's scheduled_change, and decides plan_change_scheduled / plan_change_withdrawn from the payload.
    **{f"subscription_schedule.{change}": EventType("subscription_schedule", False, (COMMIT_SCHEDULE,))
       for change in ("created", "updated", "released", "canceled", "completed", "aborted")},
    # A customer's tax ids (CONTRACT "Selling"): checked as events of a known customer and acknowledged;
    # nothing is stored, GET /subscription/billing-details reads them from Stripe.
    **{f"customer.tax_id.{change}": EventType("tax_id", False, ()) for change in ("created", "updated", "deleted")},
    # The plan catalogue (GET /plans) changed at Stripe: every worker reads it again.
    **{f"{family}.{change}": EventType(family, False, (REFRESH_CATALOG,), customer_bound=False)
       for family in ("product", "price") for change in ("created", "updated", "deleted")},
    # The customer's Stripe Entitlements changed (CONTRACT "Entitlements"): its active lookup keys are written.
    "entitlements.active_entitlement_summary.updated": EventType("entitlements.active_entitlement_summary", False,
                                                                 (COMMIT_STRIPE_FEATURES,)),
}

# What an endpoint at the provider must send (SPEC 4 rule 6); a legacy twin is not needed.
REQUIRED_EVENT_TYPES = tuple(name for name, spec in EVENT_TYPES.items() if spec.twin_of is None)

# The object each handled type must carry; other types are acknowledged whatever they carry.
EXPECTED_OBJECT = {name: spec.object for name, spec in EVENT_TYPES.items()}

# The types that name no customer: processed without a user (the catalogue's).
ACCOUNT_TYPES = frozenset(name for name, spec in EVENT_TYPES.items() if not spec.customer_bound)

# The types whose session's subscription the controller syncs (a live read) before the listeners run.
CHECKOUT_TYPES = frozenset(name for name, spec in EVENT_TYPES.items() if spec.object == "checkout.session")

# The types whose object is written into the subscription row before the listeners run.
SUBSCRIPTION_WRITING_TYPES = frozenset(name for name, spec in EVENT_TYPES.items() if spec.writes_subscription)


def handled_by(listener):
    """Return the event types ``listener`` (one of the names above, e.g. ``COMMIT_PLAN``) acts on."""
    return frozenset(name for name, spec in EVENT_TYPES.items() if listener in spec.listeners)


def is_twin(event_type):
    """Whether ``event_type`` is a legacy twin of another handled type (no notification decided on it)."""
    spec = EVENT_TYPES.get(event_type)
    return spec is not None and spec.twin_of is not None


def missing_event_types(enabled_events):
    """Return the required event types an endpoint with ``enabled_events`` would not receive."""
    enabled = set(enabled_events or ())
    if "*" in enabled:
        return []
    return [event_type for event_type in REQUIRED_EVENT_TYPES if event_type not in enabled]
