"""What the cluster's subscribed accounts do, as a list that grows with the service (``ACTIONS``).

Each action is ``action(ctx, account, host)``: one step of one account against one host (a
``Host``'s base URL), recording every HTTP answer through ``ctx.call``. The load phase runs them in
turn for every account, alternating hosts, so each account's steps go to both. The other clients of
the load are the organisations' (``scripts.cluster.teams.step``: invite, accept, leave) and the
backend reporting usage (``scripts.cluster.usage.Reporter``); their end checks are in
``scripts.cluster.checks_billables``.
"""
import uuid
from dataclasses import dataclass, field

PASSWORD = "cluster password 123"


@dataclass
class Account:
    """A registered user: its email, current access token, Stripe price (``plan``) and user id."""

    email: str
    id: int = 0
    token: str = ""
    price: str = ""
    refreshes: int = 0
    refresh_failures: list = field(default_factory=list)


def bearer(account):
    return {"Authorization": f"Bearer {account.token}"}


def login(ctx, account, host):
    """``POST /auth/login`` with the right password; the new token is the account's from now on."""
    answer = ctx.call("login", host, "POST", "/auth/login", json={"email": account.email, "password": PASSWORD})
    if answer is not None and answer.status_code == 200:
        account.token = answer.json()["access_token"]


def refresh(ctx, account, host):
    """``POST /auth/token/refresh`` on one host, then ``GET /auth/me`` with the new token on the other:
    a token family issued by one host is valid on both (one database, no per-host state)."""
    answer = ctx.call("refresh", host, "POST", "/auth/token/refresh", headers=bearer(account))
    if answer is None or answer.status_code != 200:
        return
    account.token, account.refreshes = answer.json()["access_token"], account.refreshes + 1
    other = ctx.other(host)
    me = ctx.call("me after refresh", other, "GET", "/auth/me", headers=bearer(account))
    if me is not None and me.status_code != 200 and not ctx.in_kill_window():
        account.refresh_failures.append(f"{other}: {me.status_code}")


def swap(ctx, account, host):
    """``POST /subscription/swap`` to the account's other price (charged at once, written from Stripe's answer)."""
    target = ctx.prices["pro"] if account.price == ctx.prices["basic"] else ctx.prices["basic"]
    answer = ctx.call("swap", host, "POST", "/subscription/swap", json={"price": target},
                      headers={**bearer(account), "Idempotency-Key": str(uuid.uuid4())})
    if answer is not None and answer.status_code == 200:
        account.price = target


def me(ctx, account, host):
    ctx.call("me", host, "GET", "/auth/me", headers=bearer(account))


# One step after another for every account; issue 33's and 34's actions join this list.
ACTIONS = [swap, me, refresh, login, me]
