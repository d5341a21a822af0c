"""``SendReceipt``: a ``payment_succeeded`` notification for every paid invoice that took money.

CONTRACT "Selling": ``invoice.paid`` with ``amount_paid > 0`` (a trial's zero invoice, or a swap
paid from credit, took nothing: no receipt). Once per invoice: the ledger drops a redelivered event,
the legacy twin ``invoice.payment_succeeded`` is not acted on, and an invoice already receipted by
another event (Stripe's dashboard "resend", a replayed endpoint) is looked up before notifying, so
a duplicate delivery never sends a second receipt (pay-rails/pay#612).
"""
from app.billing import objects, state
from app.billing.events import SEND_RECEIPT, handled_by, is_twin
from app.notifications import notified, notify
from app.signals import webhook_handled

EVENT_TYPES = handled_by(SEND_RECEIPT)
KIND = "payment_succeeded"


def receipt_of(invoice):
    """Return the ``payment_succeeded`` data of a paid invoice (dict), or ``None`` when it took no money.

    ``{"invoice", "amount_paid" (minor units), "currency", "hosted_invoice_url", "invoice_pdf"}``.
    """
    amount_paid = invoice.get("amount_paid")
    if not isinstance(amount_paid, int) or isinstance(amount_paid, bool) or amount_paid <= 0:
        return None
    return {"invoice": objects.ref_id(invoice.get("id")), "amount_paid": amount_paid,
            "currency": objects.text_of(invoice.get("currency")),
            "hosted_invoice_url": objects.text_of(invoice.get("hosted_invoice_url")),
            "invoice_pdf": objects.text_of(invoice.get("invoice_pdf"))}


@webhook_handled.connect
def send_receipt(sender, event, **extra):
    """Store a ``payment_succeeded`` notification for the paid invoice, once per invoice.

    Acts on the types ``app.billing.events`` names for it and returns ``True`` when it did (also
    when the invoice needs no receipt: the event was looked at), like the other listeners.
    """
    if event["type"] not in EVENT_TYPES:
        return False
    invoice = event["data"]["object"]
    billable = extra.get("billable") or state.billable_for_customer(objects.customer_id_of(invoice))
    if billable is None:
        return False
    data = receipt_of(invoice)
    # On the primary type only: Stripe sends invoice.paid and its legacy twin for one payment.
    if data is not None and not is_twin(event["type"]) and not notified(billable, KIND, "invoice", data["invoice"]):
        notify(billable, event["id"], KIND, data)
    return True
