"""The plan catalogue (CONTRACT "Selling": ``GET /plans``): read from Stripe, kept in the process.

The catalogue is what Stripe has: the active recurring prices that ``PROVIDER_PLANS`` names, with
their product. Each process keeps it for ``PROVIDER_CATALOG_TTL`` seconds, and as long as the
catalogue version in the database (``catalog_version``) is the one it was read at: a ``product.*``
or ``price.*`` webhook, handled by whichever worker or host, moves the version (``changed``) and
every process reads Stripe again on its next request. Stripe's webhooks can be late or lost, so
the TTL still bounds how old a catalogue may be. Nothing here computes money.
"""
import threading
import time

from flask import current_app
from sqlalchemy import bindparam, text

from app.billing.provider import get_provider
from app.extensions import db
from app.models.types import UTCDateTime
from app.timeutil import utcnow

# Core text, run on the session's connection: one indexed read per request, one upsert per webhook
# (no row until the first change; both databases speak ON CONFLICT, SQLite since 3.24).
_READ_VERSION = text("SELECT version FROM catalog_version WHERE id = 1")
_MOVE_VERSION = text(
    "INSERT INTO catalog_version (id, version, changed_at) VALUES (1, 1, :now) "
    "ON CONFLICT (id) DO UPDATE SET version = catalog_version.version + 1, changed_at = :now"
).bindparams(bindparam("now", type_=UTCDateTime()))


def changed():
    """Record that Stripe's catalogue changed: every process reads it again. The caller commits."""
    db.session.connection().execute(_MOVE_VERSION, {"now": utcnow()})


def _cache():
    # One per app: a test's apps, like a host's workers, each keep their own.
    return current_app.extensions.setdefault("catalog", {"lock": threading.Lock(), "entry": None})


def _fresh(entry, version):
    return (entry is not None and entry["version"] == version
            and time.monotonic() - entry["read_at"] < current_app.config["PROVIDER_CATALOG_TTL"])


def _entry():
    """The process's catalogue entry for the current version, read from Stripe when stale."""
    version = db.session.connection().scalar(_READ_VERSION) or 0
    cache = _cache()
    entry = cache["entry"]
    if not _fresh(entry, version):
        with cache["lock"]:
            entry = cache["entry"]
            if not _fresh(entry, version):
                plans_read, metered = _read()
                entry = cache["entry"] = {"version": version, "read_at": time.monotonic(), "plans": plans_read,
                                          "metered": metered}
    return entry


def rendered(render):
    """Return ``render(plans)``, computed once per catalogue read and kept with it: what every request
    would otherwise serialise and hash again (``GET /plans``'s body and ETag).

    ``plans`` is the catalogue, ``[Plan]`` (CONTRACT "Plan") in the order of ``PROVIDER_PLANS``: each
    ``{"plan", "price", "product", "name", "description", "unit_amount" (minor units), "currency",
    "interval", "interval_count", "trial_days"}``; ``trial_days`` is what a first subscription gets
    (``PROVIDER_TRIAL_DAYS``). Served from the process's copy while it is fresh, else read from
    Stripe by one thread while the others wait for it. Raises ``ProviderUnavailable`` (503) when
    Stripe cannot be read.
    """
    entry = _entry()
    if "rendered" not in entry:
        entry["rendered"] = render(_with_trial(entry["plans"]))
    return entry["rendered"]


def metered_prices():
    """The ids of the metered prices (``recurring.usage_type=metered``) ``PROVIDER_PLANS`` names that Stripe
    sells now: a plan's usage, added to its subscriptions beside its licensed price (CONTRACT "Usage-based
    billing"), never sold alone. Read with the catalogue."""
    return _entry()["metered"]


def _with_trial(found):
    trial_days = current_app.config["PROVIDER_TRIAL_DAYS"]
    return [{**plan, "trial_days": trial_days} for plan in found]


def _read():
    """``(plans, metered price ids)``: the configured plans Stripe sells now (an active recurring licensed
    price of an active product), and the configured metered prices among those sold."""
    live = {price["id"]: price for price in get_provider().list_recurring_prices()}
    found, metered = [], set()
    for price_id, plan in current_app.config["PROVIDER_PLANS"].items():
        price = live.get(price_id)
        product = (price or {}).get("product")
        if not isinstance(product, dict) or not product.get("active") or product.get("deleted"):
            continue  # not sold (any more): an unknown or archived price, or an archived product
        recurring = price.get("recurring") or {}
        if recurring.get("usage_type") == "metered":
            metered.add(price_id)
            continue
        found.append({"plan": plan, "price": price_id, "product": product.get("id"), "name": product.get("name"),
                      "description": product.get("description"), "unit_amount": price.get("unit_amount"),
                      "currency": price.get("currency"), "interval": recurring.get("interval"),
                      "interval_count": recurring.get("interval_count")})
    return found, frozenset(metered)
