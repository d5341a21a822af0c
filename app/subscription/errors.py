"""Errors of changing a subscription (CONTRACT "Additions (third round)"), in the one ``AppError`` tree."""
from app.errors import AppError, Conflict


class NotSubscribed(Conflict):
    """409: the user has no subscription the action applies to (CONTRACT "Additions (third round)")."""

    code = "not_subscribed"
    message = "The user has no live subscription to change; start one with POST /subscription/intent."


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


class PaymentRequired(AppError):
    """402: the provider kept the old subscription because the change's invoice was not paid."""

    status = 402
    code = "payment_required"

    @classmethod
    def for_invoice(cls, invoice):
        """``invoice``: the provider's invoice dict, ``confirmation_secret`` expanded."""
        return cls("The change's invoice was not paid (the card was declined or needs authentication), so the "
                   "subscription keeps its current price. Confirm the payment with client_secret, or pay at "
                   "hosted_invoice_url, within 23 hours to apply the change.",
                   details={"client_secret": ((invoice.get("confirmation_secret") or {}).get("client_secret")),
                            "hosted_invoice_url": invoice.get("hosted_invoice_url"),
                            "invoice": invoice.get("id")})
