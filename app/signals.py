"""The service's signals (Flask's pattern: a private namespace, kebab-case names).

``webhook_handled`` is SPEC's ``WebhookHandled``: sent by the webhook controller after the
signature is verified and the subscription row is written, inside the event's transaction, with
``sender=current_app._get_current_object()`` and ``event=<the verified raw event dict>``.
Receivers take ``(sender, event)``.
"""
from blinker import Namespace

_signals = Namespace()

webhook_handled = _signals.signal("webhook-handled")
