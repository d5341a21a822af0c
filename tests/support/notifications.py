"""Where the notification tests send mail and webhooks, and notifications made without a billing event."""
from sqlalchemy import select

from app.extensions import db
from app.models import Notification, User
from app.notifications import notify
from tests.receivers import NOTIFY_SECRET

KINDS_DATA = {
    "subscribed": {"subscription": "sub_1", "from_status": "incomplete", "status": "active"},
    "cancellation_scheduled": {"subscription": "sub_1", "ends_at": 1798761600},
    "cancellation_withdrawn": {"subscription": "sub_1"},
    "plan_changed": {"subscription": "sub_1", "from": ["price_basic"], "to": ["price_pro"]},
    "subscription_ended": {"subscription": "sub_1"},
    "payment_failed": {"subscription": "sub_1", "invoice": "in_1", "attempt_count": 2,
                       "next_payment_attempt": 1798761600, "hosted_invoice_url": "https://pay.example/in_1"},
    "past_due": {"subscription": "sub_1", "from_status": "active", "status": "past_due"},
    "payment_recovered": {"subscription": "sub_1", "from_status": "past_due", "status": "active"},
    "trial_will_end": {"subscription": "sub_1", "trial_end": 1798761600},
    "card_expiring": {"subscription": "sub_1", "invoice": "in_2", "brand": "visa", "last4": "4242",
                      "exp_month": 1, "exp_year": 2027},
}


def mail_config(smtp_server, **extra):
    return {"MAIL_SERVER": "127.0.0.1", "MAIL_PORT": smtp_server.port, "MAIL_DEFAULT_SENDER": "billing@example.com",
            **extra}


def hook_config(http_receiver, **extra):
    return {"NOTIFY_WEBHOOK_URL": http_receiver.url, "NOTIFY_WEBHOOK_SECRET": NOTIFY_SECRET, **extra}


def add_notifications(app, kinds, email="ada@example.com"):
    """Notify one user of each of ``kinds`` (one event each), committed; return the notification ids."""
    with app.app_context():
        user = db.session.scalar(select(User).where(User.email == email))
        if user is None:
            user = User(email=email, password_hash="x", name="Ada")
            db.session.add(user)
            db.session.flush()
        for number, kind in enumerate(kinds):
            notify(user, f"evt_{email}_{kind}_{number}", kind, KINDS_DATA[kind])
        db.session.commit()
        return db.session.scalars(select(Notification.id).where(Notification.user_id == user.id)
                                  .order_by(Notification.id)).all()


def work(app, *args):
    result = app.test_cli_runner().invoke(args=["deliver-notifications", *args])
    return result
