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
# (CONTRACT "Entitlements"), with ``billable`` (the ``BillableSnapshot`` the check path read; ``load()`` gives
# the row), ``feature`` (its name), ``spec`` (the plan's spec of the quota: ``limit``, ``meter``, ``overage``;
# ``period`` and ``reset_at`` on a consume), ``amount`` and ``identifier`` (the consume's, or the reservation's
# with ``reservation=True``), ``balance_id`` (the ledger row it took from) and ``used`` (that row's units used
# after the take): where metering (``app.entitlements.metering``) and alerts (``.alerts``) hook in.
quota_consumed = _signals.signal("quota-consumed")

# The deletion of an account or an organisation (CONTRACT "Accounts", "Organisations"), told to the parts it
# concerns so that ``app.auth``, which deletes accounts, imports neither ``app.usage`` nor ``app.organizations``
# (docs/billing.md "Layout"); receivers are in ``app.listeners.deletions``. Each is sent inside the deletion's
# transaction with ``sender=current_app._get_current_object()``, and a receiver refuses by raising an
# ``AppError``, which the deletion lets through: nothing is deleted.
# ``deletion-requested``, with ``billable``: before the deletion's first Stripe call; receivers only refuse.
deletion_requested = _signals.signal("deletion-requested")
# ``account-deleting``, with ``user``: after every refusal of ``deletion-requested``, before the account's own
# customer is deleted; receivers release what the account belongs to (its organisations, Stripe first).
account_deleting = _signals.signal("account-deleting")
# ``customer-deleting``, with ``provider`` and ``customer`` (the Stripe customer id): just before the customer's
# subscriptions are cancelled and it is deleted; receivers send Stripe what its final invoice must bill.
customer_deleting = _signals.signal("customer-deleting")

# ``metrics-scraping``, with no argument: before ``GET /metrics`` answers, so that the gauges read from the
# database (webhook failures open, the oldest usage undelivered) are current; a receiver may raise
# ``SQLAlchemyError``, and the scrape then answers the gauges' last values. Receivers are in
# ``app.listeners.metrics_gauges``, so that ``app.observability`` imports neither ``app.usage`` nor ``app.webhook``.
metrics_scraping = _signals.signal("metrics-scraping")

# ``billable-synced``, with ``provider`` and ``billable``: sent by ``billing.sync.sync_billable`` once the rows
# and the plan are Stripe's, in the sync's transaction; a receiver rewrites what else it keeps from Stripe and
# returns what changed, as ``(field, before, after)`` tuples, which the sync adds to its report. Receivers are
# in ``app.listeners``, so that ``app.billing`` imports nothing of the packages built on it (``app.entitlements``).
billable_synced = _signals.signal("billable-synced")
