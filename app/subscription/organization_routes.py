"""The billing endpoints of rounds 1-4 registered once more at ``/organizations/<id>/subscription...``
(CONTRACT "Organisations"): the same view functions, the billable resolved from the URL with a role
check (``billables.resolved``), not a second copy of each view. ``POST .../subscription/quantity``
is not among them: an organisation's seats are its members.
"""
from app.subscription import billables, billing_page_views, selling, views

ORGANIZATION_ROUTES = (
    ("/subscription", ["GET"], views.show), ("/subscription/intent", ["POST"], views.intent),
    ("/subscription/checkout", ["POST"], selling.checkout), ("/subscription/portal", ["POST"], views.portal),
    ("/subscription/swap", ["POST"], views.swap), ("/subscription/swap/preview", ["GET"], views.swap_preview),
    ("/subscription/cancel", ["POST"], views.cancel), ("/subscription/resume", ["POST"], views.resume),
    ("/subscription/scheduled-change", ["DELETE"], views.withdraw_scheduled_change),
    ("/subscription/invoices", ["GET"], billing_page_views.invoices),
    ("/subscription/invoices/upcoming", ["GET"], billing_page_views.upcoming_invoice),
    ("/subscription/payment-method", ["POST"], billing_page_views.payment_method),
    ("/subscription/billing-details", ["GET"], selling.show_billing_details),
    ("/subscription/billing-details", ["PUT"], selling.put_billing_details),
    ("/subscription/tax-ids", ["POST"], selling.add_tax_id),
    ("/subscription/tax-ids/<string:tax_id>", ["DELETE"], selling.delete_tax_id),
)

for rule, methods, view in ORGANIZATION_ROUTES:
    billables.register(views.blp, rule, methods, view)
