"""The phases of a cluster run: accounts and their subscriptions, the load with a host killed, the
limits across both hosts, the drain of webhooks and notifications."""
import threading
import time
from datetime import UTC, datetime, timedelta

from sqlalchemy import func, select

from app.models import NotificationDelivery
from app.models.delivery import PENDING
from scripts.cluster import actions, checks
from scripts.cluster.main import (
    ACCOUNTS,
    DOWN_SECONDS,
    DRAIN_SECONDS,
    KILL_AFTER_SECONDS,
    KILL_GRACE_SECONDS,
    LOAD_SECONDS,
    log,
)


def subscribe_accounts(run):
    """Register ``ACCOUNTS`` users alternately on both hosts; each subscribes to basic and pays with a
    card at the emulator (what Stripe.js does); wait until every subscription is stored active."""
    for index in range(ACCOUNTS):
        host = run.hosts[index % 2].url
        account = actions.Account(f"cluster{index}@example.com", price=run.prices["basic"])
        run.call("register", host, "POST", "/auth/register",
                 json={"email": account.email, "password": actions.PASSWORD, "name": f"Cluster {index}"})
        actions.login(run, account, host)
        intent = run.call("intent", run.other(host), "POST", "/subscription/intent", json={"price": account.price},
                          headers=actions.bearer(account))
        if intent is None or intent.status_code != 201:
            raise RuntimeError(f"intent for {account.email}: {intent and intent.status_code} {intent and intent.text}")
        secret = intent.json()["client_secret"]
        run.stripe.v1.payment_intents.confirm(secret.split("_secret_")[0], params={"payment_method": "pm_card_visa"})
        run.accounts.append(account)
    _until(lambda: not checks.users_without_subscription(run), 60, "every subscription stored active")


def load(run):
    """Every account runs ``actions.ACTIONS`` in turn, alternating hosts, for ``LOAD_SECONDS``; host A's
    process group is killed with SIGKILL after ``KILL_AFTER_SECONDS`` and started again."""
    stop = threading.Event()

    def client(offset, account):
        step = 0
        while not stop.is_set():
            action = actions.ACTIONS[step % len(actions.ACTIONS)]
            action(run, account, run.hosts[(step + offset) % 2].url)
            step += 1
            stop.wait(0.2)

    threads = [threading.Thread(target=client, args=(i, a), daemon=True) for i, a in enumerate(run.accounts)]
    for thread in threads:
        thread.start()
    time.sleep(KILL_AFTER_SECONDS)
    victim = run.hosts[0]
    run.kill_window = [time.monotonic(), None]
    log(f"SIGKILL to host {victim.name}'s process group")
    victim.kill()
    time.sleep(DOWN_SECONDS)
    victim.start()
    log(f"host {victim.name} answers again")
    run.kill_window[1] = time.monotonic() + KILL_GRACE_SECONDS
    time.sleep(max(0.0, LOAD_SECONDS - KILL_AFTER_SECONDS - DOWN_SECONDS))
    stop.set()
    for thread in threads:
        thread.join(60)


def limits(run):
    """Guesses at one account's password, then Stripe-calling requests of one user, alternating hosts:
    the limits are counted in Redis, so both hosts together allow exactly the configured number."""
    guessed = actions.Account("cluster-guessed@example.com")
    run.call("register", run.hosts[0].url, "POST", "/auth/register",
             json={"email": guessed.email, "password": actions.PASSWORD, "name": "Guessed"})
    answers = [run.call("guess", run.hosts[n % 2].url, "POST", "/auth/login",
                        json={"email": guessed.email, "password": f"wrong {n}"}) for n in range(run.login_limit + 5)]
    statuses = [a.status_code for a in answers if a is not None]
    run.limits["login"] = statuses.count(401) if statuses[-5:] == [429] * 5 else -1
    caller = actions.Account("cluster-calls@example.com")
    run.call("register", run.hosts[1].url, "POST", "/auth/register",
             json={"email": caller.email, "password": actions.PASSWORD, "name": "Caller"})
    actions.login(run, caller, run.hosts[0].url)
    answers = [run.call("invoices", run.hosts[n % 2].url, "GET", "/subscription/invoices",
                        headers=actions.bearer(caller)) for n in range(run.calls_limit + 5)]
    statuses = [a.status_code for a in answers if a is not None]
    run.limits["calls"] = sum(1 for s in statuses if s != 429) if statuses[-5:] == [429] * 5 else -1


def drain(run):
    """Wait until the emulator has no delivery left to try and the outbox nothing due (a row leased by a
    killed worker waits for its lease, which the table counts)."""
    def webhooks_done():
        state = run.poll_deliveries()
        return not state["queue"] and not state["held"]

    _until(webhooks_done, DRAIN_SECONDS, "the emulator's webhook queue empty")

    def outbox_done():
        soon = datetime.now(UTC) + timedelta(seconds=60)
        with run.db.engine.connect() as conn:
            return not conn.scalar(select(func.count()).select_from(NotificationDelivery).where(
                NotificationDelivery.status == PENDING, NotificationDelivery.next_attempt_at <= soon))

    _until(outbox_done, DRAIN_SECONDS, "the notification outbox drained")


def _until(condition, seconds, what):
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {seconds} s waiting for {what}")
        time.sleep(0.5)
