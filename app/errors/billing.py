"""Errors of billing and the payment provider: a price or subscription refused, Stripe unreachable or refusing."""

from app.errors.base import AppError, Conflict


class AlreadySubscribed(Conflict):
    code = "already_subscribed"
    message = "The user already has an active subscription."

    @classmethod
    def needs_card(cls, status):
        """The user's subscription is in dunning, paused (a trial ended without a card), or a trial awaiting
        its card."""
        return cls(f"The user's subscription is {status}: add a card with POST /subscription/payment-method "
                   "(or in the billing portal) to pay, start or resume it instead of starting another subscription.",
                   details={"status": status})


class UnknownPrice(AppError):
    status = 422
    code = "unknown_price"

    @classmethod
    def for_price(cls, price):
        return cls(f"Price {price!r} is not offered by this service.", details={"price": price})


class ServiceUnavailable(AppError):
    status = 503
    code = "service_unavailable"
    message = "The service is temporarily unavailable."

    @classmethod
    def lock_timeout(cls):
        # Another request holds the row (or, on SQLite, the database) across provider calls; a
        # second try usually finds it free, so the client is told to retry rather than shown a 500.
        return cls("Another request is updating the same data; try again shortly.",
                   headers={"Retry-After": "1"})

    @classmethod
    def connection_lost(cls):
        return cls("The database connection was lost; try again shortly.", headers={"Retry-After": "1"})

    @classmethod
    def not_configured(cls, name):
        # The operator's mistake, not the client's: 503 so that the provider keeps retrying
        # (for up to three days) until the setting is fixed, instead of dropping the events.
        return cls(f"The service is not configured for this endpoint: {name} is not set.")

    @classmethod
    def rate_limit_store(cls, retry_after):
        # Failing closed: without its counter, login would take unlimited password guesses.
        return cls("The rate-limit store is not answering; try again shortly.",
                   headers={"Retry-After": str(retry_after)})


class ProviderUnavailable(ServiceUnavailable):
    """The payment provider could not serve a call of ours now; the message says what happened to it."""

    code = "provider_unavailable"
    message = "The payment provider did not answer in time; try again shortly."

    @classmethod
    def unreachable(cls):
        return cls("The payment provider could not be reached; try again shortly.")

    @classmethod
    def server_error(cls, status=None):
        answered = f" (HTTP {status})" if status else ""
        return cls(f"The payment provider failed with an error{answered}; try again shortly.")

    @classmethod
    def rate_limited(cls):
        return cls("The payment provider is limiting this service's requests; try again shortly.")

    @classmethod
    def key_refused(cls):
        # The operator's to fix; retrying will not help until the key is replaced.
        return cls("The payment provider refused this service's API key (PROVIDER_API_KEY).")


class ProviderRejected(AppError):
    """The payment provider refused a request of ours with a 4xx (``InvalidRequestError`` and the like).

    502 Bad Gateway, not 422 or 503: the request to the provider is built from our stored state
    (e.g. a customer the provider no longer knows), so the client can fix it neither by changing its
    body (client input the provider would refuse is validated first) nor by waiting. The provider's
    own message stays in the log, as it names other objects' ids; only its error code is shown.
    """

    status = 502
    code = "provider_rejected"
    message = "The payment provider refused the request."

    @classmethod
    def for_call(cls, what, provider_code=None):
        return cls(f"The payment provider refused the request ({what}).",
                   details={"provider_code": provider_code} if provider_code else None)
