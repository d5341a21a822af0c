"""``GET /metrics``: every metric in the Prometheus text format, when ``METRICS_ENABLED`` (CONTRACT "Additions")."""
import hmac
import logging

from flask import Response, current_app, request
from sqlalchemy.exc import SQLAlchemyError

from app.api import Blueprint
from app.errors import NotFound, Unauthenticated
from app.observability import metrics
from app.signals import metrics_scraping

log = logging.getLogger(__name__)

blp = Blueprint("observability", __name__, description="Prometheus metrics")


def _check_token(expected):
    scheme, _, presented = request.headers.get("Authorization", "").partition(" ")
    if not presented:
        raise Unauthenticated.missing_token()
    # Constant-time, so the comparison's duration tells a guesser nothing about the token.
    if scheme.lower() != "bearer" or not hmac.compare_digest(presented.strip().encode(), expected.encode()):
        raise Unauthenticated.invalid_token("the metrics token is not valid")


def _read_gauges():
    # Read at each scrape (the receivers of ``metrics-scraping``): a redelivery that succeeds resolves its
    # failure record in the webhook's own transaction, which does not touch the gauge. With the database
    # down the gauges keep their last value: metrics must answer most of all during an outage (README "Metrics").
    try:
        metrics_scraping.send(current_app._get_current_object())
    except SQLAlchemyError as exc:
        log.warning("webhook_failed_events_open not updated, the database did not answer: %s", type(exc).__name__)


@blp.route("/metrics", methods=["GET"])
@blp.doc(
    security=[{"metricsToken": []}],
    responses={"200": {"description": "Prometheus text exposition format",
                       "content": {"text/plain": {"schema": {"type": "string"}}}}},
)
@blp.alt_response(401, response="UNAUTHORIZED")
@blp.alt_response(404, response="NOT_FOUND")
def scrape():
    """Answer every metric of every process in the Prometheus text format.

    404 ``not_found`` unless ``METRICS_ENABLED``; when ``METRICS_TOKEN`` is set it must come as
    ``Authorization: Bearer <token>``, else 401 ``unauthenticated`` (RFC 6750 challenge).
    """
    config = current_app.config
    if not config["METRICS_ENABLED"]:
        raise NotFound("No endpoint matches this path.")
    if config["METRICS_TOKEN"]:
        _check_token(config["METRICS_TOKEN"])
    _read_gauges()
    body, content_type = metrics.exposition()
    return Response(body, content_type=content_type)
