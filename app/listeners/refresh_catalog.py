"""``RefreshCatalog``: a ``product.*`` or ``price.*`` event makes every process read the catalogue again.

These events name no customer: the webhook controller hands them over with ``billable=None``
(``app.billing.events``: ``customer_bound=False``). See ``app.billing.catalog``.
"""
from app.billing import catalog
from app.billing.events import REFRESH_CATALOG, handled_by
from app.signals import webhook_handled

EVENT_TYPES = handled_by(REFRESH_CATALOG)


@webhook_handled.connect
def refresh_catalog(sender, event, **extra):
    """Move the catalogue version in the webhook's transaction; ``True`` when the type is one it acts on."""
    if event["type"] not in EVENT_TYPES:
        return False
    catalog.changed()
    return True
