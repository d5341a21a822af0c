"""A subscription's Stripe subscription schedule, read and stored (CONTRACT "Plan changes at the period's end").

The row's ``scheduled_change`` is written only from a schedule as Stripe returns it (a change's answer, the
live read a ``subscription_schedule.*`` webhook makes, ``sync``), never from a request's body:
``{"schedule", "ours", "price", "quantity", "at"}``, where ``price``, ``quantity`` (seats) and ``at`` (Unix
seconds, the next phase's start) are null while no later phase changes the plan. Phases are Stripe's
(https://docs.stripe.com/api/subscription_schedules/object#subscription_schedule_object-phases). Nothing here commits.
"""
from sqlalchemy import bindparam, update
from sqlalchemy.orm.attributes import set_committed_value

from app.billing import objects
from app.extensions import db
from app.models import Subscription

# How the service marks the schedules it makes: only these are changed or released here.
MANAGED_BY = {"managed_by": "subscription-service"}
# A schedule still acting on its subscription (https://docs.stripe.com/billing/subscriptions/subscription-schedules).
RUNNING = ("not_started", "active")

_WRITE = (update(Subscription.__table__).where(Subscription.__table__.c.id == bindparam("row_id"))
          .values(scheduled_change=bindparam("change", type_=Subscription.__table__.c.scheduled_change.type)))


def is_ours(schedule):
    """Whether the service made ``schedule`` (its ``metadata[managed_by]``)."""
    return (schedule.get("metadata") or {}).get("managed_by") == MANAGED_BY["managed_by"]


def licensed(phase_items):
    """A phase's items that carry the plan and its seats: those with a quantity (a metered one has none)."""
    return [item for item in phase_items or () if item.get("quantity") is not None]


def current_phase(phases, current_start):
    """The index of the phase running at ``current_start`` (Unix seconds) in ``phases``, or ``None``."""
    started = [i for i, phase in enumerate(phases) if phase.get("start_date") is not None
               and phase["start_date"] <= current_start]
    return max(started, key=lambda i: phases[i]["start_date"]) if started else None


def next_change(phases, current_start):
    """``{"price", "quantity", "at"}`` of the phase after the one running at ``current_start`` when it changes the
    plan's price or seats, else ``None``."""
    phases = [phase for phase in phases or () if isinstance(phase, dict)]
    index = current_phase(phases, current_start)
    if index is None or index + 1 >= len(phases):
        return None
    now_on, then = licensed(phases[index].get("items")), licensed(phases[index + 1].get("items"))
    if not then:
        return None
    change = {"price": objects.ref_id(then[0].get("price")), "quantity": then[0].get("quantity"),
              "at": phases[index + 1].get("start_date")}
    if now_on and (objects.ref_id(now_on[0].get("price")), now_on[0].get("quantity")) == (change["price"],
                                                                                         change["quantity"]):
        return None
    return change


def stored_of(schedule):
    """The ``scheduled_change`` value of a running ``schedule`` as Stripe returned it (see the module)."""
    start = (schedule.get("current_phase") or {}).get("start_date")
    change = next_change(schedule.get("phases"), start) if start is not None else None
    return {"schedule": schedule["id"], "ours": is_ours(schedule),
            **(change or {"price": None, "quantity": None, "at": None})}


def write(row, schedule):
    """Store ``schedule`` (a dict as Stripe returned it, or ``None``: no schedule) as ``row``'s ``scheduled_change``."""
    value = stored_of(schedule) if schedule is not None and schedule.get("status") in RUNNING else None
    if row.scheduled_change == value:
        return
    db.session.connection().execute(_WRITE, {"row_id": row.id, "change": value})
    set_committed_value(row, "scheduled_change", value)


def follow(provider, row, schedule):
    """Write what Stripe says of ``row``'s schedule now, from an event's ``schedule`` (any status).

    The live schedule is read (one call): a running one of this subscription is stored; one that ended is
    cleared only if it is the one stored, so that an old schedule's late event never clears a newer one's
    change. Converges whatever the order and the repeats of the events.
    """
    live = provider.retrieve_subscription_schedule(schedule["id"])
    if live.get("status") in RUNNING and objects.ref_id(live.get("subscription")) == row.provider_id:
        write(row, live)
    elif (row.scheduled_change or {}).get("schedule") == live["id"]:
        write(row, None)


def refresh(provider, row, live_subscription):
    """Write ``row``'s schedule from its live subscription (``sync``): read when it names one, else cleared. ``row``
    ``None`` (the subscription is another billable's: not written) is left alone."""
    if row is None:
        return
    schedule_id = objects.ref_id(live_subscription.get("schedule"))
    write(row, provider.retrieve_subscription_schedule(schedule_id) if schedule_id else None)
