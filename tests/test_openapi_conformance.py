"""schemathesis with every check against ``/openapi.json``: the document describes what the service does.

tests/reliability/test_bad_input.py fuzzes more examples with the response checks; this runs every
check schemathesis has (positive and negative data included) on a few examples per operation.
"""
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import CHECKS, load_all_checks

from tests.depth import budget
from tests.support.accounts import fresh_token

load_all_checks()
ALL_CHECKS = [CHECKS.get_one(name) for name in CHECKS.get_all_names()]
# What the document cannot express (docs/api.md "OpenAPI document"), check -> operations it is left out for:
# a schema-valid webhook body carries no valid Stripe signature (400); marshmallow checks an email
# address more strictly than OpenAPI's format "email" (a one-letter top-level domain is a 422); the
# prices offered are configuration (PROVIDER_PLANS), so another one is 422 unknown_price; an
# Idempotency-Key the user already sent with another request is 422 idempotency_key_reused, and the
# generated keys repeat across operations; an invoice cursor must name one of the user's invoices
# (422); a verification or reset token must be one the service signed (400 invalid_token); OpenAPI
# 3.0 cannot forbid unknown query parameters, which the paged lists ignore; the hosts a Checkout may
# return to are configuration (CHECKOUT_ALLOWED_HOSTS), others are 422; and Stripe checks a tax id's
# type and the format of its value (422 invalid_tax_id). An organisation's billing endpoints are the
# user's again, with the same exceptions; an organisations cursor must name one of the caller's (422),
# and an invitation token must be one the service signed (400 invalid_token). A generated query of
# many repeated values for an organisation's usage, or of repeated promotion codes for a swap
# preview, goes past the URI length the service takes (414, which schemathesis does not count as a
# refusal).
KEYED = {"/subscription/portal", "/subscription/swap", "/subscription/cancel", "/subscription/resume",
         "/subscription/quantity", "/subscription/payment-method", "/subscription/checkout",
         "/subscription/scheduled-change"}
ACCEPTED_WHEN_VALID = {"/subscription/intent", "/subscription/swap/preview", "/subscription/invoices",
                       "/subscription/tax-ids"} | KEYED
ORGANIZATION = "/organizations/{organization_id}"
NOT_EXPRESSIBLE = {
    "positive_data_acceptance": {"/provider/webhook", "/auth/register", "/auth/login", "/auth/email/verify",
                                 "/auth/password/reset", "/organizations", "/organizations/invitations/accept"}
                                | ACCEPTED_WHEN_VALID | {ORGANIZATION + path for path in ACCEPTED_WHEN_VALID},
    "negative_data_rejection": {"/notifications", "/auth/tokens", "/subscription/invoices", "/organizations",
                                ORGANIZATION + "/members", ORGANIZATION + "/subscription/invoices",
                                "/usage", ORGANIZATION + "/usage",
                                "/subscription/swap/preview", ORGANIZATION + "/subscription/swap/preview"},
}

# A few examples per operation, the same ones every run; more in the deep run.
EXAMPLES = settings(max_examples=budget(quick=3, deep=50), deadline=None, derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck))


def excluded_for(case):
    return [CHECKS.get_one(name) for name, paths in NOT_EXPRESSIBLE.items() if case.operation.path in paths]


@pytest.fixture
def api_schema(fuzzed_app):
    loaded = schemathesis.openapi.from_wsgi("/openapi.json", fuzzed_app)
    # The coverage phase tries every boundary of every field, minutes per run; the generated
    # examples (positive and negative) are bounded by max_examples below.
    loaded.config.phases.coverage.enabled = False
    return loaded


schema = schemathesis.pytest.from_fixture("api_schema")


@schema.parametrize()
@EXAMPLES
def test_every_schemathesis_check_passes(case):
    case.call_and_validate(checks=ALL_CHECKS, excluded_checks=excluded_for(case))


@schema.parametrize()
@EXAMPLES
def test_every_schemathesis_check_passes_with_a_valid_token(case, fuzzed_app):
    case.call_and_validate(headers={"Authorization": f"Bearer {fresh_token(fuzzed_app)}"}, checks=ALL_CHECKS,
                           excluded_checks=excluded_for(case))
