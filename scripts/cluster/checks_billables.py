"""The end checks of a cluster run's organisations and usage: ``(measure, value, expected, ok)`` rows of
the table ``checks`` prints. They read the shared database and the emulator (the provider's truth)
after the drain, and compare both with what the clients were told (``teams.Team``, ``usage.Reporter``).
"""
import math
import time
from collections import Counter, defaultdict

from sqlalchemy import select

from app.models import Membership, Notification, Organization, Subscription, UsageEvent, User
from app.models.usage import DELIVERED
from scripts.cluster.usage import METER_POSTS


def licensed_item(live):
    """The subscription's item that carries the plan and its seats (not a metered one)."""
    return next(item for item in live["items"].data if item.price.recurring.usage_type != "metered")


def organizations(run):
    """Every organisation's quantity at Stripe equals its members in the database, who are the ones its
    client knows; one ``member_joined`` per join and one ``member_left`` per leave; the declined seat added
    nobody and raised nothing."""
    with run.db.engine.connect() as conn:
        members = defaultdict(set)
        for organization, user in conn.execute(select(Membership.organization_id, Membership.user_id)):
            members[organization].add(user)
        notes = conn.execute(select(Notification.kind, Notification.data).where(
            Notification.kind.in_(("member_joined", "member_left")))).all()
        subscribed = dict(conn.execute(select(Subscription.organization_id, Subscription.provider_id)
                                       .where(Subscription.organization_id.is_not(None))).all())
    quantities = {team.org: licensed_item(run.stripe.v1.subscriptions.retrieve(subscribed[team.org])).quantity
                  for team in run.teams}
    drifted = [team.name for team in run.teams if quantities[team.org] != len(members[team.org])]
    unknown = [team.name for team in run.teams
               if members[team.org] != {team.owner.id} | {a.id for a in team.members.values()}]
    told = {kind: Counter((data["organization"]["id"], data["member"]["id"]) for k, data in notes if k == kind)
            for kind in ("member_joined", "member_left")}
    known = {"member_joined": Counter({(t.org, user): n for t in run.teams for user, n in t.joined.items()}),
             "member_left": Counter({(t.org, user): n for t in run.teams for user, n in t.left.items()})}
    lost = sum((known[kind] - told[kind]).total() for kind in told)
    doubled = sum((told[kind] - known[kind]).total() for kind in told)
    declined = run.teams[-1]
    refused = declined.declined == [402, 409]
    added = len(members[declined.org]) - 1
    problems = [p for team in run.teams for p in team.problems]
    return [("organisations whose Stripe quantity is not their member count",
             f"{len(drifted)} of {len(run.teams)} ({', '.join(f'{quantities[t.org]}' for t in run.teams)} seats)",
             "0", not drifted),
            ("organisations whose members are not the ones their client knows", str(len(unknown)), "0", not unknown),
            ("members joined / left (invitation accepted, seat paid first / left or removed)",
             f"{known['member_joined'].total()} / {known['member_left'].total()}", "some",
             known["member_joined"].total() > 0 and known["member_left"].total() > 0),
            ("member_joined / member_left notifications lost, doubled", f"{lost}, {doubled}", "0, 0",
             not lost and not doubled),
            ("declined seat: answers on hosts A, B; members added; Stripe quantity",
             f"{', '.join(map(str, declined.declined))}; {added}; {quantities[declined.org]}",
             "402, 409; 0; 1", refused and added == 0 and quantities[declined.org] == 1),
            ("invitation emails not read in time (held by the killed worker's lease; revoked, invited again)",
             str(sum(team.late_mails for team in run.teams)), "any", True),
            ("team clients' answers out of place", str(len(problems)) + (f" ({problems[0]})" if problems else ""),
             "0", not problems)]


def _stripe_totals(run, customers):
    """Stripe's ``tokens`` meter total per Stripe customer id, over the whole run (event summaries)."""
    start = run.started_wall - run.started_wall % 60 - 60
    end = math.ceil((time.time() + 360) / 60) * 60
    return {customer: sum(summary.aggregated_value for summary in run.stripe.v1.billing.meters.event_summaries.list(
        run.meter, params={"customer": customer, "start_time": start, "end_time": end}).auto_paging_iter())
        for customer in customers}


def usage(run):
    """Every usage event the backend was told accepted is in the ledger once and delivered; Stripe's meter
    total of each customer is the sum of its accepted events (none lost, none counted twice); every
    deliberate retry of a batch was all duplicates."""
    reporter = run.reporter
    with run.db.engine.connect() as conn:
        ledger = dict(conn.execute(select(UsageEvent.identifier, UsageEvent.status)).all())
        stripe_ids = {("user", user): customer for user, customer in conn.execute(select(User.id, User.provider_id))}
        stripe_ids.update({("organization", org): customer for org, customer in conn.execute(
            select(Organization.id, Organization.provider_id))})
    expected = Counter()
    for key, value in reporter.values.values():
        expected[stripe_ids[key]] += value
    counted = _stripe_totals(run, {stripe_ids[key] for key, _ in reporter.customers})
    wrong = [customer for customer, total in counted.items() if total != expected[customer]]
    lost, extra = set(reporter.values) - set(ledger), set(ledger) - set(reporter.values)
    undelivered = Counter(status for status in ledger.values() if status != DELIVERED)
    sends = run.remote._call("GET", "requests")["by_resource"].get(METER_POSTS, 0) - run.meter_posts_before
    retried = reporter.retries["all duplicates"] + reporter.retries["not"]
    return [("usage events accepted (distinct identifiers) / in the ledger",
             f"{len(reporter.values):,} / {len(ledger):,} ({reporter.answers['accepted']:,} answered accepted, "
             f"{reporter.answers['duplicates']:,} duplicates)", "equal", not lost and not extra),
            ("usage events pending or failed after the drain", str(undelivered.total()), "0", not undelivered),
            ("customers whose Stripe meter total is not the sum of their accepted events",
             f"{len(wrong)} of {len(counted)} ({sum(counted.values()):,.0f} counted, "
             f"{sum(expected.values()):,} accepted)", "0", not wrong and len(counted) == len(reporter.customers)),
            ("batches sent again on purpose to the other host, answered all duplicates",
             f"{reporter.retries['all duplicates']} of {retried}", "all", retried > 0 and not reporter.retries["not"]),
            ("meter event requests to Stripe (repeats answered 'already exists')",
             f"{sends:,} for {len(ledger):,} events", "any", True),
            ("usage events held by the killed worker's lease (lease ended early, then delivered)",
             str(run.held.get("usage", 0)), "any", True),
            ("usage backend's answers out of place",
             str(len(reporter.problems)) + (f" ({reporter.problems[0]})" if reporter.problems else ""), "0",
             not reporter.problems)]
