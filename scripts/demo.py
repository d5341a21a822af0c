"""``make demo``: the product's whole flow, step by step, against the service and the emulator.

Uses the stack ``make run`` started (it reads ``instance/dev.env``); when none answers, it starts
its own on spare ports and stops it at the end. The client side is plain HTTP; paying is what
Stripe.js would do in a browser, done here with the stripe SDK against the emulator.
"""
import json
import mailbox
import re
import secrets
import sys
import time
import uuid
from contextlib import nullcontext
from datetime import UTC, datetime
from email import message_from_binary_file, policy
from pathlib import Path

import requests
import stripe

from app.timeutil import isoformat_z
from scripts.demo_entitlements import entitlements_story
from scripts.demo_period_end import period_end_story
from scripts.demo_team import team_story
from scripts.demo_usage import usage_story
from scripts.dev import API_KEY, DEV_ENV, Stack, answers

DAY = 86400


def read_dev_env():
    if not DEV_ENV.exists():
        return None
    env = dict(line.split("=", 1) for line in DEV_ENV.read_text().splitlines() if "=" in line)
    env = {key: value.strip("'") for key, value in env.items()}
    return env if answers(env["SERVICE_URL"] + "/health") and answers(env["PROVIDER_API_BASE"] + "/_emulator/clock") \
        else None


class Demo:
    def __init__(self, env):
        self.base = env["SERVICE_URL"]
        self.emulator = env["PROVIDER_API_BASE"]
        self.maildir = env["MAILDIR"]
        self.env = env
        # Each plan's first price is its licensed one (scripts/dev.py lists a plan's metered prices after).
        self.prices = {}
        for price, plan in json.loads(env["PROVIDER_PLANS"]).items():
            self.prices.setdefault(plan, price)
        self.stripe = stripe.StripeClient(API_KEY, base_addresses={"api": self.emulator})
        self.http = requests.Session()
        self.step_number = 0
        self.clock = None
        # The app backend's service key headers (usage:write and entitlements:check): the usage story makes it.
        self.backend = None

    def step(self, text):
        self.step_number += 1
        print(f"\n{self.step_number:>2}. {text}", flush=True)

    def call(self, method, path, expect, **kwargs):
        response = self.http.request(method, self.base + path, timeout=30, **kwargs)
        body = response.json() if response.content else None
        print(f"    {method} {path} -> {response.status_code} {json.dumps(body)[:300] if body else ''}")
        if response.status_code != expect:
            raise SystemExit(f"expected {expect}, got {response.status_code}")
        return body

    def until(self, what, check, seconds=15):
        """Poll ``check()`` until it is true: webhooks arrive asynchronously, as from Stripe."""
        deadline = time.monotonic() + seconds
        while not check():
            if time.monotonic() > deadline:
                raise SystemExit(f"timed out waiting for {what}")
            time.sleep(0.2)
        print(f"    ... {what}")

    def me(self):
        return self.http.get(self.base + "/auth/me", timeout=30).json()

    def kinds(self):
        return [n["kind"] for n in self.notifications()]

    def advance_to(self, timestamp, clock=None):
        """Move the demo's test clock (or its other ``clock``) to just past ``timestamp`` (Unix seconds): what
        falls due for its customers happens; nobody else's subscription moves."""
        clock = clock or self.clock
        self.stripe.v1.test_helpers.test_clocks.advance(clock, params={"frozen_time": timestamp + 60})
        # Stripe answers "advancing" and moves the clock in the background: done when it says "ready".
        self.until("the test clock is ready",
                   lambda: self.stripe.v1.test_helpers.test_clocks.retrieve(clock).status == "ready")

    def on_own_clock(self, subscription_id=None, customer=None, clock=None):
        """Put the customer the service just created for a demo user (``customer``, or ``subscription_id``'s) on
        the demo's test clock (or its other ``clock``).

        Stripe sets a customer's clock only when it creates it, and the service creates its customers; the
        emulator's ``/_emulator/customers/{id}/test_clock`` moves it there, objects and all.
        """
        customer = customer or self.stripe.v1.subscriptions.retrieve(subscription_id).customer
        requests.post(f"{self.emulator}/_emulator/customers/{customer}/test_clock",
                      json={"test_clock": clock or self.clock}, timeout=30).raise_for_status()

    def trial(self):
        """The first subscription is a free trial whose card is saved up front, then charged when it ends."""
        self.step("Start a subscription to the basic price: the first one is a 14-day free trial")
        intent = self.call("POST", "/subscription/intent", 201, json={"price": self.prices["basic"]})
        subscription_id = intent["subscription"]["id"]
        self.on_own_clock(subscription_id)
        self.step("Save the card for after the trial with the SetupIntent's secret, as Stripe.js confirmSetup "
                  "would (card 4242)")
        saved = self.stripe.v1.setup_intents.confirm(intent["client_secret"].split("_secret_")[0],
                                                     params={"payment_method": "pm_card_visa"})
        print(f"    setup intent {saved.id}: {saved.status}")
        self.step("Stripe's signed webhooks arrive: trial_started; the plan is basic during the trial")
        # A card that saved a trial here before (an earlier demo on this make run) ends this one at once, charged,
        # and no trial_started is sent (CONTRACT "Changes to the fourth round"). docs/tour.md saves another
        # card (Amex) and says why, so that the demo and the tour keep their trials whichever runs first.
        self.until("plan is basic and the card is on the profile", lambda: self.me()["plan"] == "basic"
                   and self.me()["card"] is not None
                   and ("trial_started" in self.kinds() or self.me()["subscription"]["status"] == "active"))
        if "trial_started" not in self.kinds():
            print("    card 4242 had its free trial on this stack already (an earlier make demo; a trial is once per "
                  "card and per person): the trial ended at once and its first period was charged now, so the status "
                  "is active; docs/tour.md saves Amex so that its trial stays")
        self.call("GET", "/auth/me", 200)
        self.step("The next invoice: the first charge, when the trial ends")
        upcoming = self.call("GET", "/subscription/invoices/upcoming", 200)
        print(f"    due then: {upcoming['amount_due'] / 100:.2f} {upcoming['currency'].upper()}")
        self.step("Two weeks pass at the provider: the trial ends and Stripe charges the saved card")
        self.advance_to(self.stripe.v1.subscriptions.retrieve(subscription_id).trial_end)
        self.until("the subscription is active", lambda: self.me()["subscription"]["status"] == "active")
        return subscription_id

    def dunning(self, subscription_id):
        """A failed renewal, past due, then recovery: a new card from the card form pays the open invoice."""
        self.step("The card on file is replaced by one that cannot be charged (4000 0000 0000 0341)")
        self.stripe.v1.subscriptions.update(subscription_id,
                                            params={"default_payment_method": "pm_card_chargeCustomerFail"})
        self.step("A month passes at the provider: the renewal fails and the subscription is past due")
        self.advance_to(self.stripe.v1.subscriptions.retrieve(subscription_id)["items"].data[0].current_period_end)
        self.until("payment_failed and past_due notifications",
                   lambda: {"payment_failed", "past_due"} <= set(self.kinds()))
        self.call("GET", "/subscription", 200)
        data = next(n for n in self.notifications() if n["kind"] == "payment_failed")["data"]
        retry = data["next_payment_attempt"]  # Unix seconds, as Stripe gives them
        when = isoformat_z(datetime.fromtimestamp(retry, UTC)) if retry else "none scheduled"
        print(f"    next retry at {when}; or pay at {data['hosted_invoice_url']}")
        self.step("The user changes the card with the card form (a SetupIntent), confirmed with card 5555 ... 4444")
        form = self.call("POST", "/subscription/payment-method", 201, headers={"Idempotency-Key": str(uuid.uuid4())})
        self.stripe.v1.setup_intents.confirm(form["client_secret"].split("_secret_")[0],
                                             params={"payment_method": "pm_card_mastercard"})
        self.step("setup_intent.succeeded: the card becomes the default and pays the open invoice at once")
        self.until("payment_recovered and the plan is basic again",
                   lambda: "payment_recovered" in self.kinds() and self.me()["plan"] == "basic")
        self.call("GET", "/auth/me", 200)

    def manage(self, subscription_id):
        """Change the subscription from the app: each change is Stripe's answer, never the request's."""
        pro, team = self.prices["pro"], self.prices["team"]
        self.step("Preview a swap to pro: a dearer price is charged now (a credit for basic, the rest of pro)")
        preview = self.call("GET", f"/subscription/swap/preview?price={pro}", 200)
        print(f"    due now: {preview['amount_due'] / 100:.2f} {preview['currency'].upper()}")
        self.step("Swap to pro with the preview's proration_date, so Stripe charges what was shown")
        self.call("POST", "/subscription/swap", 200, headers={"Idempotency-Key": str(uuid.uuid4())}, json={
            "price": pro, "proration_date": preview["proration_date"]})
        self.until("plan_changed notification", lambda: "plan_changed" in self.kinds())
        self.step("The card on file is replaced by one that is declined (4000 0000 0000 0341); swap to team")
        self.stripe.v1.subscriptions.update(subscription_id,
                                            params={"default_payment_method": "pm_card_chargeCustomerFail"})
        refused = self.call("POST", "/subscription/swap", 402, json={"price": team})["error"]["details"]
        self.until("swap_payment_failed notification", lambda: "swap_payment_failed" in self.kinds())
        self.step("Stripe kept the old price (a pending update), so the plan is still pro")
        self.call("GET", "/subscription", 200)
        self.step("While that change waits for its payment, no other price or seat change gets through")
        self.call("POST", "/subscription/quantity", 409, json={"quantity": 3})
        self.step("The user pays the change's invoice with a good card (4242), as Stripe.js confirmPayment would: "
                  "the swap applies and that card pays from now on")
        self.stripe.v1.payment_intents.confirm(refused["client_secret"].split("_secret_")[0],
                                               params={"payment_method": "pm_card_visa"})
        self.until("plan is team", lambda: self.me()["plan"] == "team")
        self.step("Three seats: more seats cost money, so they are charged now")
        self.call("POST", "/subscription/quantity", 200, json={"quantity": 3})
        self.step("Cancel at the period's end, then change your mind")
        self.call("POST", "/subscription/cancel", 200, json={"at_period_end": True})
        self.call("POST", "/subscription/resume", 200)
        self.until("cancellation_withdrawn notification", lambda: "cancellation_withdrawn" in self.kinds())

    def accounts(self, email):
        """Verify the address and reset the password from the links the worker mailed, as a person would."""
        self.step("The verification email is in the Maildir: its link's token goes to POST /auth/email/verify")
        token = self.link_token(email, "Verify your email address")
        self.call("POST", "/auth/email/verify", 200, json={"token": token})
        self.step("Forgotten password: any address gets the same 202, a registered one a reset email")
        self.call("POST", "/auth/password/forgot", 202, json={"email": email})
        token = self.link_token(email, "Reset your password")
        self.step("The reset link sets a new password (it works once) and logs out every session")
        self.call("POST", "/auth/password/reset", 200, json={"token": token, "password": "demo password 2"})
        self.call("GET", "/auth/me", 401)
        login = self.call("POST", "/auth/login", 200, json={"email": email, "password": "demo password 2"})
        self.http.headers["Authorization"] = f"Bearer {login['access_token']}"

    def link_token(self, email, subject):
        """Wait for the email ``subject`` to ``email`` in the Maildir; return the token of its link."""
        self.until(f"'{subject}' in the Maildir", lambda: any(m["Subject"] == subject for m in self.mails(email)),
                   seconds=30)
        message = [m for m in self.mails(email) if m["Subject"] == subject][-1]
        link = re.search(r"\S+[?&]token=\S+", message.get_body(("plain",)).get_content()).group()
        print(f"    link: {link[:60]}...")
        return link.split("token=", 1)[1]

    def notifications(self):
        return self.http.get(self.base + "/notifications", timeout=30).json()["data"]

    def selling(self):
        """Another customer buys through Stripe Checkout with a launch code, with a German VAT id, and gets a receipt.

        Self-contained: its own account, token and promotion code. Returns its email and its subscription's id.
        """
        email = f"checkout-{secrets.token_hex(4)}@example.com"
        self.step("The plan catalogue, read from Stripe (no login; cached, with an ETag)")
        catalogue = self.call("GET", "/plans", 200)
        for plan in catalogue["data"]:
            print(f"    {plan['plan']}: {plan['unit_amount'] / 100:.2f} {plan['currency'].upper()} / "
                  f"{plan['interval']}, {plan['trial_days']} trial days")
        self.step(f"Register and log in {email}, a business in Berlin")
        self.call("POST", "/auth/register", 201, json={"email": email, "password": "demo password 1", "name": "ACME"})
        token = self.call("POST", "/auth/login", 200, json={"email": email, "password": "demo password 1"})
        self.http.headers["Authorization"] = f"Bearer {token['access_token']}"
        self.call("PUT", "/subscription/billing-details", 200, json={"name": "ACME GmbH", "address": {
            "line1": "Unter den Linden 1", "city": "Berlin", "postal_code": "10117", "country": "DE"}})
        self.call("POST", "/subscription/tax-ids", 201, json={"type": "eu_vat", "value": "DE123456789"})
        self.call("POST", "/subscription/tax-ids", 422, json={"type": "eu_vat", "value": "DE12"})
        code = f"LAUNCH{secrets.token_hex(2).upper()}"
        self.step(f"The operator creates a 20 % launch code {code} at Stripe (as in the dashboard)")
        coupon = self.stripe.v1.coupons.create(params={"percent_off": 20, "duration": "forever"})
        self.stripe.v1.promotion_codes.create(params={"promotion": {"type": "coupon", "coupon": coupon.id},
                                                      "code": code})
        self.call("POST", "/subscription/checkout", 422, json={
            "price": self.prices["pro"], "success_url": "https://evil.example/", "cancel_url": "https://evil.example/"})
        self.step("Checkout with the code: the answer is Stripe's hosted page")
        session = self.call("POST", "/subscription/checkout", 201, headers={"Idempotency-Key": str(uuid.uuid4())},
                            json={"price": self.prices["pro"], "promotion_code": code.lower(),
                                  "success_url": "http://localhost:3000/welcome",
                                  "cancel_url": "http://localhost:3000/plans"})
        # On the demo's clock before it pays, so that its trial ends when the demo moves that clock, whenever
        # this runs and whatever ran before (not on the emulator's own clock, which other users share).
        self.on_own_clock(customer=self.stripe.v1.checkout.sessions.retrieve(session["id"]).customer)
        self.step("The customer pays on that page with card 4242 (a browser would; here the emulator's control)")
        requests.post(f"{self.emulator}/_emulator/checkout_sessions/{session['id']}/complete",
                      json={"payment_method": "pm_card_visa"}, timeout=30).raise_for_status()
        # A first subscription, so a trial under make run (PROVIDER_TRIAL_DAYS): paid at its end.
        self.until("the subscription is announced", lambda: {"subscribed", "trial_started"} & set(self.kinds()))
        subscription = self.call("GET", "/subscription", 200)["subscription"]
        if subscription["status"] == "trialing":
            self.step("The trial's two weeks pass at the provider: Stripe charges the card Checkout saved")
            self.advance_to(self.stripe.v1.subscriptions.retrieve(subscription["id"]).trial_end)
        self.until("the receipt", lambda: "payment_succeeded" in self.kinds())
        self.step("The invoice: 29.00 less 20 %, then 19 % German VAT (Stripe's figures: total = subtotal + tax)")
        invoice = self.call("GET", "/subscription/invoices", 200)["data"][0]
        figures = ", ".join(f"{name} {invoice[name] / 100:.2f}" for name in ("subtotal", "tax", "total", "amount_paid"))
        print(f"    {figures} {invoice['currency'].upper()}")
        return email, subscription["id"]

    def run(self):
        """Walk through the flow on a Stripe test clock of its own, so that moving time for the demo
        renews, ends or breaks no other user of the emulator (their clock never moves)."""
        now = requests.get(f"{self.emulator}/_emulator/clock", timeout=30).json()["now"]
        self.clock = self.stripe.v1.test_helpers.test_clocks.create(params={"frozen_time": now, "name": "make demo"}).id
        print(f"Test clock {self.clock}: the demo's time moves on it alone.")
        self.steps()

    def steps(self):
        email = f"demo-{secrets.token_hex(4)}@example.com"
        self.step(f"Register {email}")
        self.call("POST", "/auth/register", 201, json={"email": email, "password": "demo password 1", "name": "Demo"})
        self.step("Log in: the only credential exchange; the answer is a bearer token")
        token = self.call("POST", "/auth/login", 200, json={"email": email, "password": "demo password 1"})
        self.http.headers["Authorization"] = f"Bearer {token['access_token']}"
        self.accounts(email)
        self.step("Who am I? Free plan, no card yet")
        self.call("GET", "/auth/me", 200)
        subscription_id = self.trial()
        self.dunning(subscription_id)
        self.manage(subscription_id)
        self.step("Billing history: the invoices as Stripe has them, newest first, two a page")
        page = self.call("GET", "/subscription/invoices?limit=2", 200)
        self.call("GET", f"/subscription/invoices?limit=2&starting_after={page['data'][-1]['id']}", 200)
        self.step("Cancel at period end in the billing portal")
        portal = self.call("POST", "/subscription/portal", 200, json={})
        form = requests.post(f"{portal['url']}/subscriptions/{subscription_id}/cancel_at_period_end", timeout=30)
        print(f"    portal form -> {form.status_code}")
        self.until("cancellation scheduled", lambda: self.me()["subscription"]["cancel_at_period_end"])
        self.step("The user keeps the plan through the grace period")
        self.call("GET", "/subscription", 200)
        self.step("A month passes at the provider: the period ends and Stripe ends the subscription")
        self.advance_to(self.stripe.v1.test_helpers.test_clocks.retrieve(self.clock).frozen_time + 32 * DAY)
        self.until("plan back to free", lambda: self.me()["plan"] == "free")
        self.call("GET", "/auth/me", 200)
        self.step("Notifications, newest first")
        notified = len(self.call("GET", "/notifications", 200)["data"])
        self.step("Refresh rotates the token; logout deletes it")
        refreshed = self.call("POST", "/auth/token/refresh", 200)
        self.http.headers["Authorization"] = f"Bearer {refreshed['access_token']}"
        self.call("POST", "/auth/logout", 204)
        self.call("GET", "/auth/me", 401)
        self.show_mail(email, notified)
        selling_email, selling_subscription = self.selling()
        period_end_story(self, selling_subscription)
        self.show_mail(selling_email, len(self.notifications()))
        team_story(self)
        usage_story(self)
        entitlements_story(self)
        print("\nDemo complete.")

    def show_mail(self, email, count):
        """Wait for the worker to mail every notification of ``email``; print them, oldest first."""
        self.step(f"The emails the flow produced, as the delivery worker sent them (Maildir {self.maildir})")
        self.until(f"{count} emails to {email}", lambda: len(self.mails(email)) >= count, seconds=30)
        for message in self.mails(email):
            print(f"\n    --- {message['Date']}  {message['Message-ID']}\n    To: {message['To']}\n"
                  f"    Subject: {message['Subject']}\n")
            for line in message.get_body(("plain",)).get_content().strip().splitlines():
                print(f"    {line}")

    def mails(self, email):
        inbox = mailbox.Maildir(self.maildir,
                                factory=lambda file: message_from_binary_file(file, policy=policy.default))
        messages = [m for m in inbox if m["To"] == email]
        return sorted(messages, key=lambda m: int(re.search(r"\d+", m["Message-ID"]).group()))


def main():
    env = read_dev_env()
    stack = nullcontext(env) if env else Stack(port=5077, emulator_port=12177, smtp_port=8077,
                                              database_url=f"sqlite:///{Path('instance').resolve()}/demo.db",
                                              maildir=Path("instance/demo-mail").resolve())
    if env is None:
        print("No running `make run` stack found; starting one for the demo (ports 5077, 12177, 8077).", flush=True)
    with stack as running:
        Demo(running).run()


if __name__ == "__main__":
    sys.exit(main())
