"""``CommitSchedule``: a subscription's Stripe schedule written, and its notifications decided (CONTRACT "Plan
changes at the period's end").

The row's ``scheduled_change`` comes from the schedule as Stripe has it now (``app.billing.schedules.follow``: one
read), so that events delivered late, shuffled or twice converge on Stripe's state. Notifications come only from the
event's payload (its object and ``previous_attributes``), so a replay decides the same: ``plan_change_scheduled``
when the next phase's change is new, ``plan_change_withdrawn`` when a release or an update drops one before it starts.
When the phase starts, ``customer.subscription.updated`` carries the new items: ``CommitPlan`` recomputes the plan and
sends ``plan_changed``, as for any swap.
"""
from app.billing import objects, schedules, state
from app.billing.events import COMMIT_SCHEDULE, handled_by
from app.billing.provider import get_provider
from app.notifications import notify
from app.signals import webhook_handled

EVENT_TYPES = handled_by(COMMIT_SCHEDULE)


def _subscription_id(schedule):
    return objects.ref_id(schedule.get("subscription")) or objects.ref_id(schedule.get("released_subscription"))


def _change(phases, current, event):
    """The next phase's change of ``phases`` from the phase running at ``current`` (or at the event's time)."""
    start = (current or {}).get("start_date") if isinstance(current, dict) else None
    return schedules.next_change(phases, start if start is not None else event["created"])


def _released(event, now):
    # Released before the next phase started: the change will not happen (a completed schedule has none left).
    return [("plan_change_withdrawn", {"price": now["price"]})] if now and now["at"] > event["created"] else []


def _created(event, now):
    return [("plan_change_scheduled", now)] if now else []


def _updated(event, now):
    previous = event["data"].get("previous_attributes") or {}
    if "phases" not in previous:
        return []  # a phase started, or only metadata changed: nothing new is scheduled
    before = _change(previous["phases"], previous.get("current_phase", event["data"]["object"].get("current_phase")),
                     event)
    if now and (before is None or (before["price"], before["at"]) != (now["price"], now["at"])):
        return [("plan_change_scheduled", now)]
    if before and not now:
        return [("plan_change_withdrawn", {"price": before["price"]})]
    return []


# Event type -> its decision (STYLE rule 8); the other schedule events decide nothing.
DECIDERS = {"subscription_schedule.created": _created, "subscription_schedule.updated": _updated,
            "subscription_schedule.released": _released}


def decide(event):
    """Return the ``[(kind, data)]`` a ``subscription_schedule.*`` event calls for, at most one."""
    decider = DECIDERS.get(event["type"])
    if decider is None:
        return []
    obj = event["data"]["object"]
    found = decider(event, _change(obj.get("phases"), obj.get("current_phase"), event))
    return [(kind, {"subscription": _subscription_id(obj), **data}) for kind, data in found]


@webhook_handled.connect
def commit_schedule(sender, event, **extra):
    """Write the schedule's subscription row's ``scheduled_change`` and store the event's notifications.

    Acts on the types ``app.billing.events`` names for it and returns ``True`` when it did (a schedule of a
    subscription not stored here is acknowledged: nothing to write).
    """
    if event["type"] not in EVENT_TYPES:
        return False
    schedule = event["data"]["object"]
    billable = extra.get("billable") or state.billable_for_customer(objects.customer_id_of(schedule))
    if billable is None:
        return False
    row = state.subscription_of(billable, _subscription_id(schedule))
    if row is None:
        return True
    schedules.follow(get_provider(), row, schedule)
    for kind, data in decide(event):
        notify(billable, event["id"], kind, data)
    return True
