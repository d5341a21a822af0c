"""The models, importable from one place so Alembic sees every table."""
from app.models.account import AddressHistory, DeletedSubscriber, PasswordResetRequest
from app.models.catalog import CatalogVersion
from app.models.delivery import NotificationDelivery
from app.models.entitlement import (
    EntitlementBalance,
    EntitlementConsume,
    EntitlementOverride,
    EntitlementReservation,
    EntitlementVersion,
)
from app.models.idempotency import IdempotencyKey
from app.models.organization import Invitation, Membership, Organization
from app.models.seat import SeatChange
from app.models.stripe_entitlement import StripeEntitlementSummary
from app.models.subscription import (
    PromotionRedemption,
    ProrationQuote,
    Subscription,
    SubscriptionItem,
    TrialFingerprint,
    TrialRedeemer,
)
from app.models.token import AccessToken, RotatedToken
from app.models.usage import ServiceKey, UsageEvent
from app.models.user import User
from app.models.webhook import FailedWebhookEvent, Notification, WebhookEvent

# Every billable model (``models.billable``), in the order a customer id is looked up: a user's customer (the
# common case) first. The one place a kind is added: webhooks, ``sync``, ``flask reconcile`` and ``flask
# sync-user --all`` go through it, each kind by its own selectors (``by_customer``, ``by_id``, ``with_customer``).
BILLABLE_KINDS = (User, Organization)

__all__ = ["BILLABLE_KINDS", "AccessToken", "AddressHistory", "CatalogVersion", "DeletedSubscriber",
           "EntitlementBalance", "EntitlementConsume", "EntitlementOverride", "EntitlementReservation",
           "EntitlementVersion", "FailedWebhookEvent",
           "IdempotencyKey", "Invitation", "Membership", "Notification", "NotificationDelivery", "Organization",
           "PasswordResetRequest", "PromotionRedemption", "ProrationQuote", "RotatedToken", "SeatChange", "ServiceKey",
           "StripeEntitlementSummary",
           "Subscription", "SubscriptionItem", "TrialFingerprint", "TrialRedeemer", "UsageEvent", "User",
           "WebhookEvent"]
