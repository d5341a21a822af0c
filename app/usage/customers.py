"""Whose usage: the Stripe customer of a user or of an organisation (CONTRACT "Usage-based billing").

The one place usage resolves a customer reference (``("user", id)`` or ``("organization", id)``) to
a Stripe customer id: each billable has its own customer (``provider_id``), ``None`` until it has one
(``422 no_customer``).
"""
from sqlalchemy import select

from app.extensions import db
from app.models import BILLABLE_KINDS

BILLABLES = {model.kind: model for model in BILLABLE_KINDS}


def stripe_customers(refs):
    """Return ``{ref: customer id or None}`` for a set of ``(kind, id)`` references, in one query per kind."""
    found = dict.fromkeys(refs)
    for kind, model in BILLABLES.items():
        ids = {ref_id for ref_kind, ref_id in refs if ref_kind == kind}
        if ids:
            rows = db.session.execute(select(model.id, model.provider_id).where(model.id.in_(ids)))
            found.update({(kind, row_id): customer for row_id, customer in rows})
    return found


def of_user(user_id):
    """The Stripe customer id of user ``user_id``, or ``None``."""
    return stripe_customers({("user", user_id)})[("user", user_id)]
