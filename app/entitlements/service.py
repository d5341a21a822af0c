"""Answers of the entitlement endpoints (CONTRACT "Entitlements"): check and consume, reservations (the features
shown are ``summary``'s).

Everything is read from and written to the database in the caller's transaction (the view commits);
no Stripe call. A consume is exactly once by its ``identifier``: its row, with the answer, is inserted
after the take (``INSERT ... ON CONFLICT (identifier) DO NOTHING``; on PostgreSQL a concurrent insert
of the same identifier waits for the first transaction); when the identifier was there, ``check``
rolls the transaction back, the take with it (the one place a function here ends a transaction), and
returns the first answer stored. After units are taken, ``signals.quota_consumed`` is sent inside the
transaction: the seam where metering, alerts and metrics hook in.
"""
from flask import current_app

from app.entitlements import ledger
from app.entitlements.errors import InvalidUnits, QuotaExceeded, ReservationClosed, ReservationNotFound
from app.entitlements.features import entitled
from app.entitlements.reads import billable_snapshot
from app.entitlements.summary import periodic, present, quota, quota_of
from app.errors import NotFound
from app.extensions import db
from app.idempotency import IdempotencyKeyReused
from app.models import User
from app.models.entitlement import RELEASED, SETTLED, EntitlementConsume, EntitlementReservation
from app.organizations.access import organization_by_id
from app.signals import quota_consumed
from app.timeutil import isoformat_z


def billable_of(customer):
    """The ``User`` or ``Organization`` of ``{"user": id}`` / ``{"organization": "<id>"}``; raise ``NotFound``."""
    kind, ref = next(iter(customer.items()))
    found = db.session.get(User, ref) if kind == "user" else organization_by_id(ref)
    if found is None:
        raise NotFound(f"No such {kind}: {ref}.")
    return found


def snapshot_of(customer, now):
    """What the service-key endpoints act for: the ``BillableSnapshot`` of ``customer`` (as ``billable_of``
    takes it) at ``now``, read in one statement (``app.entitlements.reads``); raise ``NotFound``."""
    kind, ref = next(iter(customer.items()))
    found = billable_snapshot(kind, ref, now)
    if found is None:
        raise NotFound(f"No such {kind}: {ref}.")
    return found


def limit_of(spec):
    """The limit a consume must fit, ``None`` when any amount passes (unlimited, or overage)."""
    return None if spec["limit"] is None or spec["overage"] else spec["limit"]


def answer_of(state, name, allowed, consumed, feature):
    """A check's answer: ``feature`` (its Feature JSON) with ``allowed``, ``consumed`` and ``state``'s ``as_of``."""
    return {"allowed": allowed, "feature": name, "consumed": consumed, **feature, "as_of": isoformat_z(state.as_of)}


def _check(state, owner, name, spec, required, now):
    """The answer of a check that takes nothing."""
    if spec is None:  # a quota some other plan has (CONTRACT "Clarifications"): not allowed
        return answer_of(state, name, False, 0, {"type": "quota", "limit": 0, "used": 0, "reserved": 0,
                                               "remaining": 0, "reset_at": None, "overage": False, "source": "plan"})
    feature = present(state, owner, name, spec, now)
    if spec["type"] == "boolean":
        return answer_of(state, name, feature["enabled"], 0, feature)
    fits = feature["remaining"] is None or spec["overage"] or feature["remaining"] >= required
    return answer_of(state, name, fits, 0, feature)


def _first_answer(owner, name, required, identifier):
    """The answer the first consume of ``identifier`` gave; raise ``IdempotencyKeyReused`` when it was for another
    customer, feature or amount."""
    first = db.session.query(EntitlementConsume).filter_by(identifier=identifier).one()
    if (first.billable, first.feature, first.required) != (owner["billable"], name, required):
        raise IdempotencyKeyReused("This identifier was already used with another customer, feature or amount; "
                                   "send a new identifier for a new consume.")
    return first.answer


def _take(state, owner, name, spec, required, now):
    """Take ``required`` units of quota ``name`` if they fit; return ``(answer, spec, balance_id, used)``, ``spec``
    with its period."""
    spec = periodic(state, spec, now)
    balance_id, used, reserved, taken = ledger.take(owner, name, spec["period"], spec["reset_at"], required,
                                                    limit_of(spec), now)
    answer = answer_of(state, name, taken, required if taken else 0, quota_of(spec, used, reserved))
    return answer, spec, balance_id, used


def check(billable, name, required, consume, identifier, now):
    """``POST /entitlements/check``'s answer: whether ``required`` units of ``name`` are allowed, taking them
    with ``consume`` (exactly once by ``identifier``). Returns ``(answer, repeated)``: ``repeated`` when the
    identifier was consumed before (the first answer, nothing taken now; ``/metrics`` counts it apart).
    Raises ``UnknownFeature``, ``IdempotencyKeyReused`` (422).

    A boolean feature answers ``allowed`` = enabled and consumes nothing; a quota the plan lacks, ``False``.
    A consume is two statements after the billable's read: the take, then the claim of ``identifier`` with the
    answer. A claim that finds the identifier taken rolls the transaction back, the take with it, and answers
    the first answer: a repeat costs a rollback, a first consume no statement more.
    """
    state, owner = entitled(billable, now), ledger.owner_of(billable)
    spec = state.spec(name)
    if not consume:
        return _check(state, owner, name, spec, required, now), False
    if spec is None or spec["type"] == "boolean":
        answer, balance_id, used = _check(state, owner, name, spec, required, now), None, None
    else:
        answer, spec, balance_id, used = _take(state, owner, name, spec, required, now)
    if not ledger.claim(owner, name, required, identifier, answer["consumed"], balance_id, answer, now):
        db.session.rollback()
        return _first_answer(owner, name, required, identifier), True
    if answer["consumed"]:
        quota_consumed.send(current_app._get_current_object(), billable=billable, feature=name, spec=spec,
                            amount=required, identifier=identifier, balance_id=balance_id, used=used)
    return answer, False


def _present_reservation(reservation):
    return {"id": reservation.id, "amount": reservation.amount, "expires_at": isoformat_z(reservation.expires_at)}


def reserve(billable, name, amount, identifier, ttl, now):
    """Hold ``amount`` units of quota ``name`` for ``ttl`` seconds; return ``{"id", "amount", "expires_at"}``.

    The same ``identifier`` again returns the same reservation. Raises ``UnknownFeature``, ``InvalidUnits``,
    ``IdempotencyKeyReused`` (422) and ``QuotaExceeded`` (409), holding nothing.
    """
    state, owner = entitled(billable, now), ledger.owner_of(billable)
    spec = state.spec(name)
    if spec is not None and spec["type"] == "boolean":
        raise InvalidUnits.not_a_quota(name)
    first = db.session.query(EntitlementReservation).filter_by(identifier=identifier).first()
    if first is not None:
        if (first.billable, first.feature, first.amount) != (owner["billable"], name, amount):
            raise IdempotencyKeyReused("This identifier was already used for another reservation.")
        return _present_reservation(first)
    if spec is None:
        raise QuotaExceeded.asking(name, amount, 0)
    spec = periodic(state, spec, now)
    balance_id = ledger.ensure(owner, name, spec["period"], spec["reset_at"], now)
    reservation = ledger.reserve(owner, name, balance_id, amount, limit_of(spec), identifier, ttl, now)
    if reservation is None:
        raise QuotaExceeded.asking(name, amount, quota(spec, owner, name, now)["remaining"])
    return _present_reservation(reservation)


def _reservation(reservation_id):
    found = db.session.get(EntitlementReservation, reservation_id, populate_existing=True)
    if found is None:
        raise ReservationNotFound()
    return found


def _owner_billable(row, now):
    return snapshot_of({"user": row.user_id} if row.user_id is not None else {"organization": row.organization_id},
                       now)


def settle(reservation_id, amount, now):
    """Consume ``amount`` (0 to the amount held) of the reservation and return the rest; return
    ``{"id", "amount", "settled", "status"}``. Settling again with the same amount answers the same.

    Raises ``ReservationNotFound`` (404), ``InvalidUnits`` (422: more than held) and ``ReservationClosed``
    (409: released, expired, or settled with another amount).
    """
    reservation = _reservation(reservation_id)
    if amount > reservation.amount:
        raise InvalidUnits.more_than_held(amount, reservation.amount)
    closed = ledger.close(reservation_id, SETTLED, amount, now)
    reservation = _reservation(reservation_id)
    if not closed and (reservation.status, reservation.settled) != (SETTLED, amount):
        raise ReservationClosed.already(ledger.status_at(reservation, now))
    if closed and amount:
        billable = _owner_billable(reservation, now)
        quota_consumed.send(current_app._get_current_object(), billable=billable, feature=reservation.feature,
                            spec=entitled(billable, now).features.get(reservation.feature), amount=amount,
                            identifier=reservation.identifier, reservation=True, balance_id=reservation.balance_id,
                            used=closed.used)
    return {"id": reservation.id, "amount": reservation.amount, "settled": reservation.settled,
            "status": reservation.status}


def release(reservation_id, now):
    """Return every unit of the reservation (an expired one has returned itself, or does now). Raises
    ``ReservationNotFound`` (404) and ``ReservationClosed`` (409) for a settled one."""
    _reservation(reservation_id)
    if not ledger.close(reservation_id, RELEASED, None, now) and _reservation(reservation_id).status == SETTLED:
        raise ReservationClosed.already(SETTLED)
