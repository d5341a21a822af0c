"""``make run``: the local Stripe emulator, an SMTP server and the service, wired together, on 127.0.0.1.

Starts the emulator, creates the demo products and prices there, registers the service's
webhook endpoint (the emulator issues the signing secret), starts a local SMTP server (aiosmtpd)
that files every message in a Maildir under ``instance/``, applies the migrations and runs the
service, the notification delivery worker (``flask deliver-notifications``) and the usage delivery
worker (``flask deliver-usage``, with a ``tokens`` meter at the emulator and the ``api`` plan's metered
price on it). The environment
it used, a ``SECRET_KEY`` made on the first run included, is written to ``instance/dev.env`` so
that other terminals (``make demo``, ``flask sync-user``) can join in with
``set -a; . instance/dev.env; set +a``.
Remember-me (``AUTH_REMEMBER_ME``) is on, first subscriptions get a 14-day trial (``PROVIDER_TRIAL_DAYS``), and
Stripe Tax (the emulator's stand-in) computes tax (``PROVIDER_AUTOMATIC_TAX``).
The emulator keeps its state in ``instance/emulator.json``, so a restart finds the customers and
subscriptions ``instance/app.db`` knows. When one of the processes dies, the others are stopped and
``make run`` says which one it was and how it ended (exit status 1). Ctrl-C (SIGINT) or SIGTERM is
a clean stop: every process is stopped and the exit status is 0. ``--port``, ``--emulator-port``,
``--smtp-port`` and ``--instance`` (``make run PORT=... EMULATOR_PORT=... SMTP_PORT=... INSTANCE=...``)
let a second stack run beside the first.
"""
import argparse
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import stripe

from app.billing.events import REQUIRED_EVENT_TYPES

ROOT = Path(__file__).resolve().parent.parent
INSTANCE = ROOT / "instance"
DEV_ENV = INSTANCE / "dev.env"
# The emulator's customers, subscriptions and prices, kept across restarts as instance/app.db keeps the service's.
EMULATOR_STATE = INSTANCE / "emulator.json"
# What a second stack changes to run beside the first (the Makefile's variables for make run).
OTHER_STACK = "make run PORT=5001 EMULATOR_PORT=12112 SMTP_PORT=8026 INSTANCE=instance-2"
API_KEY = "sk_test_local_emulator"
# (plan, cents a month): each plan's licensed price, by lookup key.
PLANS = (("basic", 900), ("pro", 2900), ("team", 4900), ("api", 500))
# (plan, lookup key, cents a token): a plan's metered price on the ``tokens`` meter, billed in arrears.
METERED_PLANS = (("api", "api_tokens", 1),)
# Settings of the local stack beyond the provider's: remember-me is on so that the README's curl
# session (login with "remember_me": true) gets its 30-day token, and a first subscription is a
# 14-day free trial, as ``make demo`` shows. ``make demo`` runs run after run from one address: each
# opens six accounts and asks one password reset, past the defaults' 20 and 5 an hour by its fourth; and
# its one user's story charges each request its endpoint's dearest Stripe path (``call_costs``), past the
# default 60 a minute in seconds on the local emulator.
SETTINGS = {"AUTH_REMEMBER_ME": "true", "PROVIDER_TRIAL_DAYS": "14", "PROVIDER_AUTOMATIC_TAX": "true",
            "AUTH_REGISTER_RATE_LIMIT": "300 per hour", "AUTH_PASSWORD_RESET_RATE_LIMIT": "50 per hour",
            "PROVIDER_CALLS_RATE_LIMIT": "600 per minute", "FLASK_APP": "wsgi"}


def wait_for(url, seconds=20):
    """Poll ``url`` until it answers (any HTTP status) or raise after ``seconds``."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            urllib.request.urlopen(url, timeout=1).close()
            return
        except urllib.error.HTTPError:
            return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{url} did not answer within {seconds} s") from None
            time.sleep(0.1)


def port_taken(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def wait_for_port(port, seconds=20):
    """Wait until something accepts TCP connections on 127.0.0.1:``port``, or raise after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not port_taken(port):
        if time.monotonic() > deadline:
            raise RuntimeError(f"nothing listens on port {port} after {seconds} s")
        time.sleep(0.1)


def answers(url):
    try:
        urllib.request.urlopen(url, timeout=1).close()
        return True
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False


def _prices(client, meter):
    """Return ``{price id: plan}``, the licensed prices in ``PLANS``' order (``GET /plans`` keeps it) then the
    metered ones of ``METERED_PLANS`` (on ``meter``): the prices a previous run left in the emulator's state,
    else new ones."""
    keys = [plan for plan, _ in PLANS] + [key for _, key, _ in METERED_PLANS]
    found = {price.lookup_key: price.id for price in client.v1.prices.list(params={"lookup_keys": keys}).data}
    wanted = [(plan, {"unit_amount": amount, "recurring": {"interval": "month"}}) for plan, amount in PLANS]
    wanted += [(key, {"unit_amount": amount, "recurring": {"interval": "month", "usage_type": "metered",
                                                           "meter": meter.id}})
               for _, key, amount in METERED_PLANS]
    missing = [(key, terms) for key, terms in wanted if key not in found]
    if missing:
        product = client.v1.products.create(params={"name": "Subscription service"})
        for key, terms in missing:
            found[key] = client.v1.prices.create(params={
                "product": product.id, "currency": "usd", "lookup_key": key, **terms}).id
    return {found[plan]: plan for plan, _ in PLANS} | {found[key]: plan for plan, key, _ in METERED_PLANS}


def _webhook_endpoint(client, url):
    """Return a new webhook endpoint for ``url``, replacing the one a previous run left (with its secret)."""
    # Stripe shows an endpoint's signing secret only in the answer that creates it.
    for endpoint in client.v1.webhook_endpoints.list().data:
        if endpoint.url == url:
            client.v1.webhook_endpoints.delete(endpoint.id)
    return client.v1.webhook_endpoints.create(params={"url": url, "enabled_events": list(REQUIRED_EVENT_TYPES)})


# The meter ``POST /usage/events`` reports to under ``make run`` (event_name ``tokens``, summed).
METER_EVENT_NAME = "tokens"
# make demo's entitlements (docs/entitlements.md): AI tokens a month on the free plan, and a period on the api
# plan, metered on that meter with overage (the units past the limit are billed by the api plan's metered price).
PLAN_FEATURES = {"free": {"ai.tokens": {"limit": 1000}},
                 "api": {"ai.tokens": {"limit": 2000, "meter": METER_EVENT_NAME, "overage": True}}}
SETTINGS["PLAN_FEATURES"] = json.dumps(PLAN_FEATURES)


def _meter(client):
    """The active ``tokens`` meter a previous run left, else a new one."""
    for meter in client.v1.billing.meters.list(params={"status": "active"}).data:
        if meter.event_name == METER_EVENT_NAME:
            return meter
    return client.v1.billing.meters.create(params={"display_name": "Tokens", "event_name": METER_EVENT_NAME,
                                                   "default_aggregation": {"formula": "sum"}})


def set_up_provider(emulator_url, service_url):
    """Find or create the prices, the usage meter and the webhook endpoint at the emulator; return the
    service's environment."""
    client = stripe.StripeClient(API_KEY, base_addresses={"api": emulator_url})
    plans = _prices(client, _meter(client))
    endpoint = _webhook_endpoint(client, f"{service_url}/provider/webhook")
    return {
        "PROVIDER_API_KEY": API_KEY,
        "PROVIDER_API_BASE": emulator_url,
        "PROVIDER_WEBHOOK_SECRET": endpoint.secret,
        "PROVIDER_PLANS": json.dumps(plans),
        "SERVICE_URL": service_url,
    }


def secret_key(env_file):
    """Return the ``SECRET_KEY`` written to ``env_file`` by an earlier run, or a new random one.

    Kept across restarts, so that the links in emails already in the Maildir still work.
    """
    if env_file.exists():
        for line in env_file.read_text().splitlines():
            name, _, value = line.partition("=")
            if name == "SECRET_KEY" and value.strip("'"):
                return value.strip("'")
    return secrets.token_urlsafe(32)


class Stack:
    """The emulator and the service as child processes; ``with Stack(...) as env:`` starts and stops them.

    With ``state_file`` the emulator keeps its state in that JSON file across restarts, as the
    database keeps the service's. ``processes`` maps each child's name to its ``Popen``.
    """

    def __init__(self, port=5000, emulator_port=12111, database_url=None, smtp_port=8025, maildir=None,
                 env_file=DEV_ENV, state_file=None):
        self.port, self.emulator_port, self.database_url = port, emulator_port, database_url
        self.smtp_port, self.maildir = smtp_port, Path(maildir or ROOT / "instance" / "mail")
        self.env_file, self.state_file = env_file, state_file
        self.processes = {}

    def _spawn(self, name, args, env=None):
        self.processes[name] = subprocess.Popen([sys.executable, *args], cwd=ROOT, env=env)

    def wait(self):
        """Block until one of the processes exits; return a line naming it and how it ended."""
        while True:
            for name, process in self.processes.items():
                if process.poll() is not None:
                    return f"{name} {ended(process.returncode)}"
            time.sleep(0.5)

    def __enter__(self):
        service_url = f"http://127.0.0.1:{self.port}"
        emulator_url = f"http://127.0.0.1:{self.emulator_port}"
        for url in (service_url + "/health", emulator_url + "/_emulator/clock"):
            if answers(url):
                raise SystemExit(f"{url} is already taken: stop what runs there, or pick other ports ({OTHER_STACK})")
        if port_taken(self.smtp_port):
            raise SystemExit(f"port {self.smtp_port} (SMTP) is already taken: stop what runs there, or pick another "
                             f"({OTHER_STACK})")
        try:
            return self._start(service_url, emulator_url)
        except BaseException:
            # __exit__ runs only once __enter__ has returned: a failed or interrupted start stops
            # what it started itself, so no emulator or SMTP server is left holding its port.
            self.__exit__(None, None, None)
            raise

    def _start(self, service_url, emulator_url):
        for path in filter(None, (self.state_file, self.maildir, self.env_file)):
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        state = ["--state-file", str(self.state_file)] if self.state_file else []
        self._spawn("the Stripe emulator", ["-m", "scripts.stripe_emulator", "--port", str(self.emulator_port), *state])
        # aiosmtpd's Mailbox handler files each message it accepts in a Maildir (one file in new/).
        self._spawn("the SMTP server (aiosmtpd)", ["-m", "aiosmtpd", "-n", "-l", f"127.0.0.1:{self.smtp_port}", "-c",
                                                   "aiosmtpd.handlers.Mailbox", str(self.maildir)])
        wait_for(emulator_url + "/_emulator/clock")
        wait_for_port(self.smtp_port)
        provider_env = {**set_up_provider(emulator_url, service_url), "MAIL_SERVER": "127.0.0.1",
                        "MAIL_PORT": str(self.smtp_port), "MAILDIR": str(self.maildir),
                        "SECRET_KEY": secret_key(self.env_file)}
        if self.database_url:
            # In dev.env too, so that a flask command in another terminal (make demo's service key) finds it.
            provider_env["DATABASE_URL"] = self.database_url
        env = {**os.environ, **provider_env, **SETTINGS}
        env.setdefault("SECRET_KEY", secrets.token_hex(32))
        self.env_file.write_text("".join(f"{k}='{v}'\n" for k, v in {**provider_env, **SETTINGS}.items()))
        upgraded = subprocess.run([sys.executable, "-m", "flask", "db", "upgrade"], cwd=ROOT, env=env)
        if upgraded.returncode:
            # flask has said what is wrong in one line (a bad setting, an unreachable database): no traceback here.
            raise SystemExit(upgraded.returncode)
        self._spawn("the service (flask run)",
                    ["-m", "flask", "run", "--host", "127.0.0.1", "--port", str(self.port), "--no-reload"], env)
        self._spawn("the delivery worker (flask deliver-notifications)", ["-m", "flask", "deliver-notifications"], env)
        self._spawn("the usage delivery worker (flask deliver-usage)", ["-m", "flask", "deliver-usage"], env)
        wait_for(service_url + "/health")
        database = self.database_url or env.get("DATABASE_URL") or f"sqlite:///{ROOT / 'instance' / 'app.db'}"
        return {**provider_env, "DATABASE": database, "EMULATOR_URL": emulator_url}

    def __exit__(self, *exc_info):
        for process in reversed(self.processes.values()):
            process.terminate()
        for process in self.processes.values():
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()


def ended(returncode):
    """Say how a process ended, from its ``returncode`` (negative: the signal that killed it)."""
    if returncode < 0:
        return f"was killed by {signal.Signals(-returncode).name}"
    return f"exited with status {returncode}"


def _stop(signum, frame):
    raise KeyboardInterrupt  # unwinds through Stack.__exit__, so no child is left behind


def shown(path):
    """Return ``path`` relative to the checkout when it is inside it, as the README writes paths."""
    path = Path(path).resolve()
    return path.relative_to(ROOT) if path.is_relative_to(ROOT) else path


def stack_from(args):
    """Return the ``Stack`` of the command line's ports and instance folder."""
    instance = args.instance.resolve()
    # The service's own default database is instance/app.db; another folder gets its own.
    database_url = None if instance == INSTANCE else f"sqlite:///{instance / 'app.db'}"
    return Stack(args.port, args.emulator_port, database_url=database_url, smtp_port=args.smtp_port,
                 maildir=instance / "mail", env_file=instance / "dev.env", state_file=instance / "emulator.json")


def main(argv=None):
    """Run the stack until Ctrl-C (exit status 0) or until one of its processes dies (exit status 1)."""
    # SIGINT too, explicitly: a shell that started make in the background, or a launcher, may hand
    # it down ignored. Ctrl-C then stopped the children (aiosmtpd has its own handler) and not
    # this process, which reported the first of them as died and exited 1.
    for stop in (signal.SIGINT, signal.SIGTERM):
        signal.signal(stop, _stop)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=5000, help="the service's port (make run PORT=)")
    parser.add_argument("--emulator-port", type=int, default=12111, help="the Stripe emulator's (EMULATOR_PORT=)")
    parser.add_argument("--smtp-port", type=int, default=8025, help="the SMTP server's (SMTP_PORT=)")
    parser.add_argument("--instance", type=Path, default=INSTANCE,
                        help="folder of the database, emulator state, mail and dev.env (INSTANCE=)")
    args = parser.parse_args(argv)
    stack = stack_from(args)
    try:
        return _run(stack)
    except KeyboardInterrupt:
        return 0  # a stop asked for: Stack.__exit__ has stopped every process


def _run(stack):
    with stack as env:
        plans = ", ".join(f"{plan}={price}" for price, plan in json.loads(env["PROVIDER_PLANS"]).items())
        print(f"\n  service:   {env['SERVICE_URL']}  (OpenAPI at {env['SERVICE_URL']}/openapi.json)"
              f"\n  database:  {env['DATABASE']}"
              f"\n  emulator:  {env['EMULATOR_URL']}  (Stripe API; webhooks go to /provider/webhook)"
              f"\n  prices:    {plans}"
              f"\n  mail:      {env['MAILDIR']}  (Maildir: one file per message in new/; SMTP on "
              f"127.0.0.1:{env['MAIL_PORT']}, delivered by `flask deliver-notifications`)"
              f"\n  env:       {shown(stack.env_file)}  (set -a; . {shown(stack.env_file)}; set +a)"
              f"\n  state:     {shown(stack.state_file)} and the database survive a restart; "
              "`make clean` starts afresh"
              "\n  Ctrl-C stops them all.\n", flush=True)
        stopped = stack.wait()
        print(f"make run: {stopped}; stopping the others", file=sys.stderr, flush=True)
    return 1


if __name__ == "__main__":
    sys.exit(main())
