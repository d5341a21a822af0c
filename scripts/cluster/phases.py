"""The phases of a cluster run: accounts and their subscriptions, the organisations, the load with a
host killed, the limits across both hosts, the drain of webhooks, notifications and usage."""
import threading
import time
from datetime import UTC, datetime, timedelta

from sqlalchemy import func, select, update

from app.models import NotificationDelivery, Subscription, UsageEvent
from app.models.delivery import PENDING
from app.notifications import outbox
from app.usage import delivery as usage_delivery
from scripts.cluster import actions, checks, teams, usage
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
        account.id = run.call("me", host, "GET", "/auth/me", headers=actions.bearer(account)).json()["id"]
        intent = run.call("intent", run.other(host), "POST", "/subscription/intent", json={"price": account.price},
                          headers=actions.bearer(account))
        if intent is None or intent.status_code != 201:
            raise RuntimeError(f"intent for {account.email}: {intent and intent.status_code} {intent and intent.text}")
        secret = intent.json()["client_secret"]
        run.stripe.v1.payment_intents.confirm(secret.split("_secret_")[0], params={"payment_method": "pm_card_visa"})
        run.accounts.append(account)
    _until(lambda: not checks.users_without_subscription(run), 60, "every subscription stored active")


def organize(run):
    """``teams.TEAMS`` organisations and one whose card declines: owners and invitees registered and
    verified from their emails, each organisation subscribed per seat; wait until every one is stored
    active; then the declined one's invitee is refused on both hosts. The usage backend's customers are
    the subscribed accounts and the organisations."""
    count = teams.TEAMS + 1
    names = [(f"owner{t}@example.com", f"Owner {t}") for t in range(count)]
    names += [(f"member{t}-{i}@example.com", f"Member {t}-{i}") for t in range(teams.TEAMS)
              for i in range(teams.INVITEES)] + [("declined@example.com", "Declined")]
    people = teams.people(run, names)
    owners, invitees = people[:count], people[count:]
    for t, owner in enumerate(owners):
        mine = invitees[t * teams.INVITEES:(t + 1) * teams.INVITEES]
        team = teams.Team("Declined" if t == teams.TEAMS else f"Team {t}", owner, mine)
        teams.create(run, team, run.hosts[t % 2].url)
        run.teams.append(team)

    def stored():
        with run.db.engine.connect() as conn:
            return conn.scalar(select(func.count()).select_from(Subscription).where(
                Subscription.organization_id.in_([team.org for team in run.teams]),
                Subscription.provider_status == "active")) == len(run.teams)

    _until(stored, 60, "every organisation's subscription stored active")
    teams.decline(run, run.teams[-1], run.teams[-1].invitees[0])
    customers = [(("user", a.id), {"user": a.id}) for a in run.accounts]
    customers += [(("organization", team.org), {"organization": team.org}) for team in run.teams]
    run.reporter = usage.Reporter(run, run.service_key, customers)


def load(run):
    """For ``LOAD_SECONDS`` every account runs ``actions.ACTIONS`` in turn, every organisation but the
    declined one ``teams.step``, and the backend reports usage, all alternating hosts; host A's process
    group is killed with SIGKILL after ``KILL_AFTER_SECONDS`` and started again."""
    stop = threading.Event()

    def client(offset, account):
        step = 0
        while not stop.is_set():
            action = actions.ACTIONS[step % len(actions.ACTIONS)]
            action(run, account, run.hosts[(step + offset) % 2].url)
            step += 1
            stop.wait(0.2)

    def team_client(offset, team):
        step = 0
        while not stop.is_set():
            teams.step(run, team, run.hosts[(step + offset) % 2].url)
            step += 1
            stop.wait(0.3)

    def backend():
        step = 0
        while not stop.is_set():
            run.reporter.report(run.hosts[step % 2].url)
            step += 1
            stop.wait(usage.BATCH_PAUSE)

    threads = [threading.Thread(target=client, args=(i, a), daemon=True) for i, a in enumerate(run.accounts)]
    threads += [threading.Thread(target=team_client, args=(i, team), daemon=True)
                for i, team in enumerate(run.teams[:teams.TEAMS])]
    threads.append(threading.Thread(target=backend, daemon=True))
    for thread in threads:
        thread.start()
    time.sleep(KILL_AFTER_SECONDS)
    victim = run.hosts[0]
    run.kill_window = [time.monotonic(), None]
    log(f"SIGKILL to host {victim.name}'s process group")
    victim.kill()
    run.killed_at = datetime.now(UTC)
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
    """Wait until the emulator has no delivery left to try, and the outbox and the usage ledger nothing
    due; then end the leases the killed host's workers held (``end_killed_leases``) and wait again."""
    def webhooks_done():
        state = run.poll_deliveries()
        return not state["queue"] and not state["held"]

    _until(webhooks_done, DRAIN_SECONDS, "the emulator's webhook queue empty")

    def nothing_due():
        soon = datetime.now(UTC) + timedelta(seconds=60)
        with run.db.engine.connect() as conn:
            return not any(conn.scalar(select(func.count()).select_from(table).where(
                table.status == PENDING, table.next_attempt_at <= soon)) for table in (NotificationDelivery,
                                                                                         UsageEvent))

    _until(nothing_due, DRAIN_SECONDS, "the notification outbox and the usage ledger drained")
    if end_killed_leases(run):
        log(f"leases the killed host's workers held, ended early: {run.held}")
        _until(nothing_due, DRAIN_SECONDS, "the rows the killed host held sent")


def end_killed_leases(run):
    """Make the rows that host A's workers had claimed when they were killed due now; return how many.

    Such a row stays ``pending`` until its lease (``LEASE``, 10 minutes) ends, then any worker sends it
    again: what a longer run would see, brought forward so the checks can count it sent. A lease taken
    before the kill ends at or before ``killed_at + LEASE``; a row waiting out a retry is due within
    5 minutes (Stripe's and the outbox's back-offs here are shorter); the live workers hold nothing
    once the queues are drained.
    """
    now = datetime.now(UTC)
    for name, table, lease in (("notifications", NotificationDelivery, outbox.LEASE),
                               ("usage", UsageEvent, usage_delivery.LEASE)):
        with run.db.engine.begin() as conn:
            run.held[name] = conn.execute(update(table).where(
                table.status == PENDING, table.next_attempt_at > now + timedelta(minutes=5),
                table.next_attempt_at <= run.killed_at + lease + timedelta(seconds=1))
                .values(next_attempt_at=now)).rowcount
    return sum(run.held.values())


def _until(condition, seconds, what):
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {seconds} s waiting for {what}")
        time.sleep(0.5)
