"""A minimal hosted invoice page, ``/invoice/<invoice id>`` (an invoice's ``hosted_invoice_url``),
and its PDF, ``/invoice/<invoice id>/pdf`` (``invoice_pdf``).

Stripe's page lets the customer pay an open invoice with a card; here a form takes a test
payment method id (``pm_card_visa``, ...) and confirms the invoice's PaymentIntent through the
same code as ``POST /v1/payment_intents/{id}/confirm``, so a past-due subscription recovers
with the same events. The PDF is one page listing the invoice's number, status, amounts and
lines. No auth: the invoice id is the capability, as Stripe's URLs are.
"""

from __future__ import annotations

from html import escape
from urllib.parse import quote

from flask import Blueprint, Response, abort, redirect, request

from ..core.http import store
from ..core.store import DEFAULT_API_VERSION, StripeError, new_id
from ..intents import payment_intents

bp = Blueprint("stripe_hosted_invoice", __name__)

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>Invoice {number} (Stripe emulator)</title></head>
<body><h1>Invoice {number}</h1>{flash}<p>Amount due {amount} {currency}: <b>{status}</b></p>{form}</body></html>"""

FORM = """<form method="post" action="/invoice/{id}/pay"><select name="payment_method">
<option>pm_card_visa</option><option>pm_card_mastercard</option><option>pm_card_chargeDeclined</option>
</select><button type="submit">Pay</button></form>"""


def _invoice(invoice_id: str) -> dict:
    inv = store().invoices.get(invoice_id)
    if inv is None or inv["status"] == "draft":
        abort(404)
    return inv


@bp.get("/invoice/<invoice_id>")
def page(invoice_id):
    st = store()
    with st.lock:
        inv = _invoice(invoice_id)
        payable = inv["status"] == "open" and inv["_payment_intent"]
        return PAGE.format(number=escape(inv["number"] or inv["id"]), amount=inv["amount_remaining"],
                           currency=escape(inv["currency"]), status=escape(inv["status"]),
                           flash=f"<p><b>{escape(request.args['error'])}</b></p>"
                           if request.args.get("error") else "",
                           form=FORM.format(id=escape(inv["id"])) if payable else "")


@bp.post("/invoice/<invoice_id>/pay")
def pay(invoice_id):
    st = store()
    with st.lock:
        inv = _invoice(invoice_id)
        if inv["status"] != "open" or not inv["_payment_intent"]:
            return redirect(f"/invoice/{invoice_id}?error={quote('This invoice is not open.')}", code=303)
        # A payment on the hosted page is not an API request: its events carry no idempotency key.
        st.request_ctx = {"id": new_id("req_", 14), "idempotency_key": None,
                          "api_version": DEFAULT_API_VERSION}
        try:
            payment_intents.confirm_payment_intent(st, st.payment_intents[inv["_payment_intent"]],
                                           request.form.get("payment_method") or "pm_card_visa")
        except StripeError as err:
            return redirect(f"/invoice/{invoice_id}?error={quote(str(err))}", code=303)
        finally:
            st.request_ctx = {"id": None, "idempotency_key": None, "api_version": DEFAULT_API_VERSION}
    return redirect(f"/invoice/{invoice_id}", code=303)


def _pdf_text(value) -> str:
    """``value`` as a PDF string literal's content: Latin-1 (Helvetica's encoding here), delimiters escaped."""
    text = str(value).encode("latin-1", errors="replace").decode("latin-1")
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def pdf(lines: list[str]) -> bytes:
    """A one-page PDF 1.4 document showing ``lines`` in Helvetica, with a valid cross-reference table."""
    text = "BT /F1 11 Tf 72 740 Td 16 TL " + " ".join(f"({_pdf_text(line)}) '" for line in lines) + " ET"
    bodies = ["<< /Type /Catalog /Pages 2 0 R >>", "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
              "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
              "/Resources << /Font << /F1 5 0 R >> >> >>",
              f"<< /Length {len(text.encode('latin-1'))} >>\nstream\n{text}\nendstream",
              "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"]
    out, offsets = b"%PDF-1.4\n", []
    for number, body in enumerate(bodies, 1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode("latin-1")
    table = "".join(f"{offset:010d} 00000 n \n" for offset in offsets)
    return out + (f"xref\n0 {len(bodies) + 1}\n0000000000 65535 f \n{table}trailer\n"
                  f"<< /Size {len(bodies) + 1} /Root 1 0 R >>\nstartxref\n{len(out)}\n%%EOF\n").encode("latin-1")


@bp.get("/invoice/<invoice_id>/pdf")
def invoice_pdf(invoice_id):
    st = store()
    with st.lock:
        inv = _invoice(invoice_id)
        currency = inv["currency"].upper()
        lines = [f"{inv['account_name']}: invoice {inv['number']}", f"Status: {inv['status']}",
                 f"Amount due: {inv['amount_due'] / 100:.2f} {currency}",
                 f"Amount paid: {inv['amount_paid'] / 100:.2f} {currency}", ""]
        lines += [f"{line['description']}: {line['amount'] / 100:.2f} {currency}" for line in inv["lines"]["data"]]
    return Response(pdf(lines), mimetype="application/pdf",
                    headers={"Content-Disposition": f'inline; filename="{inv["number"]}.pdf"'})
