"""The errors of provider calls that the error tree answers for the client: a value Stripe refused, a
change it declined. Raised by ``StripeProvider`` and the services that call it."""
from app.errors import AppError


class InvalidProrationDate(AppError):
    """422 ``validation_error``: the client's ``proration_date`` is not a recent preview's, or Stripe
    refused it (not in the current period)."""

    status = 422
    code = "validation_error"

    @classmethod
    def refused(cls):
        message = "Must fall within the subscription's current period (a preview's proration_date does)."
        return cls("The request body is not valid.", details={"proration_date": [message]})

    @classmethod
    def not_recent(cls):
        """Older than 10 minutes, or in the future: not a preview's date (CONTRACT "Changes to the third round")."""
        message = "Must be a preview's proration_date from the last 10 minutes; preview the swap again."
        return cls("The request body is not valid.", details={"proration_date": [message]})

    @classmethod
    def not_issued(cls):
        """No preview of this subscription issued it (CONTRACT "Changes to the fourth round")."""
        message = "Must be the proration_date a swap preview of this subscription returned; preview the swap again."
        return cls("The request body is not valid.", details={"proration_date": [message]})


class InvalidTaxId(AppError):
    """422 ``invalid_tax_id``: Stripe refused the tax id's type or value (CONTRACT "Selling")."""

    status = 422
    code = "invalid_tax_id"

    @classmethod
    def refused(cls, kind, reason):
        return cls(f"Stripe refused the tax id: {reason}", details={"type": kind})

    @classmethod
    def unknown_type(cls, kind):
        return cls(f"Stripe has no tax id type {kind!r}.", details={"type": kind})


class ChangeDeclined(Exception):  # noqa: N818 (a decision, not a fault)
    """Stripe refused a subscription change because its charge was declined (``error_if_incomplete``)."""


class MeterEventRefused(Exception):  # noqa: N818 (Stripe's answer, not a fault of ours)
    """Stripe refused a meter event for good (a 4xx other than "already exists"); ``str()`` is its message."""
