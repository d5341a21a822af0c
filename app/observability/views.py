"""``GET /metrics``: every metric in the Prometheus text format, when ``METRICS_ENABLED`` (CONTRACT "Additions")."""
import hmac

from flask import Response, current_app, request
from flask_smorest import Blueprint

from app.errors import NotFound, Unauthenticated
from app.observability import metrics

blp = Blueprint("observability", __name__, description="Prometheus metrics")


def _check_token(expected):
    scheme, _, presented = request.headers.get("Authorization", "").partition(" ")
    if not presented:
        raise Unauthenticated.missing_token()
    # Constant-time, so the comparison's duration tells a guesser nothing about the token.
    if scheme.lower() != "bearer" or not hmac.compare_digest(presented.strip().encode(), expected.encode()):
        raise Unauthenticated.invalid_token("the metrics token is not valid")


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
    body, content_type = metrics.exposition()
    return Response(body, content_type=content_type)
