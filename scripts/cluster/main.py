"""``make test-cluster``: the run, its phases and its table (see ``scripts.cluster``)."""
import http.client
import json
import os
import subprocess
import sys
import threading
import time

import requests
import stripe

from app.billing.events import REQUIRED_EVENT_TYPES
from scripts.bench.database import Database
from scripts.bench.webhook_load import RemoteEmulator
from scripts.cluster.hosts import PORT, REPO, Host
from scripts.cluster.network import Forwarder, Network
from scripts.cluster.usage import metered_prices, service_key
from tests.ports import free_port
from tests.receivers import HttpReceiver, SmtpSink
from tests.redis_server import RedisServer

ACCOUNTS = 8
LOAD_SECONDS = 40
KILL_AFTER_SECONDS = 12
DOWN_SECONDS = 3
# After the killed host answers again: requests that started before it was healthy may end now.
KILL_GRACE_SECONDS = 2
DRAIN_SECONDS = 120
# How long a client sends one request again (to the other host) before it gives up.
SETTLE_SECONDS = 30
# Stripe's retry schedule (a minute to a day) compressed 1000 times: 0.06 s, 0.3 s, 1.8 s, 3.6 s, ...
RETRY_SCALE = "0.001"
NOTIFY_SECRET = "whsec_" + "Y2x1c3Rlci10ZXN0LW5vdGlmaWNhdGlvbi1zZWNyZXQ="


def log(message):
    print(f"[cluster {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


class Run:
    """One cluster run: the shared services, the two hosts, the clients' record."""

    # Stripe calls (PROVIDER_CALL_COSTS): a swap counts 7, an accept 10, a leave 6. On stop 51's faster VM one
    # team invitee joined and left often enough in the load to pass 150 a minute (a 429 the team checks call out
    # of place): the limit is for ``phases.limits`` to meet, with room to spare for the load's clients.
    login_limit, calls_limit = 30, 300

    def __init__(self, workdir, loopback=False):
        self.loopback = loopback
        self.workdir, self.calls, self.kill_window, self.delivery_log = workdir, [], None, {}
        self.lock, self.limits, self.accounts = threading.Lock(), {}, []
        # The organisations (``teams.Team``), the usage backend (``usage.Reporter``), the Message-IDs of
        # the mails read, the rows the killed host's workers held (``phases.end_killed_leases``).
        self.teams, self.reporter, self.seen_mail, self.held = [], None, set(), {}
        # Unix seconds at the start (usage's summaries begin there); when host A was killed (aware UTC).
        self.started_wall, self.killed_at = int(time.time()), None

    # -- the clients' record ----------------------------------------------------------------
    def call(self, name, host, method, path, **kwargs):
        """One request to ``host`` (a base URL); recorded; ``None`` when the connection failed."""
        started = time.monotonic()
        try:
            answer = requests.request(method, host + path, timeout=30, **kwargs)
        except requests.RequestException:
            answer = None
        with self.lock:
            self.calls.append({"name": name, "host": host, "started": started, "ended": time.monotonic(),
                               "status": answer.status_code if answer is not None else None,
                               "failed": answer is None or answer.status_code >= 500})
        return answer

    def settled(self, name, host, method, path, **kwargs):
        """``call`` until a host answers below 500, the other host after each refusal or 5xx; that answer,
        or ``None`` after ``SETTLE_SECONDS``: what a client does when the host it asked died."""
        deadline = time.monotonic() + SETTLE_SECONDS
        while True:
            answer = self.call(name, host, method, path, **kwargs)
            if answer is not None and answer.status_code < 500:
                return answer
            if time.monotonic() > deadline:
                return None
            host = self.other(host)
            time.sleep(0.2)

    def other(self, host):
        return next(h.url for h in self.hosts if h.url != host)

    def during_kill(self, call):
        window = self.kill_window
        return window is not None and call["ended"] >= window[0] and call["started"] <= (window[1] or float("inf"))

    def in_kill_window(self):
        now = time.monotonic()
        return self.during_kill({"started": now, "ended": now})

    # -- set-up -------------------------------------------------------------------------------
    def start(self):
        self.network = Network(self.loopback).start()
        self.redis = RedisServer().start()
        self.smtp, self.receiver = SmtpSink().start(), HttpReceiver().start()
        emulator_port = free_port()
        # No --state-file: the emulator is not restarted in a run, and saving its whole state (megabytes by
        # the end) after every POST, a meter event each, made it the bottleneck (read timeouts at the hosts).
        self.emulator = subprocess.Popen(
            [sys.executable, "-m", "scripts.stripe_emulator", "--port", str(emulator_port)], cwd=REPO,
            env={**os.environ, "STRIPE_EMULATOR_RETRY_SCALE": RETRY_SCALE}, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        self.emulator_url = f"http://127.0.0.1:{emulator_port}"
        self.remote = RemoteEmulator(self.emulator_url)
        _wait_http(f"{self.emulator_url}/_emulator/clock")
        self.stripe = stripe.StripeClient("sk_test_cluster", base_addresses={"api": self.emulator_url},
                                          max_network_retries=0)
        self.prices = self.remote.prices()
        self.metered = metered_prices(self, self.stripe.v1.prices.retrieve(self.prices["basic"]).product)
        self.balancer = Forwarder(("127.0.0.1", free_port()), [(a, PORT) for a in self.network.hosts]).start()
        endpoint = self.stripe.v1.webhook_endpoints.create(params={
            "url": f"http://127.0.0.1:{self.balancer.listen[1]}/provider/webhook",
            "enabled_events": list(REQUIRED_EVENT_TYPES)})
        self.db = Database("postgres", self.workdir)
        env = self._env(endpoint.secret)
        subprocess.run([sys.executable, "-m", "flask", "--app", "wsgi", "db", "upgrade"], cwd=REPO, check=True,
                       env={**env, "DATABASE_URL": self.db.url}, capture_output=True)
        self.service_key = service_key({**env, "DATABASE_URL": self.db.url})
        self.hosts = [Host(name, address, self.network.prefix(i), env, self.workdir)
                      for i, (name, address) in enumerate(zip("ab", self.network.hosts, strict=True))]
        for host in self.hosts:
            host.start()
        return self

    def _env(self, webhook_secret):
        pg, redis = self.network.expose(5432), self.network.expose(self.redis.port)
        emulator = self.network.expose(int(self.emulator_url.rsplit(":", 1)[1]))
        smtp, receiver = self.network.expose(self.smtp.port), self.network.expose(self.receiver.server.server_port)
        keep = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "VIRTUAL_ENV", "PYTHONPATH")}
        return {**keep, "PYTHONDONTWRITEBYTECODE": "1", "LOG_LEVEL": "WARNING",
                "DATABASE_URL": f"postgresql+psycopg://postgres@{pg[0]}:{pg[1]}/{self.db.name}",
                "RATELIMIT_STORAGE_URI": f"redis://{redis[0]}:{redis[1]}/0",
                "PROVIDER_API_BASE": f"http://{emulator[0]}:{emulator[1]}", "PROVIDER_API_KEY": "sk_test_cluster",
                "PROVIDER_WEBHOOK_SECRET": webhook_secret, "SECRET_KEY": "cluster secret key",
                "PROVIDER_PLANS": json.dumps({**{price: plan for plan, price in self.prices.items()},
                                              **{price: plan for plan, price in self.metered.items()}}),
                "MAIL_SERVER": smtp[0], "MAIL_PORT": str(smtp[1]),
                "NOTIFY_WEBHOOK_URL": f"http://{receiver[0]}:{receiver[1]}/hooks/subscriptions",
                "NOTIFY_WEBHOOK_SECRET": NOTIFY_SECRET, "NOTIFY_RETRY_DELAY": "1",
                "AUTH_LOGIN_RATE_LIMIT": f"{self.login_limit} per minute",
                "PROVIDER_CALLS_RATE_LIMIT": f"{self.calls_limit} per minute",
                "AUTH_REGISTER_RATE_LIMIT": "1000 per hour", "ORGANIZATION_INVITATION_RATE_LIMIT": "1000 per day",
                "PASSWORD_HASH_TIME_COST": "1", "PASSWORD_HASH_MEMORY_COST": "8192"}

    def stop(self):
        for host in getattr(self, "hosts", []):
            host.stop()
        for part in ("balancer", "network"):
            if hasattr(self, part):
                getattr(self, part).stop()
        if hasattr(self, "emulator"):
            self.emulator.terminate()
            self.emulator.wait(10)
        for part in ("smtp", "receiver", "redis"):
            if hasattr(self, part):
                getattr(self, part).stop()
        if hasattr(self, "db"):
            self.db.drop()

    # -- the emulator's delivery log, kept whole (the emulator keeps the last 1,000 entries) ---
    def poll_deliveries(self):
        state = self.remote._call("GET", "delivery")
        with self.lock:
            for entry in state["log"]:
                self.delivery_log[(entry["event"], entry["endpoint"], entry["attempt"])] = entry
        return state

    def _follow_deliveries(self, stop):
        while not stop.wait(1):
            try:
                self.poll_deliveries()
            except (OSError, http.client.HTTPException):
                # A busy emulator may reset the connection (seen once): the next poll reads what this one missed.
                continue


def _wait_http(url, seconds=30):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            requests.get(url, timeout=2)
            return
        except requests.RequestException:
            time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer in {seconds} s")
