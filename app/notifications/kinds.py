"""The notification kinds the listeners store (CONTRACT "Additions"): each with the provider
event (or account change) that causes it and its ``data`` fields, for the OpenAPI document and the README.

``ACCOUNT_EMAILS`` are the outbox's other kind of row: an email carrying a token, sent by email
only and never listed by ``GET /notifications``. The row says only "send this email to user N";
the worker mints the token into the message as it sends (``app.email_tokens.link``).

Times in ``data`` are Unix seconds (UTC), as the provider sends them. A notification about an
organisation's billing goes to each of its owner and admins with ``organization`` {id, name} in ``data``.
"""

NOTIFICATION_KINDS = {
    "subscribed": "customer.subscription.updated, status from incomplete, incomplete_expired, paused or canceled "
                  "to active or trialing; or checkout.session.completed (or async_payment_succeeded) of a session "
                  "whose subscription is active (from_status null); or the setup_intent.succeeded / session "
                  "completion whose card already had a trial here, which ends the new trial at once "
                  "(from_status trialing). At most one per subscription. "
                  "data: subscription, from_status, status.",
    "cancellation_scheduled": "customer.subscription.updated, cancel_at_period_end (or cancel_at) set. "
                              "data: subscription, ends_at.",
    "cancellation_withdrawn": "customer.subscription.updated, cancel_at_period_end (or cancel_at) cleared. "
                              "data: subscription.",
    "plan_changed": "customer.subscription.updated, the items' prices changed. data: subscription, from, to "
                    "(sorted price ids).",
    "subscription_ended": "customer.subscription.deleted. data: subscription.",
    "plan_change_scheduled": "subscription_schedule.created or .updated whose next phase changes the plan's price or "
                             "seats (a new change: not one already announced). data: subscription, price, quantity, "
                             "at (the phase's start, Unix seconds).",
    "plan_change_withdrawn": "subscription_schedule.released before its next phase started, or .updated that "
                             "dropped the next phase's change. data: subscription, price (the change withdrawn).",
    "payment_failed": "invoice.payment_failed for a subscription's invoice, not its first (billing_reason "
                      "subscription_create: the subscription is still incomplete and the payment form tells "
                      "the person). data: subscription, invoice, attempt_count, next_payment_attempt (null "
                      "after the last retry), hosted_invoice_url.",
    "past_due": "customer.subscription.updated, status moved into past_due or unpaid (unpaid: retries "
                "exhausted). data: subscription, from_status, status.",
    "payment_recovered": "customer.subscription.updated, status from past_due or unpaid to active or trialing. "
                         "data: subscription, from_status, status.",
    "trial_will_end": "customer.subscription.trial_will_end (three days before the trial ends). "
                      "data: subscription, trial_end.",
    "card_expiring": "invoice.paid of a renewal (billing_reason subscription_cycle) while the card on file "
                     "expires within 30 days. data: subscription, invoice, brand, last4, exp_month, exp_year.",
    "swap_payment_failed": "invoice.payment_failed of a swap's invoice (billing_reason subscription_update), or "
                           "customer.subscription.pending_update_expired: the old price stays. data: subscription, "
                           "reason (payment_failed or expired), and for payment_failed invoice, "
                           "hosted_invoice_url.",
    "quantity_changed": "customer.subscription.updated, the items' quantities changed and their prices did not. "
                        "data: subscription, from, to (quantity).",
    "trial_started": "setup_intent.succeeded (or checkout.session.completed) that saved the card of a trialing "
                     "subscription (a free trial, PROVIDER_TRIAL_DAYS) and kept it trialing: a card that already "
                     "had a trial ends the new one at once, unannounced. data: subscription, trial_end.",
    "password_changed": "The account's password was changed (POST /auth/password or a reset link). A notice "
                        "without a token. data: via (password or reset).",
    "email_change_requested": "POST /auth/email/change asked to move the account to another address; sent to "
                              "the current address, without a token. data: new_email.",
    "payment_succeeded": "invoice.paid with amount_paid > 0 (a receipt; once per invoice, however often Stripe "
                         "delivers it). data: invoice, amount_paid (minor units), currency, hosted_invoice_url, "
                         "invoice_pdf.",
    "member_joined": "An invitation to an organisation was accepted; to its owner and admins. "
                     "data: member {id, email, name}, role, organization {id, name}.",
    "invitation_accepted": "A seat declined when the invitee accepted was paid afterwards (invoice.paid, or "
                           "customer.subscription.pending_update_applied, of the seat's invoice) and the invitee "
                           "joined; to the invitee. data: organization {id, name}, role.",
    "member_removed": "An owner or admin removed the member from an organisation; to that member (a leave sends "
                      "none). data: organization {id, name}.",
    "ownership_transferred": "An organisation's owner transferred it; to the new owner and to the old one, now an "
                             "admin. data: organization {id, name}, from {id, email, name}, to {id, email, name}.",
    "organization_deleted": "An organisation was deleted by its owner (its subscription cancelled at once); to each "
                            "member but the owner. data: organization {id, name}.",
    "quota_warning": "A consume (POST /entitlements/check) or a settle took a quota past one of "
                     "ENTITLEMENT_ALERT_THRESHOLDS below 100% of its limit; once per threshold, feature and period. "
                     "data: feature, threshold (percent), limit, used, period, reset_at (null: never), "
                     "alert (its key).",
    "quota_reached": "As quota_warning, at 100% of the limit: nothing more is allowed this period (unless the quota "
                     "has overage). data: as quota_warning.",
    "member_left": "A member left an organisation or was removed (their account deleted too); to its owner and "
                   "admins. data: member {id, email, name}, reason (left or removed), organization {id, name}.",
}

# Account email -> what it carries. data: email (the address it goes to) for email_change only.
ACCOUNT_EMAILS = {
    "email_verification": "a link that verifies the account's address (APP_URL_VERIFY_EMAIL)",
    "email_change": "a link that moves the account to the new address (APP_URL_VERIFY_EMAIL)",
    "password_reset": "a link that sets a new password (APP_URL_RESET_PASSWORD)",
    "invitation": "a link that accepts an organisation's invitation (APP_URL_ACCEPT_INVITATION), to the invited "
                  "address; queued as the inviter's. data: email, invitation, organization {id, name}",
}

# Events for the client app alone (CONTRACT "Entitlements"): queued on the webhook channel only, never emailed nor
# listed by ``GET /notifications``. Each is one outbox row held by one of the billable's recipients (the outbox
# sends a user's rows), one per billable: the body is ``{"type", "timestamp", "data": <the row's data>}``.
APP_EVENTS = {
    "entitlements.updated": "A billable's features changed: its entitled plan (a webhook, sync), its active Stripe "
                            "Entitlements features, or a support override. data: customer ({user: id} or "
                            "{organization: id}), plan, features (name -> Feature, as GET /entitlements).",
}

# Notices to one person about an organisation (``data.organization``), not about its billing: their mail is
# not headed as the organisation's billing, which goes to each owner and admin.
PERSONAL_NOTICES = frozenset({"invitation_accepted", "member_removed", "ownership_transferred",
                              "organization_deleted"})
