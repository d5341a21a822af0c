"""Organisations in the operators' sweeps, and an owner's email change with many organisations (CONTRACT
"Changes to the fifth round": "`flask reconcile` and `flask sync-user --all` cover organisations (`flask
sync-org ID`)", "Bounded Stripe work whatever a user owns").

Each test reproduces a finding: an organisation's drift fixed and counted nowhere ("checked 0, drifted 0"),
`sync-user --all` skipping organisations, no `sync-org`, and an email-change link that made one Stripe
call per organisation its user owns, counted in no limit. Through HTTP or the CLI runner, the real stripe
SDK, the emulator and its real webhooks, as tests/test_organization_billing.py.
"""
import pytest
from sqlalchemy import select, update

from app.billing.call_costs import MOST_PROVIDER_CALLS, OWNER_EMAIL_FOLLOWERS, PROVIDER_CALL_COSTS
from app.extensions import db
from app.models import Organization, User
from app.timeutil import utcnow
from tests.support.accounts import PASSWORD, error_code, last_token, post, work
from tests.support.notifications import mail_config
from tests.support.organizations import Team

NO_USERS = "users: checked 0, drifted 0, fixed 0, failed 0"


@pytest.fixture
def live_config(smtp_server):
    return mail_config(smtp_server)


@pytest.fixture
def team(flow):
    return Team(flow)


def last_line(result):
    return result.stdout.strip().splitlines()[-1]


def run(team, *args):
    return team.app.test_cli_runner().invoke(args=list(args))


def stripe_calls(flow):
    return flow.emulator.control("GET", "requests")["total"]


def plan_of(team):
    return team.client.get(team.base, headers=team.ada).json["plan"]


def paid_unseen(team):
    """Acme subscribes and pays; the webhooks that say so stay undelivered."""
    started = team.client.post(f"{team.base}/subscription/intent", json={"price": team.flow.prices["basic"]},
                               headers=team.ada)
    assert started.status_code == 201, started.json
    team.flow.pay(started.json["client_secret"])
    return started.json["subscription"]["id"]


# -- flask reconcile ------------------------------------------------------------------------------------

def test_reconcile_counts_the_organisations_it_checks_drifts_and_fixes(team):
    """Before: the seats were set back but the summary said "checked 0, drifted 0, fixed 0, failed 0"."""
    subscription_id = team.subscribe()
    item = team.flow.stripe.v1.subscriptions.retrieve(subscription_id)["items"]["data"][0]
    team.flow.stripe.v1.subscriptions.update(subscription_id, params={
        "items": [{"id": item.id, "quantity": 5}], "proration_behavior": "none"})  # the Dashboard
    team.flow.deliver()

    dry = run(team, "reconcile", "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert last_line(dry) == (f"{NO_USERS}; organisations: checked 1, drifted 1, fixed 0, failed 0 "
                              "(dry run: nothing written)")
    assert team.stripe_quantity(subscription_id) == 5
    fixed = run(team, "reconcile")
    assert fixed.exit_code == 0, fixed.output
    assert f"{team.org} (Acme): seats 5 -> 1" in fixed.stdout.splitlines()
    assert last_line(fixed) == f"{NO_USERS}; organisations: checked 1, drifted 1, fixed 1, failed 0"
    assert team.stripe_quantity(subscription_id) == 1
    again = run(team, "reconcile")
    assert last_line(again) == f"{NO_USERS}; organisations: checked 1, drifted 0, fixed 0, failed 0"


def test_reconcile_counts_an_organisation_it_could_not_sync_and_exits_non_zero(team):
    subscription_id = paid_unseen(team)
    team.flow.emulator.add_fault("/v1/subscriptions", status=500, count=1)  # Acme's sync
    failed = run(team, "reconcile")
    team.flow.emulator.clear_faults()
    assert failed.exit_code == 1
    assert f"{team.org} (Acme): FAILED (ProviderUnavailable" in failed.stdout
    assert f"{NO_USERS}; organisations: checked 1, drifted 0, fixed 0, failed 1" in failed.stdout.splitlines()
    assert failed.output.strip().splitlines()[-1] == "Error: 1 organisation(s) could not be synced"
    assert plan_of(team) == "free"
    repaired = run(team, "reconcile")
    assert repaired.exit_code == 0, repaired.output
    assert f"{subscription_id}.provider_status: incomplete -> active" in repaired.stdout
    assert last_line(repaired) == f"{NO_USERS}; organisations: checked 1, drifted 1, fixed 1, failed 0"
    assert plan_of(team) == "basic"


# -- flask sync-user --all, flask sync-org --------------------------------------------------------------

def test_sync_user_all_syncs_organisations_too_and_counts_each_kind(team):
    """Before: `sync-user --all` synced users only; Acme's paid plan stayed unseen."""
    paid_unseen(team)
    synced = run(team, "sync-user", "--all")
    assert synced.exit_code == 0, synced.output
    (line,) = [line for line in synced.stdout.splitlines() if line.startswith(f"{team.org} (Acme): ")]
    assert "plan: - -> basic" in line
    assert last_line(synced) == f"{NO_USERS}; organisations: checked 1, drifted 1, fixed 1, failed 0"
    assert plan_of(team) == "basic"


def test_sync_org_syncs_the_named_organisation_and_names_an_unknown_id_in_one_line(team):
    paid_unseen(team)
    result = run(team, "sync-org", "org_nobody", team.org)
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert any(line.startswith(f"{team.org} (Acme): ") and "plan: - -> basic" in line for line in lines), lines
    assert lines[-1] == "Error: no organisation with id 'org_nobody'"
    assert plan_of(team) == "basic", "the known organisation was synced"
    again = run(team, "sync-org", team.org)
    assert again.exit_code == 0 and again.stdout == f"{team.org} (Acme): unchanged\n"


# -- an owner's email change ----------------------------------------------------------------------------

def owned_organizations(flow, count):
    """``count`` organisations Ada owns, each with a Stripe customer mailing her (no billing_email)."""
    with flow.app.app_context():  # an organisation is created by a verified address only
        db.session.execute(update(User).values(email_verified_at=utcnow()))
        db.session.commit()
    ids = []
    for number in range(count):
        created = flow.client.post("/organizations", json={"name": f"Org {number}"}, headers=flow.headers)
        assert created.status_code == 201, created.json
        customer = flow.stripe.v1.customers.create(params={"email": "ada@example.com"}).id
        with flow.app.app_context():
            db.session.execute(update(Organization).where(Organization.id == created.json["id"])
                               .values(provider_id=customer))
            db.session.commit()
        ids.append(created.json["id"])
    return ids


def customer_emails(flow, ids):
    with flow.app.app_context():
        customers = db.session.scalars(select(Organization.provider_id).where(Organization.id.in_(ids))).all()
    return {flow.stripe.v1.customers.retrieve(customer).email for customer in customers}


def change_link(flow, smtp_server):
    asked = post(flow.client, "/auth/email/change", {"email": "ada@new.example", "password": PASSWORD}, flow.headers)
    assert asked.status_code == 202, asked.json
    work(flow.app)
    return last_token(smtp_server, "ada@new.example")


def test_an_email_change_moves_at_most_a_constant_number_of_customers_and_refuses_more_first(flow, smtp_server):
    """Before: the link of an owner of N organisations made N + 1 Stripe calls, and was asked for freely."""
    ids = owned_organizations(flow, OWNER_EMAIL_FOLLOWERS)
    token = change_link(flow, smtp_server)
    ids += owned_organizations(flow, 1)  # one more follows her address before the link is opened
    before = stripe_calls(flow)
    refused = post(flow.client, "/auth/email/verify", {"token": token})
    assert refused.status_code == 409 and error_code(refused) == "organizations_follow_email", refused.json
    assert sorted(refused.json["error"]["details"]["organizations"]) == sorted(ids)
    assert stripe_calls(flow) == before, "refused before any Stripe call"
    assert flow.me()["email"] == "ada@example.com" and customer_emails(flow, ids) == {"ada@example.com"}
    asked = post(flow.client, "/auth/email/change", {"email": "ada@other.example", "password": PASSWORD},
                 flow.headers)
    assert asked.status_code == 409 and error_code(asked) == "organizations_follow_email", "told before a link"

    # What the answer says to do first: give one a billing email of its own.
    assert flow.client.patch(f"/organizations/{ids[0]}", json={"billing_email": "billing@org.example"},
                             headers=flow.headers).status_code == 200
    before = stripe_calls(flow)
    moved = post(flow.client, "/auth/email/verify", {"token": token})
    assert moved.status_code == 200, moved.json
    assert stripe_calls(flow) - before <= PROVIDER_CALL_COSTS["auth.verify_email"] == 1 + OWNER_EMAIL_FOLLOWERS
    assert customer_emails(flow, ids[1:]) == {"ada@new.example"}
    assert customer_emails(flow, ids[:1]) == {"billing@org.example"}


def test_an_email_change_link_is_counted_in_its_users_stripe_call_limit(flow, smtp_server, configure):
    """Before: the link has no bearer token, and no limit counted its Stripe calls."""
    configure(PROVIDER_CALLS_RATE_LIMIT=f"{MOST_PROVIDER_CALLS} per hour")
    owned_organizations(flow, 1)
    token = change_link(flow, smtp_server)
    renames = (MOST_PROVIDER_CALLS - PROVIDER_CALL_COSTS["auth.verify_email"]) // 2 + 1
    for number in range(renames):  # PATCH /auth/me counts 2 of the same limit each
        renamed = flow.client.patch("/auth/me", json={"name": f"Ada {number}"}, headers=flow.headers)
        assert renamed.status_code == 200, renamed.json
    before = stripe_calls(flow)
    limited = post(flow.client, "/auth/email/verify", {"token": token})
    assert limited.status_code == 429 and error_code(limited) == "rate_limited", limited.json
    assert "Retry-After" in limited.headers
    assert stripe_calls(flow) == before and flow.me()["email"] == "ada@example.com"
