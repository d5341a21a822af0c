"""The gauges ``GET /metrics`` reads from the database at each scrape (``app.signals.metrics_scraping``):
webhook failures still open and the age of the oldest usage event not yet delivered (README "Metrics")."""
from app.observability import metrics
from app.signals import metrics_scraping
from app.usage import delivery
from app.webhook import failures


@metrics_scraping.connect
def read_gauges(sender, **extra):
    """Set ``webhook_failed_events_open`` and ``usage_oldest_undelivered_age_seconds``; may raise
    ``SQLAlchemyError``."""
    metrics.set_failed_events_open(failures.count_open())
    metrics.set_usage_oldest_undelivered(delivery.oldest_undelivered_age())
