"""The provider's refusals and outages land in the error tree; a refused card promotion is not fatal."""
import logging
from types import SimpleNamespace

import pytest

from app.billing import payment_methods
from app.billing.stripe_provider import StripeProvider
from app.errors import ProviderRejected, ProviderUnavailable, UnknownPrice

VISA = {"id": "pm_current", "type": "card", "card": {"brand": "visa", "last4": "4242"}}


@pytest.fixture
def provider(emulator):
    emulator.reset()
    return StripeProvider(api_key="sk_test_emulator", api_base=emulator.url, max_network_retries=0)


def test_a_refused_request_is_provider_rejected_naming_only_the_providers_code(provider):
    with pytest.raises(ProviderRejected) as caught:
        provider.retrieve_customer("cus_forgotten")
    assert caught.value.status == 502 and caught.value.code == "provider_rejected"
    assert caught.value.details == {"provider_code": "resource_missing"}
    assert "cus_forgotten" not in caught.value.message


def test_a_missing_payment_method_is_none_and_a_refused_price_is_unknown_price(provider):
    assert provider.retrieve_payment_method("pm_forgotten") is None
    customer = provider.create_customer("ada@example.com", "Ada", {"user_id": "1"}, "customer-1")
    with pytest.raises(UnknownPrice):
        provider.create_subscription(customer, "price_forgotten", "subscription-1-0-price_forgotten")


@pytest.mark.parametrize("status, said", [
    (500, "The payment provider failed with an error (HTTP 500); try again shortly."),
    (429, "The payment provider is limiting this service's requests; try again shortly."),
])
def test_a_provider_error_says_what_happened(provider, emulator, status, said):
    emulator.add_fault("/v1/customers", status=status)
    with pytest.raises(ProviderUnavailable) as caught:
        provider.retrieve_customer("cus_any")
    assert caught.value.status == 503 and caught.value.message == said


def test_a_refused_api_key_is_named(emulator):
    provider = StripeProvider(api_key="pk_live_wrong_kind", api_base=emulator.url, max_network_retries=0)
    with pytest.raises(ProviderUnavailable) as caught:
        provider.retrieve_customer("cus_any")
    assert caught.value.message == "The payment provider refused this service's API key (PROVIDER_API_KEY)."


class _RefusingProvider:
    """Knows the customer's default card, fails to make another one the default."""

    def __init__(self, error):
        self.error = error

    def retrieve_customer(self, customer_id):
        return {"id": customer_id, "invoice_settings": {"default_payment_method": VISA}}

    def set_default_payment_method(self, customer_id, payment_method_id):
        raise self.error

    def retrieve_payment_method(self, payment_method_id):
        raise AssertionError("a method that was not promoted is not mirrored")


def _user():
    return SimpleNamespace(provider_id="cus_1", pm_type=None, pm_last_four=None)


def test_a_refused_promotion_mirrors_the_customers_current_card(caplog):
    user = _user()
    refused = ProviderRejected.for_call("set default payment method", "resource_missing")
    with caplog.at_level(logging.WARNING, logger="app.billing.payment_methods"):
        assert payment_methods.promote(_RefusingProvider(refused), user, "pm_detached") is False
    assert (user.pm_type, user.pm_last_four) == ("visa", "4242")
    assert any("pm_detached" in record.getMessage() for record in caplog.records)


def test_an_outage_during_promotion_propagates_so_the_webhook_is_retried():
    user = _user()
    with pytest.raises(ProviderUnavailable):
        payment_methods.promote(_RefusingProvider(ProviderUnavailable()), user, "pm_new")
    assert user.pm_type is None
