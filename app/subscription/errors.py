"""Errors of changing a subscription (CONTRACT "Additions (third round)"), in the one ``AppError`` tree."""
from app.errors import AppError, Conflict


class NotSubscribed(Conflict):
    """409: the user has no subscription the action applies to (CONTRACT "Additions (third round)")."""

    code = "not_subscribed"
    message = "The user has no live subscription to change; start one with POST /subscription/intent."

    @classmethod
    def paused(cls):
        """The user's subscription is a trial paused at its end for want of a card: a card resumes it."""
        return cls("The subscription is paused: its free trial ended without a card. Add a card with POST "
                   "/subscription/payment-method (or in the billing portal) and it resumes; then change it.",
                   details={"status": "paused"})


class SubscriptionEnded(Conflict):
    code = "subscription_ended"
    message = ("The subscription has ended and can no longer be resumed; start a new one with "
               "POST /subscription/intent.")


class SubscriptionPastDue(Conflict):
    """409: a change to a subscription whose renewal payment failed; the payment comes first."""

    code = "subscription_past_due"

    @classmethod
    def for_status(cls, status):
        return cls(f"The subscription is {status}: update the payment method (POST /subscription/payment-method "
                   "or the billing portal) so that the open invoice is paid, then change the subscription.",
                   details={"status": status})


def _invoice_details(invoice):
    """What a client needs to pay a change's invoice: its id, Stripe's page, and what is due (minor units)."""
    return {"invoice": invoice.get("id"), "hosted_invoice_url": invoice.get("hosted_invoice_url"),
            "amount_due": invoice.get("amount_due"), "currency": invoice.get("currency")}


class PaymentRequired(AppError):
    """402: the provider kept the old subscription because the change's invoice was not paid."""

    status = 402
    code = "payment_required"

    @classmethod
    def for_invoice(cls, invoice):
        """``invoice``: the provider's invoice dict, ``confirmation_secret`` expanded."""
        return cls("The change's invoice was not paid (the card was declined or needs authentication), so the "
                   "subscription keeps its current price and seats. Confirm the payment with client_secret, or "
                   "pay at hosted_invoice_url, to apply the change before Stripe drops it (after 23 hours, or at the "
                   "period's or trial's end when that comes first).",
                   details={"client_secret": ((invoice.get("confirmation_secret") or {}).get("client_secret")),
                            **_invoice_details(invoice)})


    @classmethod
    def declined(cls):
        """A change with a promotion code, or a swap that moves metered prices, refused whole by Stripe for its
        declined charge: nothing waits."""
        return cls("The change's charge was declined, so nothing changed (a change with a promotion code, or "
                   "between plans with usage prices, is applied only once paid). Update the card "
                   "(POST /subscription/payment-method) and try again.",
                   details={"client_secret": None, "invoice": None, "hosted_invoice_url": None,
                            "amount_due": None, "currency": None})


class PaymentPending(Conflict):
    """409: an earlier price or seat change waits for its invoice to be paid (Stripe's ``pending_update``)."""

    code = "payment_pending"

    @classmethod
    def for_invoice(cls, invoice):
        """``invoice``: the provider's invoice dict of the pending change."""
        return cls("An earlier change of this subscription waits for its invoice to be paid: pay it at "
                   "hosted_invoice_url (it applies that change) or let it expire, then change the subscription. "
                   "Cancelling stays possible.", details=_invoice_details(invoice))


class ChangeScheduled(Conflict):
    """409: a swap now while a change at the period's end is scheduled (CONTRACT "Plan changes at the period's end")."""

    code = "change_scheduled"

    @classmethod
    def for_change(cls, change):
        """``change``: the stored ``scheduled_change`` (``app.billing.schedules``)."""
        return cls("A plan change is scheduled for the period's end: withdraw it (DELETE "
                   "/subscription/scheduled-change) or schedule another one (POST /subscription/swap with "
                   "at=period_end).",
                   details={"price": change.get("price"), "at": change.get("at")})


class ScheduleNotOurs(Conflict):
    """409: the subscription's Stripe schedule was made elsewhere (the Dashboard, the API): shown, never changed."""

    code = "schedule_not_ours"
    message = ("The subscription's changes are scheduled outside this service (a Stripe subscription schedule it did "
               "not make), so it does not change or release them; they are shown as scheduled_change.")
