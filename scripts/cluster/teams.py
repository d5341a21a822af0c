"""The organisations of a cluster run (CONTRACT "Organisations"): teams billed per seat whose members
come and go through invitations on both hosts, across the kill, and one whose card declines a seat.

Each team's owner creates the organisation and subscribes it to basic (its quantity starts at its one
member). In the load, a team's client (``step``) either brings an outsider in (the owner invites on
one host; the invitee reads the email the notification worker sent to the SMTP sink and accepts on
the other host, which charges the seat first) or lets a member go (the member leaves, or the owner
removes them, in turn). The invitees' addresses were verified the same way, from the emailed link.
A request refused by the killed host, or answered 5xx, is sent again to the other host until an
answer says where it stands; a lost answer of a change that was made shows as ``invalid_token`` or
``404`` on the retry, and the membership is then read. So each team knows how often each invitee
joined and left, which the end checks compare with the ``member_joined``/``member_left`` rows, and
its members with Stripe's quantity (``checks_billables``). Invitations are as ``member``: the owner
is the one manager, so each billing event of a team is one notification row.
"""
import re
import time
from collections import Counter
from dataclasses import dataclass, field

from scripts.cluster import actions

TEAMS = 2
INVITEES = 4  # per team, besides the declined team's one
MAIL_SECONDS = 20
VERIFY_SUBJECT = "Verify your email address"
INVITED_SUBJECT = "You are invited to join "


@dataclass
class Team:
    """An organisation ``org`` of ``owner``; ``members`` the invitees in it now (by email); the counts
    of joins and leaves per invitee's user id; ``problems`` the answers that said something unexpected;
    ``late_mails`` the invitations revoked because their email did not come in ``MAIL_SECONDS``."""

    name: str
    owner: actions.Account
    invitees: list
    org: str = ""
    members: dict = field(default_factory=dict)
    joined: Counter = field(default_factory=Counter)
    left: Counter = field(default_factory=Counter)
    problems: list = field(default_factory=list)
    turn: int = 0
    late_mails: int = 0
    subscription: str = ""
    declined: list = field(default_factory=list)


def mail_token(run, email, subject, seen):
    """The token in the link of the first mail to ``email`` whose subject starts with ``subject`` and whose
    Message-ID is not in ``seen`` (which it joins); ``None`` after ``MAIL_SECONDS``."""
    deadline = time.monotonic() + MAIL_SECONDS
    while time.monotonic() < deadline:
        for message in list(run.smtp.messages):
            if message["To"] == email and message["Subject"].startswith(subject) and message["Message-ID"] not in seen:
                seen.add(message["Message-ID"])
                return re.search(r"[?&]token=([^\s&]+)", message.get_body(("plain",)).get_content()).group(1)
        time.sleep(0.2)
    return None


def people(run, names):
    """Register each ``(email, name)`` alternately on both hosts, verify each from its emailed link on the
    other host, log each in; the ``Account``s."""
    accounts = []
    for index, (email, name) in enumerate(names):
        host = run.hosts[index % 2].url
        run.call("register", host, "POST", "/auth/register", json={"email": email, "password": actions.PASSWORD,
                                                                   "name": name})
        accounts.append(actions.Account(email))
    for index, account in enumerate(accounts):
        host = run.hosts[index % 2].url
        token = mail_token(run, account.email, VERIFY_SUBJECT, run.seen_mail)
        if token is None:
            raise RuntimeError(f"no verification email to {account.email} in {MAIL_SECONDS} s")
        verified = run.call("verify", run.other(host), "POST", "/auth/email/verify", json={"token": token})
        if verified is None or verified.status_code != 200:
            raise RuntimeError(f"verifying {account.email}: {verified and verified.status_code}")
        actions.login(run, account, host)
        account.id = run.call("me", host, "GET", "/auth/me", headers=actions.bearer(account)).json()["id"]
    return accounts


def create(run, team, host):
    """The owner creates the organisation on ``host`` and subscribes it on the other, paying with a card."""
    answer = run.call("organization", host, "POST", "/organizations", json={"name": team.name},
                      headers=actions.bearer(team.owner))
    team.org = answer.json()["id"]
    intent = run.call("organization intent", run.other(host), "POST", f"/organizations/{team.org}/subscription/intent",
                      json={"price": run.prices["basic"]}, headers=actions.bearer(team.owner))
    if intent is None or intent.status_code != 201:
        raise RuntimeError(f"intent for {team.name}: {intent and intent.status_code} {intent and intent.text}")
    secret, team.subscription = intent.json()["client_secret"], intent.json()["subscription"]["id"]
    run.stripe.v1.payment_intents.confirm(secret.split("_secret_")[0], params={"payment_method": "pm_card_visa"})


def invite(run, team, invitee, host):
    """The owner invites ``invitee`` on ``host``; the invitation's token from the email, or ``None``."""
    answer = run.settled("invite", host, "POST", f"/organizations/{team.org}/invitations",
                         json={"email": invitee.email}, headers=actions.bearer(team.owner))
    # already_invited: the first answer was lost, its invitation (and email) made.
    if answer is None or not (answer.status_code == 201 or _code(answer) == "already_invited"):
        team.problems.append(f"invite {invitee.email}: {answer and answer.status_code} {answer and answer.text}")
        return None
    token = mail_token(run, invitee.email, INVITED_SUBJECT + team.name, run.seen_mail)
    if token is None:  # held, most likely, by a killed worker's lease: take it back and invite again later
        team.late_mails += 1
        listed = run.settled("invitations", host, "GET", f"/organizations/{team.org}/invitations",
                             headers=actions.bearer(team.owner))
        for invitation in listed.json()["data"] if listed is not None and listed.status_code == 200 else []:
            if invitation["email"] == invitee.email:
                run.settled("revoke", host, "DELETE", f"/organizations/{team.org}/invitations/{invitation['id']}",
                            headers=actions.bearer(team.owner))
    return token


def accept(run, team, invitee, token, host):
    """``invitee`` accepts on ``host``; the answer's status (a lost 200 reads as 200)."""
    answer = run.settled("accept", host, "POST", "/organizations/invitations/accept", json={"token": token},
                         headers=actions.bearer(invitee))
    status = answer.status_code if answer is not None else None
    if _code(answer) == "invalid_token" and is_member(run, team, invitee, host):
        status = 200  # the first accept joined; its answer was lost with the killed host
    return status


def is_member(run, team, account, host):
    answer = run.settled("organization", host, "GET", f"/organizations/{team.org}", headers=actions.bearer(account))
    return answer is not None and answer.status_code == 200


def join(run, team, invitee, host):
    token = invite(run, team, invitee, host)
    if token is None:
        return
    status = accept(run, team, invitee, token, run.other(host))
    if status == 200:
        team.members[invitee.email] = invitee
        team.joined[invitee.id] += 1
    else:
        team.problems.append(f"accept {invitee.email}: {status}")


def leave(run, team, member, host):
    """``member`` leaves, or the owner removes them, on ``host`` (in turn)."""
    by = member if team.turn % 2 else team.owner
    answer = run.settled("leave" if by is member else "remove", host, "DELETE",
                         f"/organizations/{team.org}/members/{member.id}", headers=actions.bearer(by))
    # 404: the first request removed them; its answer was lost with the killed host.
    if answer is not None and (answer.status_code == 204 or (answer.status_code == 404
                                                             and not is_member(run, team, member, host))):
        del team.members[member.email]
        team.left[member.id] += 1
    else:
        team.problems.append(f"leave {member.email}: {answer and answer.status_code} {answer and answer.text}")


def step(run, team, host):
    """One change of the team's members on ``host`` (and the other): join while outsiders remain, and
    every third turn (or when all are in) one leaves, so members keep coming and going."""
    outside = [a for a in team.invitees if a.email not in team.members]
    if outside and (not team.members or team.turn % 3):
        join(run, team, outside[0], host)
    else:
        leave(run, team, next(iter(team.members.values())), host)
    team.turn += 1


def decline(run, team, invitee):
    """The declined team's card is replaced by one that fails (as in the billing portal); ``invitee``
    accepts on host A, then at once on host B: both refused and nobody joins. The first is 402 and keeps
    Stripe's pending seat change, so the second is 409 ``payment_pending`` (no second invoice for the seat),
    whether or not Stripe's webhook has come."""
    customer = run.stripe.v1.subscriptions.retrieve(team.subscription).customer
    method = run.stripe.v1.payment_methods.attach("pm_card_chargeCustomerFail", params={"customer": customer})
    run.stripe.v1.subscriptions.update(team.subscription, params={"default_payment_method": method.id})
    token = invite(run, team, invitee, run.hosts[0].url)
    team.declined = [accept(run, team, invitee, token, host.url) for host in run.hosts]


def _code(answer):
    if answer is None or answer.status_code < 400:
        return None
    try:
        return answer.json()["error"]["code"]
    except (ValueError, KeyError):
        return None
