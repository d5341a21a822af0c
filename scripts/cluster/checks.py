"""The end checks of a cluster run: each returns ``(measure, value, expected, ok)`` rows of the table.

They read the shared database and the emulator (the provider's truth) after the webhooks, the
notification outbox and the usage ledger have drained. The organisations' checks (every
organisation's quantity equals its members) and usage's (every accepted meter event delivered to
Stripe exactly once) are in ``checks_billables``; ``CHECKS`` runs them all.
"""
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta

from sqlalchemy import select

from app.models import Notification, NotificationDelivery, Subscription, SubscriptionItem, User, WebhookEvent
from app.models.delivery import DEAD, DELIVERED, PENDING
from app.notifications.kinds import ACCOUNT_EMAILS
from scripts.cluster.checks_billables import licensed_item, organizations, usage


def events(run):
    """Every event the emulator queued for the endpoint is in the ledger once; none gave up; retries."""
    log = run.delivery_log.values()
    queued = {entry["event"] for entry in log}
    gave_up = {entry["event"] for entry in log if entry.get("final") == "gave_up"}
    retries = sum(1 for entry in log if not entry.get("final"))
    with run.db.engine.connect() as conn:
        ledger = Counter(conn.scalars(select(WebhookEvent.id)))
    missing = queued - set(ledger) - gave_up
    return [("events delivered by the emulator / in the ledger", f"{len(queued):,} / {len(ledger):,}",
             "equal, each once", not missing and not gave_up and set(ledger) <= queued
             and max(ledger.values(), default=1) == 1),
            ("retries (failed attempts, the emulator's backoff)", f"{retries:,}", "any", True),
            ("events given up by the emulator", str(len(gave_up)), "0", not gave_up)]


def subscriptions(run):
    """Every subscription row equals the emulator's subscription (status, licensed price and quantity, cancel
    at period end, its items' prices); every subscription's metered item is its plan's."""
    with run.db.engine.connect() as conn:
        rows = conn.execute(select(Subscription.id, Subscription.provider_id, Subscription.provider_status,
                                   Subscription.provider_price, Subscription.quantity,
                                   Subscription.cancel_at_period_end)).all()
        items = defaultdict(list)
        for subscription, price in conn.execute(select(SubscriptionItem.subscription_id,
                                                       SubscriptionItem.provider_price)):
            items[subscription].append(price)
    plans = {price: plan for plan, price in run.prices.items()}
    diverged, other_plan = [], []
    for row_id, provider_id, status, price, quantity, cancelling in rows:
        live = run.stripe.v1.subscriptions.retrieve(provider_id)
        licensed = licensed_item(live)
        prices = sorted(item.price.id for item in live["items"].data)
        if (live.status, licensed.price.id, licensed.quantity, bool(live.cancel_at_period_end), prices) != (
                status, price, quantity, cancelling, sorted(items[row_id])):
            diverged.append(provider_id)
        if [p for p in prices if p != licensed.price.id] != [run.metered[plans[licensed.price.id]]]:
            other_plan.append(provider_id)
    expected = len(run.accounts) + len(run.teams)
    return [("subscriptions diverged from the emulator's (users' and organisations')",
             f"{len(diverged)} of {len(rows)}", "0", not diverged and len(rows) == expected),
            ("subscriptions whose metered item is not their plan's", str(len(other_plan)), "0", not other_plan)]


def notifications(run):
    """One ``subscribed`` per subscription, one receipt per paid invoice; no (event, kind) twice."""
    with run.db.engine.connect() as conn:
        found = conn.execute(select(Notification.kind, Notification.data, Notification.event_id)).all()
        subscriptions_ = set(conn.scalars(select(Subscription.provider_id)))
    subscribed = Counter((data or {}).get("subscription") for kind, data, _ in found if kind == "subscribed")
    receipts = Counter((data or {}).get("invoice") for kind, data, _ in found if kind == "payment_succeeded")
    paid = {invoice.id for sub in subscriptions_ for invoice in
            run.stripe.v1.invoices.list(params={"subscription": sub, "limit": 100}).auto_paging_iter()
            if invoice.status == "paid" and invoice.amount_paid > 0}
    twice = [key for key, count in Counter((event, kind) for kind, _, event in found).items() if count > 1]
    lost = [s for s in subscriptions_ if not subscribed[s]] + [i for i in paid if not receipts[i]]
    extra = [i for i in receipts if i not in paid]
    return [("notifications stored", f"{len(found):,}", "", True),
            ("notifications lost (a subscription without its one subscribed, a paid invoice without its receipt)",
             str(len(lost)), "0", not lost),
            ("notifications doubled (a second subscribed or receipt, an event and kind twice)",
             str(len(extra) + len(twice) + sum(1 for n in subscribed.values() if n > 1)
                 + sum(1 for n in receipts.values() if n > 1)), "0",
             not extra and not twice and max([*subscribed.values(), *receipts.values(), 1]) == 1)]


def deliveries(run):
    """Every notification has one delivery per channel, delivered, and the sinks got each id once or
    more (a repeat of the same id is at-least-once delivery, dropped by the receiver)."""
    with run.db.engine.connect() as conn:
        rows = conn.execute(select(NotificationDelivery.notification_id, NotificationDelivery.channel,
                                   NotificationDelivery.status, NotificationDelivery.next_attempt_at)).all()
        kinds = dict(conn.execute(select(Notification.id, Notification.kind)).all())
    leased_until = datetime.now(UTC) + timedelta(seconds=60)
    waiting = [r for r in rows if r.status == PENDING and r.next_attempt_at > leased_until]
    per_channel = Counter((r.notification_id, r.channel) for r in rows)
    # An account email (the verification link) goes by email alone; every other kind on both channels.
    missing = [(n, c) for n, kind in kinds.items() for c in (("email",) if kind in ACCOUNT_EMAILS else
                                                              ("email", "webhook")) if not per_channel[(n, c)]]
    doubled = [key for key, count in per_channel.items() if count > 1]
    dead = [r for r in rows if r.status == DEAD]
    delivered = {(r.notification_id, r.channel) for r in rows if r.status == DELIVERED}
    hooks = Counter(headers.get("Webhook-Id") for headers, _ in run.receiver.requests)
    mails = Counter(run.smtp.message_ids())
    unseen = [n for n, c in delivered if (c == "webhook" and not hooks[str(n)])
              or (c == "email" and not any(m.startswith(f"<notification.{n}@") for m in mails))]
    repeats = sum(count - 1 for count in hooks.values()) + sum(count - 1 for count in mails.values())
    return [("deliveries lost (missing, dead, waiting, or delivered but not received)",
             f"{len(missing) + len(dead) + len(waiting) + len(unseen)} of {len(rows):,}", "0",
             not (missing or dead or waiting or unseen)),
            ("deliveries doubled (two rows for one notification and channel)", str(len(doubled)), "0",
             not doubled),
            ("deliveries held by the killed worker's lease (lease ended early, then sent)",
             str(run.held.get("notifications", 0)), "any", True),
            ("repeats of one delivery id at the sinks (at least once)", str(repeats), "any", True)]


def accounts_and_limits(run):
    """The refresh-token family on both hosts; the login and Stripe-call limits across both (Redis)."""
    failures = [f for account in run.accounts for f in account.refresh_failures]
    refreshed = sum(account.refreshes for account in run.accounts)
    return [("token refreshes then accepted by the other host", f"{refreshed - len(failures)} of {refreshed}",
             "all", not failures and refreshed > 0),
            (f"login guesses answered 401 before 429 (limit {run.login_limit}, both hosts)",
             str(run.limits["login"]), str(run.login_limit), run.limits["login"] == run.login_limit),
            (f"Stripe-call requests allowed before 429 (limit {run.calls_limit}, both hosts)",
             str(run.limits["calls"]), str(run.calls_limit), run.limits["calls"] == run.calls_limit)]


def server_errors(run):
    """No 5xx and no refused connection outside the kill window; inside it they are counted."""
    outside = [c for c in run.calls if c["failed"] and not run.during_kill(c)]
    inside = [c for c in run.calls if c["failed"] and run.during_kill(c)]
    swaps = Counter(c["status"] for c in run.calls if c["name"] == "swap")
    shown = ", ".join(f"{status or 'refused'}: {count}" for status, count in sorted(swaps.items(), key=str))
    return [("requests (clients, both hosts)", f"{len(run.calls):,}", "", True),
            ("swaps by answer (200 changed at Stripe; 429 the Stripe-call limit)", shown, "some 200", swaps[200] > 0),
            ("5xx or refused outside the kill window", str(len(outside)), "0", not outside),
            ("5xx or refused inside the kill window", str(len(inside)), "any", True)]


CHECKS = [events, subscriptions, notifications, deliveries, organizations, usage, accounts_and_limits, server_errors]


def users_without_subscription(run):
    """The accounts whose subscription is not stored yet (the set-up waits for none)."""
    with run.db.engine.connect() as conn:
        stored = set(conn.scalars(select(User.email).join(Subscription, Subscription.user_id == User.id)
                                  .where(Subscription.provider_status == "active")))
    return [account for account in run.accounts if account.email not in stored]
