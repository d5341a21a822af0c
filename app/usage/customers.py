"""Whose usage: the Stripe customer of a user or of an organisation (CONTRACT "Usage-based billing").

The one place usage resolves a customer reference (``("user", id)`` or ``("organization", id)``) to
a Stripe customer id. Organisations are not in this service yet: until they are, an organisation
reference resolves to no customer (``422 no_customer``); wiring them is this function's change.
"""
from sqlalchemy import select

from app.extensions import db
from app.models import User


def stripe_customers(refs):
    """Return ``{ref: customer id or None}`` for a set of ``(kind, id)`` references, in one query per kind."""
    found = dict.fromkeys(refs)
    user_ids = {ref_id for kind, ref_id in refs if kind == "user"}
    if user_ids:
        rows = db.session.execute(select(User.id, User.provider_id).where(User.id.in_(user_ids)))
        found.update({("user", user_id): customer for user_id, customer in rows})
    return found


def of_user(user_id):
    """The Stripe customer id of user ``user_id``, or ``None``."""
    return stripe_customers({("user", user_id)})[("user", user_id)]
