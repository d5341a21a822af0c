"""Billing details on the Stripe customer (CONTRACT "Selling": name, address, tax ids), read through.

Nothing here is stored: Stripe's customer is where Stripe Tax reads the address and the tax ids,
so every answer is Stripe's own. A billable without a customer yet has none of them (read without a
Stripe call); writing creates the customer. Nothing here commits.
"""
from app.billing.customers import ensure_customer
from app.billing.provider import get_provider
from app.billing.provider_errors import InvalidTaxId
from app.errors import NotFound

ADDRESS_FIELDS = ("line1", "line2", "city", "postal_code", "state", "country")


def present_tax_id(tax_id):
    """CONTRACT "TaxId": ``{"id", "type", "value", "country", "verification"}`` of a Stripe TaxId dict."""
    verification = tax_id.get("verification")
    return {"id": tax_id.get("id"), "type": tax_id.get("type"), "value": tax_id.get("value"),
            "country": tax_id.get("country"),
            "verification": {name: verification.get(name) for name in ("status", "verified_name", "verified_address")}
            if isinstance(verification, dict) else None}


def _present(customer, tax_ids):
    address = customer.get("address")
    return {"name": customer.get("name") or None,
            "address": {name: address.get(name) for name in ADDRESS_FIELDS} if isinstance(address, dict) else None,
            "tax_ids": [present_tax_id(tax_id) for tax_id in tax_ids]}


def read(billable):
    """Return ``{"name", "address", "tax_ids"}`` as Stripe has them on the billable's customer."""
    if not billable.provider_id:
        return {"name": None, "address": None, "tax_ids": []}
    provider = get_provider()
    return _present(provider.retrieve_customer(billable.provider_id), provider.list_tax_ids(billable.provider_id))


def write(billable, name, address):
    """Set the customer's name (``None``: as it is) and address at Stripe; return Stripe's answer as ``read``."""
    provider = get_provider()
    customer = provider.update_billing_details(ensure_customer(billable), name,
                                               {field: address.get(field) or "" for field in ADDRESS_FIELDS})
    return _present(customer, provider.list_tax_ids(billable.provider_id))


def add_tax_id(billable, kind, value):
    """Add a tax id at Stripe; return it as CONTRACT "TaxId". Raises ``InvalidTaxId`` (422): a ``kind`` not in
    Stripe's list before any call (no customer is created for it), else when Stripe refuses the value."""
    provider = get_provider()
    if kind not in provider.tax_id_types():
        raise InvalidTaxId.unknown_type(kind)
    return present_tax_id(provider.create_tax_id(ensure_customer(billable), kind, value))


def delete_tax_id(billable, tax_id):
    """Delete one of the billable's tax ids at Stripe. Raises ``NotFound`` (404) for any other id."""
    if not billable.provider_id:
        raise NotFound(f"The customer has no tax id {tax_id!r}.")
    get_provider().delete_tax_id(billable.provider_id, tax_id)
