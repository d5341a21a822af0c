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
