"""Errors of entitlements (CONTRACT "Entitlements"), in the one ``AppError`` tree."""
from app.errors import AppError, Conflict, NotFound, ServiceUnavailable


class UnknownFeature(AppError):
    """422 ``unknown_feature``: no plan of ``PLAN_FEATURES`` (nor Stripe, nor an override) has the feature."""

    status = 422
    code = "unknown_feature"
    message = "No plan has this feature."

    @classmethod
    def named(cls, feature):
        return cls(f"No plan has the feature {feature!r}.", details={"feature": feature})


class InvalidUnits(AppError):
    """422 ``validation_error``: units asked of a boolean feature, or more settled than a reservation holds."""

    status = 422
    code = "validation_error"

    @classmethod
    def not_a_quota(cls, feature):
        return cls(f"{feature!r} is a boolean feature: only a quota's units can be reserved.",
                   details={"feature": [f"{feature!r} is not a quota."]})

    @classmethod
    def more_than_held(cls, amount, held):
        return cls(f"{amount} units is more than the {held} the reservation holds.",
                   details={"amount": [f"Must be between 0 and {held}."]})


class QuotaExceeded(Conflict):
    """409 ``quota_exceeded``: fewer units are left than a reservation asks for; nothing was held."""

    code = "quota_exceeded"

    @classmethod
    def asking(cls, feature, amount, remaining):
        return cls(f"{amount} units of {feature!r} asked for, {remaining} left: nothing was reserved.",
                   details={"feature": feature, "amount": amount, "remaining": remaining})


class ReservationNotFound(NotFound):
    message = "No such reservation."


class ReservationClosed(Conflict):
    """409 ``conflict``: the reservation was settled, released or expired: its units are no longer held."""

    @classmethod
    def already(cls, status):
        return cls(f"The reservation is {status}: its units are no longer held.", details={"status": status})


def ledger_unavailable():
    """The 503 of a check or consume the database cannot answer: never an ``allowed: true`` (fail closed)."""
    return ServiceUnavailable("The entitlement ledger cannot answer now; nothing was allowed or taken. Try again "
                              "shortly.", headers={"Retry-After": "1"})
