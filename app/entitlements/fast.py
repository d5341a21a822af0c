"""A consume in one round trip on PostgreSQL (issue 44): the key, the billable's freshness, the take and the claim in
one statement, in autocommit.

A worker keeps a copy of each service key and billable its last full request read (``remember_key``,
``remember_billable``; at most ``CAPACITY`` billables, the oldest forgotten first). The statement acts only if the
copies are still the database's: the key's digest matches and it is not revoked, the billable exists and its
``entitlement_versions`` row (a new random value from triggers on every write to its subscriptions, overrides
and Stripe features, and on its deletion: migration 0024) is the one read with the copy, and the identifier is
new. Time-bound rules (the grace period, a trial's end, the period) are applied at each request to the copy, as
``app.entitlements.features`` applies them to the rows. So an answer is never staler than the slow path's.

Only what nothing else would act on goes this way: a quota, not metered, without an active override or held
reservations, whose units fit and cross no alert threshold, with no ``quota_consumed`` receiver but the two
that then do nothing. Anything else, and any statement that took nothing, returns ``None``: the full path runs
(``views.check``), with its errors, refusals and repeats, and refreshes the copies. SQLite always takes it.
"""
import hmac
import json
from collections import OrderedDict

from flask import current_app, request
from marshmallow import ValidationError
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError

from app.entitlements.alerts import alert_thresholds
from app.entitlements.features import entitled
from app.entitlements.ledger import TIMESTAMPS
from app.entitlements.metering import report_metered_units
from app.entitlements.schemas import CheckSchema
from app.entitlements.service import answer_of, limit_of
from app.entitlements.summary import periodic, quota_of
from app.extensions import db
from app.signals import quota_consumed
from app.usage.keys import LAST_USED_RESOLUTION, PREFIX, digest, split

CAPACITY = 10_000
_SCHEMA = CheckSchema()
_QUIET = {id(alert_thresholds), id(report_metered_units)}
# ``fresh`` is one row when every copy holds; the take's update adds its own conditions to the ledger's (no held
# units: the answer needs no returned holds; no threshold ``u`` with used < u <= used + n); the claim inserts the
# identifier with the answer, ``used`` and ``remaining`` from the take (as ``summary.quota_of``). A concurrent
# claim of the same identifier fails the statement, which then took nothing.
_CONSUME = """WITH fresh AS (
  SELECT 1 FROM service_keys WHERE id = :key_id AND token = :digest AND revoked_at IS NULL
   AND EXISTS (SELECT 1 FROM {table} WHERE id = :ref)
   AND (SELECT version FROM entitlement_versions WHERE billable = :billable)
       IS NOT DISTINCT FROM CAST(:version AS bigint)
   AND NOT EXISTS (SELECT 1 FROM entitlement_consumes WHERE identifier = :identifier)
), take AS (
  INSERT INTO entitlement_balances (billable, user_id, organization_id, feature, period, reset_at, used, reserved,
                                    created_at, updated_at)
  SELECT :billable, :user_id, :organization_id, :feature, :period, :reset_at, :amount, 0, :now, :now FROM fresh
  ON CONFLICT (billable, feature, period) DO UPDATE SET used = entitlement_balances.used + :amount, updated_at = :now
  WHERE entitlement_balances.reserved = 0
    AND (CAST(:limit AS bigint) IS NULL OR entitlement_balances.used + :amount <= :limit)
    AND NOT EXISTS (SELECT 1 FROM unnest(CAST(:thresholds AS bigint[])) AS t(units)
                    WHERE entitlement_balances.used < t.units AND entitlement_balances.used + :amount >= t.units)
  RETURNING id, used
), claim AS (
  INSERT INTO entitlement_consumes (billable, user_id, organization_id, identifier, feature, required, consumed,
                                    balance_id, answer, created_at)
  SELECT :billable, :user_id, :organization_id, :identifier, :feature, :amount, :amount, take.id,
         CAST(CAST(:answer AS jsonb) || jsonb_build_object('used', take.used, 'remaining', CASE
           WHEN CAST(:shown_limit AS bigint) IS NULL THEN NULL ELSE GREATEST(0, :shown_limit - take.used) END) AS json),
         :now
  FROM take RETURNING balance_id
)
SELECT take.id, take.used FROM take JOIN claim ON claim.balance_id = take.id"""
_STATEMENTS = {kind: text(_CONSUME.format(table=table)).bindparams(*TIMESTAMPS)
               for kind, table in (("user", "users"), ("organization", "organizations"))}


def _copies():
    """This app's copies: ``{"keys": {id: (digest, abilities, used_at)}, "billables": {(kind, ref): snapshot}}``."""
    return current_app.extensions.setdefault("entitlements_copies", {"keys": {}, "billables": OrderedDict()})


def enabled():
    """Whether consumes may take this path: on PostgreSQL, with only the known receivers of ``quota_consumed``."""
    return db.engine.dialect.name == "postgresql" and set(quota_consumed.receivers) <= _QUIET


def remember_key(key, used_at):
    """Keep the service key row ``key`` (``app.usage.keys.authenticate``'s) as last used at ``used_at``."""
    if enabled():
        _copies()["keys"][key.id] = (key.token, tuple(key.abilities), used_at)


def remember_billable(kind, ref, snapshot):
    """Keep ``snapshot`` (``reads.billable_snapshot``'s, with its ``version``) as the copy of ``kind``'s ``ref``."""
    if not enabled():
        return
    billables = _copies()["billables"]
    billables[(kind, ref)] = snapshot
    billables.move_to_end((kind, ref))
    while len(billables) > CAPACITY:
        billables.popitem(last=False)


def _key(now, ability):
    """``(key id, digest)`` of the request's bearer service key when this worker's copy of it holds ``ability`` and
    is good for ``now``, else ``None``."""
    scheme, _, credential = request.headers.get("Authorization", "").strip().partition(" ")
    parts = split(credential.strip()) if scheme.lower() == "bearer" else None
    copy = parts and _copies()["keys"].get(parts[0])
    if not copy or not parts[1].startswith(PREFIX) or ability not in copy[1] or now - copy[2] >= LAST_USED_RESOLUTION:
        return None  # the full path touches ``last_used_at`` once a minute
    return (parts[0], copy[0]) if hmac.compare_digest(copy[0], digest(parts[1])) else None


def _body():
    try:
        body = _SCHEMA.load(request.get_json(silent=True) or {})
    except ValidationError:
        return None
    return body if body["consume"] else None


def _plan(snapshot, body, now):
    """``(state, spec)`` of the body's feature when this path may take it, else ``None``."""
    if snapshot.overridden:
        return None
    state = entitled(snapshot, now)
    spec = state.features.get(body["feature"])
    if spec is None or spec["type"] != "quota" or spec.get("meter"):
        return None
    spec, limit = periodic(state, spec, now), limit_of(spec)
    if limit is not None and body["required"] > limit:
        return None
    return state, spec


def _thresholds(spec):
    """The units at which each alert threshold is reached: ``alerts.crossed``'s ``before * 100 < p * limit <=
    after * 100`` is ``before < u <= after`` for ``u = ceil(p * limit / 100)``."""
    shown = spec["limit"]
    if not shown:
        return []
    return [(percent * shown + 99) // 100 for percent in current_app.config["ENTITLEMENT_ALERT_THRESHOLDS"]]


def consume(now, ability):
    """The answer of the request's consume taken in one statement by a service key holding ``ability``, or ``None``
    when the full path must run (nothing was taken). Raises ``SQLAlchemyError`` but for a concurrent claim of the
    same identifier."""
    found, body = _key(now, ability), _body()
    if found is None or body is None:
        return None
    kind, ref = next(iter(body["customer"].items()))
    snapshot = _copies()["billables"].get((kind, ref))
    planned = snapshot and _plan(snapshot, body, now)
    if not planned:
        return None
    (state, spec), amount, thresholds = planned, body["required"], _thresholds(planned[1])
    if any(units <= amount for units in thresholds):
        return None  # a new period's balance would cross one: the full path sends the alert
    template = answer_of(state, body["feature"], True, amount, quota_of(spec, 0, 0))
    params = {"key_id": found[0], "digest": found[1], "ref": ref, "billable": snapshot.billable_key,
              "user_id": ref if kind == "user" else None, "organization_id": ref if kind == "organization" else None,
              "version": snapshot.version, "identifier": body["identifier"], "feature": body["feature"],
              "period": spec["period"], "reset_at": spec["reset_at"], "amount": amount, "limit": limit_of(spec),
              "shown_limit": spec["limit"], "thresholds": thresholds, "answer": json.dumps(template), "now": now}
    try:
        with db.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            taken = connection.execute(_STATEMENTS[kind], params).first()
    except IntegrityError:
        return None  # the same identifier claimed at the same moment: the full path answers the first answer
    if taken is None:
        return None
    return answer_of(state, body["feature"], True, amount, quota_of(spec, taken.used, 0))
