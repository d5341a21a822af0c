"""Flask app factory for the Stripe emulator."""

from __future__ import annotations

from flask import Flask, request

from . import api, api_billing, api_setup, control, hosted_invoice, portal
from .delivery import Delivery
from .plumbing import json_response
from .state import Store, StripeError


def create_app(start_worker: bool = True) -> Flask:
    """Build the emulator app with fresh state.

    ``start_worker`` starts the webhook delivery thread; stop it with
    ``app.extensions["stripe_emulator"]["delivery"].stop()`` (``testing.py`` does).
    """
    app = Flask(__name__)
    st = Store()
    delivery = Delivery(st)
    app.extensions["stripe_emulator"] = {"store": st, "delivery": delivery}
    for bp in (api.bp, api_billing.bp, api_setup.bp, portal.bp, hosted_invoice.bp, control.bp):
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

    @app.before_request
    def count_api_request():
        if request.path.startswith("/v1/"):
            resource = "/".join(request.path.split("/")[:3])
            with st.lock:
                st.api_requests[f"{request.method} {resource}"] += 1

    if start_worker:
        delivery.start()
    return app
