"""Metered quotas (CONTRACT "Entitlements"): every unit a consume takes of a quota with a ``meter`` is reported to
that Billing Meter through the usage ledger, exactly once, so the app reports once and gets both the gate and
the bill; with ``overage`` the units past the limit are billed by the meter's price.

The meter event's identifier is derived from the consume's (``ent_c_``) or the reservation's (``ent_r_``), so
it never collides with a report to ``POST /usage/events`` (which refuses the ``ent_`` prefix) nor with each
other; one too long for Stripe's 100 characters is hashed (``ent_ch_``, ``ent_rh_``). Delivered by the usage
worker (``flask deliver-usage``) like every accepted report.
"""
import hashlib
import logging

from app.signals import quota_consumed
from app.usage import service as usage
from app.usage.schemas import RESERVED_PREFIX

log = logging.getLogger(__name__)
IDENTIFIER_MAX = 100


def meter_identifier(identifier, reservation=False):
    """The identifier of the meter event for the consume (or the reservation's settle) ``identifier``."""
    kind = "r" if reservation else "c"
    derived = f"{RESERVED_PREFIX}{kind}_{identifier}"
    if len(derived) <= IDENTIFIER_MAX:
        return derived
    return f"{RESERVED_PREFIX}{kind}h_{hashlib.sha256(identifier.encode()).hexdigest()}"


@quota_consumed.connect
def report_metered_units(sender, billable, feature, spec, amount, identifier, reservation=False, **extra):
    """Put the consumed ``amount`` of a metered quota in the usage ledger (in the consume's transaction).

    A billable without a Stripe customer has nothing to bill: logged, never dropped silently (a plan with a
    metered quota is one Stripe sells, so its billables have a customer).
    """
    if not spec or not spec.get("meter"):
        return
    if not billable.provider_id:
        log.warning("metered quota %s of %s %s has no Stripe customer to bill %d units", feature, billable.kind,
                    billable.id, amount)
        return
    usage.record(meter_identifier(identifier, reservation), spec["meter"], billable.provider_id, amount)
