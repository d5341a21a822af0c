"""Flask app factory for the Stripe emulator.

Every ``/v1`` request passes the edge in ``core/http.py`` (auth, faults, idempotency, validation)
before a resource family's ``responses.py`` answers it; the families' ``models.py`` hold the rules.
"""

from __future__ import annotations

from flask import Flask, request

from . import control
from .checkout import responses as checkout
from .core.http import json_response
from .core.store import Store, StripeError
from .customers import responses as customers
from .discounts import responses as discounts
from .entitlements import responses as entitlements
from .entitlements.models import SubscriptionWatcher
from .intents import responses as intents
from .invoices import responses as invoices
from .meters import responses as meters
from .pages import hosted_invoice, portal, portal_configurations, portal_sessions
from .products import responses as products
from .schedules import responses as schedules
from .subscriptions import responses as subscriptions
from .test_clocks import responses as test_clocks
from .webhooks import responses as webhooks
from .webhooks.delivery import Delivery

BLUEPRINTS = (products.bp, discounts.bp, checkout.bp, customers.bp, subscriptions.bp, schedules.bp, invoices.bp,
              intents.bp, webhooks.bp, test_clocks.bp, meters.bp, entitlements.bp, portal_configurations.bp,
              portal_sessions.bp, portal.bp, hosted_invoice.bp, control.bp)


def create_app(start_worker: bool = True) -> Flask:
    """Build the emulator app with fresh state.

    ``start_worker`` starts the webhook delivery thread; stop it with
    ``app.extensions["stripe_emulator"]["delivery"].stop()`` (``testing.py`` does).
    """
    app = Flask(__name__)
    st = Store()
    delivery = Delivery(st)
    # After the delivery worker: a subscription's event is queued before the entitlements' change it causes.
    SubscriptionWatcher(st)
    app.extensions["stripe_emulator"] = {"store": st, "delivery": delivery}
    for bp in BLUEPRINTS:
        app.register_blueprint(bp)

    @app.before_request
    def remember_base_url():
        st.base_url = request.host_url.rstrip("/")

    @app.errorhandler(404)
    def not_found(_err):
        # Unknown API paths answer like Stripe's router does.
        return json_response(StripeError(
            404, "Unrecognized request URL. Please see https://stripe.com/docs or we can "
            "help at https://support.stripe.com/.").response_body(), 404)

    @app.errorhandler(405)
    def bad_method(_err):
        return json_response(StripeError(
            405, "Unrecognized request URL (method not allowed).").response_body(), 405)

    @app.errorhandler(500)
    def emulator_fault(_err):
        # A bug of the emulator's, never the client's input (validation answers that with a 400):
        # still Stripe's shape, so the SDK raises its APIError rather than failing to parse HTML.
        return json_response(StripeError(500, "An unknown error occurred in the emulator.",
                                         type="api_error").response_body(), 500)

    @app.before_request
    def count_api_request():
        if request.path.startswith("/v1/"):
            resource = "/".join(request.path.split("/")[:3])
            with st.lock:
                st.api_requests[f"{request.method} {resource}"] += 1

    if start_worker:
        delivery.start()
    return app
