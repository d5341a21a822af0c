"""The service's signals (Flask's pattern: a private namespace, kebab-case names).

``webhook_handled`` is SPEC's ``WebhookHandled``: sent by the webhook controller after the
signature is verified and the subscription row is written, inside the event's transaction, with
``sender=current_app._get_current_object()``, ``event=<the verified raw event dict>`` and
``billable=<the billable of the event's customer, a User or an Organization, already locked>``.
Receivers take ``(sender, event)`` and may use ``billable`` instead of looking it up again (a query
each, on every delivery); a sender that has none gives none, and the receiver looks it up.
"""
from blinker import Namespace

_signals = Namespace()

webhook_handled = _signals.signal("webhook-handled")

# Sent after a consume (or a reservation's settle) took units of a quota, inside its transaction
# (CONTRACT "Entitlements"), with ``billable``, ``feature`` (its name), ``spec`` (the plan's spec of the
# quota: ``limit``, ``meter``, ``overage``; ``period`` and ``reset_at`` on a consume), ``amount`` and
# ``identifier`` (the consume's, or the reservation's with ``reservation=True``) and ``balance_id`` (the
# ledger row it took from): where metering (``app.entitlements.metering``) and alerts (``.alerts``) hook in.
quota_consumed = _signals.signal("quota-consumed")
