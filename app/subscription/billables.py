"""Which billable a billing request acts on: the caller (``/subscription...``) or an organisation
(``/organizations/<id>/subscription...``), resolved here once per request and handed down.

The views of rounds 1-4 are registered a second time under the organisation prefix (``register``),
wrapped by ``resolved``: there the caller must be the organisation's owner or an admin (404 for a
non-member, 403 ``forbidden`` for a member), and a body naming a ``quantity`` is ``422``: an
organisation's seats are its members (``app.organizations.seats``), never the client's to set.
"""
from functools import wraps

from flask import current_app, g, request

from app.auth.bearer import current_user_for_update
from app.billing.call_costs import ORGANIZATION_ENDPOINT_PREFIX
from app.errors import AppError

PREFIX = "/organizations/<organization_id>"


class QuantityRefused(AppError):
    """422 ``validation_error``: a client named the seats of an organisation's subscription."""

    status = 422
    code = "validation_error"

    @classmethod
    def for_organization(cls):
        return cls("The request body is not valid.", details={
            "quantity": ["An organisation's seats are its members; the service sets the quantity."]})


def resolved(view):
    """Take ``organization_id`` from the URL (when there is one), check the caller's role, and run ``view``."""

    @wraps(view)
    def wrapper(*args, organization_id=None, **kwargs):
        g.billing_organization = None
        if organization_id is not None:
            manager = current_app.extensions["organization_manager"]
            g.billing_organization = manager(organization_id, g.current_user).organization
            body = request.get_json(silent=True) if request.is_json else None
            if isinstance(body, dict) and "quantity" in body:
                raise QuantityRefused.for_organization()
        return view(*args, **kwargs)

    return wrapper


def manage_organizations_with(app, manager):
    """Hand ``resolved`` how it finds the URL's organisation: ``manager(organization_id, user)`` returns the caller's
    membership as owner or admin, raising 404 for a non-member and 403 for a member (``organizations.access.manager``).

    ``create_app`` hands it in, so that ``app.subscription`` imports nothing of ``app.organizations``, whose seats
    change subscriptions (no two packages import each other: docs/billing.md "Layout").
    """
    app.extensions["organization_manager"] = manager


def current_billable():
    """The billable of this request: the organisation of the URL, else the caller as an ORM ``User``."""
    organization = g.get("billing_organization")
    return organization if organization is not None else current_user_for_update()


def register(blp, rule, methods, view):
    """Register ``view`` (already routed at ``rule``) once more at ``PREFIX + rule``, for organisations."""
    blp.route(PREFIX + rule, methods=methods, endpoint=f"{ORGANIZATION_ENDPOINT_PREFIX}{view.__name__}")(view)
