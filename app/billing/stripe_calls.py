"""How the ``stripe`` SDK's errors become the service's error tree (SPEC 4; the SDK's error classes:
https://docs.stripe.com/api/errors/handling), and the plain reads (``read``) that skip its object trees.

Network failures, rate limits and Stripe's 5xx become ``ProviderUnavailable`` (503); a request
Stripe refuses (its 4xx) becomes ``ProviderRejected`` (502) unless a call maps it more precisely
with one of the narrower context managers here.
"""
import logging
from contextlib import contextmanager
from urllib.parse import quote

import requests
import stripe

from app.billing.provider_errors import InvalidProrationDate
from app.errors import ProviderRejected, ProviderUnavailable, UnknownPrice
from app.pagination import InvalidCursor

log = logging.getLogger("app.billing.stripe_provider")

# The billing mode of every subscription the service creates, named though it is Stripe's default at the pinned
# API version (https://docs.stripe.com/changelog/clover/2025-09-30/billing-mode-default-flexible): its credit
# prorations are computed from the amounts actually debited, so a credit never exceeds what was paid
# (https://docs.stripe.com/billing/subscriptions/billing-mode/compare; CONTRACT "Changes to the fifth round").
BILLING_MODE = "flexible"

# The client secrets a client confirms: the first invoice's payment, or a trial's SetupIntent.
# Its discounts with their coupons: the row shows them (CONTRACT "Selling": Subscription ``discount``).
SUBSCRIPTION_EXPAND = ["latest_invoice.confirmation_secret", "pending_setup_intent", "discounts.source.coupon"]


def one_line(exc):
    # The SDK's messages span several lines ("If this problem persists, let us know..."); a log
    # record is one line, so that log readers and a command's output stay line by line.
    return " ".join(str(exc).split())


def _unavailable(exc):
    """Return the ``ProviderUnavailable`` that says what happened: no answer in time, no connection, a 5xx..."""
    if isinstance(exc, stripe.RateLimitError):
        return ProviderUnavailable.rate_limited()
    if isinstance(exc, stripe.AuthenticationError):
        return ProviderUnavailable.key_refused()
    if isinstance(exc, stripe.APIError):
        return ProviderUnavailable.server_error(exc.http_status)
    # An APIConnectionError: the SDK raises it from the HTTP library's own exception.
    return ProviderUnavailable() if isinstance(exc.__cause__, requests.Timeout) else ProviderUnavailable.unreachable()


@contextmanager
def provider_call(what):
    """Map the SDK's errors onto the error tree: ``ProviderUnavailable`` or ``ProviderRejected``."""
    try:
        yield
    except (stripe.APIConnectionError, stripe.RateLimitError, stripe.APIError, stripe.AuthenticationError) as exc:
        log.warning("provider call failed: %s: %s", what, one_line(exc))
        raise _unavailable(exc) from exc
    except stripe.StripeError as exc:
        # InvalidRequestError and the other 4xx: retrying the same request cannot help.
        log.warning("provider refused a request: %s: %s", what, one_line(exc))
        raise ProviderRejected.for_call(what, exc.code) from exc


@contextmanager
def client_values_refused(params):
    """Map Stripe's refusal of a price in ``params["items"]`` to ``UnknownPrice`` (422), and of the
    client's ``proration_date`` (outside the current period) to ``InvalidProrationDate`` (422)."""
    try:
        yield
    except stripe.InvalidRequestError as exc:
        prices = [item.get("price") for item in params.get("items") or () if item.get("price")]
        if exc.param and "price" in exc.param and prices:
            raise UnknownPrice.for_price(prices[0]) from exc
        if exc.param and exc.param.endswith("proration_date") and "proration_date" in params:
            raise InvalidProrationDate.refused() from exc
        raise


@contextmanager
def cursor_refused(starting_after):
    """Map Stripe's refusal of a list's ``starting_after`` to ``InvalidCursor`` (422)."""
    try:
        yield
    except stripe.InvalidRequestError as exc:
        if starting_after and exc.param == "starting_after":
            raise InvalidCursor.for_id(starting_after) from exc
        raise


def read(client, resource, object_id, params=None):
    """GET ``/v1/<resource>/<object_id>`` through the SDK and return Stripe's JSON answer as the SDK parses
    it (``OrderedDict``s, which are dicts, and lists).

    The SDK's typed services build a ``StripeObject`` tree of every answer, which ``to_dict`` then
    copies into dicts again: for a subscription with its expansions, over a third of a Stripe call's
    client CPU in a profile of the webhook path (issue 35). ``raw_request`` keeps the SDK's HTTP
    client, retries, headers and errors (its ``StripeError`` classes, which ``provider_call`` maps)
    and builds neither. Raises what the typed call would.
    """
    return client.raw_request("get", f"/v1/{resource}/{quote(object_id, safe='')}", **(params or {})).data


def requests_session(api_base):
    """A ``requests`` session that reads the environment's proxy settings for ``api_base`` once.

    With ``trust_env`` (requests' default) every call scanned the whole environment for proxy
    variables (``merge_environment_settings``): a quarter of a Stripe call's client CPU in a profile
    of the webhook path (issue 35). The proxies that apply to Stripe's host (``HTTPS_PROXY``,
    ``NO_PROXY``, ...) are the same for the life of the process, so they are read here, once, when the provider
    is built. The SDK sends its own CA bundle and ``Authorization``, so nothing else of the environment applied.
    """
    session = requests.Session()
    session.trust_env = False
    session.proxies.update(requests.utils.get_environ_proxies(api_base))
    return session


def signed_at(signature_header):
    """The header's first ``t=`` as an int, read as the SDK reads it (it verified the header, so there is one)."""
    items = [item.split("=", 2) for item in signature_header.split(",")]
    return int(next(item[1] for item in items if item[0] == "t"))
