"""``sync``: rebuild a user's billing state from the provider (SPEC 1, SPEC 4 "Synchronization entry point")."""
from dataclasses import dataclass

from app.billing import objects, payment_methods, plans, state
from app.extensions import db
from app.models.user import lock_user


@dataclass
class SyncResult:
    """What a sync changed for one user: ``before`` and ``after`` are ``describe(user)`` dicts."""

    user_id: int
    email: str
    before: dict
    after: dict

    @property
    def changed(self):
        return self.before != self.after

    def change_text(self):
        """Return ``"<before> -> <after>"`` for the command line, or ``"unchanged"``."""
        return f"{_state_text(self.before)} -> {_state_text(self.after)}" if self.changed else "unchanged"


def _state_text(described):
    subscriptions = ", ".join(f"{k}={v}" for k, v in described["subscriptions"].items()) or "no subscription"
    return f"plan={described['plan']} card={described['card'] or '-'} {subscriptions}"


def describe(user):
    """Return the user's billing state as a small dict: plan, each subscription's status, card."""
    card = f"{user.pm_type} {user.pm_last_four}" if user.pm_type else None
    return {
        "plan": plans.entitled_plan(user),
        "subscriptions": {s.provider_id: s.provider_status for s in user.subscriptions},
        "card": card,
    }


def sync_user(provider, user):
    """Pull every subscription of the user's customer and commit it as the webhook path would.

    The live state counts as "now", so webhooks older than it that arrive later change nothing.
    Local subscriptions the provider no longer has are deleted; then the same plan and payment
    method logic as the listeners runs. The caller commits. Raises ``ProviderUnavailable``.
    """
    lock_user(user)
    before = describe(user)
    if user.provider_id:
        live = provider.list_subscriptions(user.provider_id)
        as_of = state.live_as_of()
        for obj in live:
            state.apply_subscription(user, obj, as_of)
        live_ids = {obj["id"] for obj in live}
        for subscription in list(user.subscriptions):
            if subscription.provider_id not in live_ids:
                db.session.delete(subscription)
        db.session.flush()
        db.session.expire(user, ["subscriptions"])
        _sync_payment_method(provider, user, {obj["id"]: obj for obj in live})
    plans.recompute_plan(user)
    return SyncResult(user.id, user.email, before, describe(user))


def _sync_payment_method(provider, user, live_by_id):
    entitled = plans.entitled_subscription(user)
    paying = objects.ref_id(live_by_id[entitled.provider_id].get("default_payment_method")) if entitled else None
    if paying:
        payment_methods.promote(provider, user, paying)
    else:
        payment_methods.refresh_from_customer(provider, user, provider.retrieve_customer(user.provider_id))
