"""What a notification says on each channel: an email from templates, a Standard Webhooks JSON body.

Templates live in ``app/notifications/templates``: ``<kind>.txt`` (a ``Subject:`` line, a blank
line, the plain-text body) and ``<kind>.html`` (the HTML body), one pair per CONTRACT kind and per
account email (``ACCOUNT_EMAILS``). They read the kind's ``data`` fields (README "Notifications"),
``user`` and ``plans`` (price id -> plan); an account email also ``link``, with a token minted as
the message is built, and ``ttl``, the token's lifetime in words.
"""
import json
from email.message import EmailMessage
from email.utils import format_datetime, parseaddr

from flask import current_app
from jinja2 import ChainableUndefined, Environment, PackageLoader, select_autoescape

from app import email_tokens
from app.notifications.kinds import ACCOUNT_EMAILS, APP_EVENTS, PERSONAL_NOTICES
from app.notifications.schemas import NotificationSchema
from app.timeutil import from_timestamp, isoformat_z

_templates = Environment(
    loader=PackageLoader("app.notifications"),
    autoescape=select_autoescape(["html"]),
    # A field a kind does not carry renders as nothing rather than failing every attempt.
    undefined=ChainableUndefined,
)
_templates.filters["date"] = lambda seconds: (
    from_timestamp(seconds).strftime("%d %B %Y, %H:%M UTC") if seconds else "")
_templates.filters["plan_name"] = lambda price, plans: plans.get(price, price)

# Stripe's minor units per currency where they are not hundredths
# (https://docs.stripe.com/currencies#zero-decimal, #three-decimal): a receipt shows what Stripe
# charged, and 2900 JPY must not read as 29.00.
_EXPONENTS = {**dict.fromkeys(("bif", "clp", "djf", "gnf", "jpy", "kmf", "krw", "mga", "pyg", "rwf", "ugx",
                               "vnd", "vuv", "xaf", "xof", "xpf"), 0),
              **dict.fromkeys(("bhd", "jod", "kwd", "omr", "tnd"), 3)}


def _money(minor_units, currency):
    """``2900, "usd"`` -> ``"29.00 USD"``: Stripe's integer amount shown in major units, nothing computed."""
    if not isinstance(minor_units, int) or not currency:
        return ""
    exponent = _EXPONENTS.get(str(currency).lower(), 2)
    sign, digits = ("-" if minor_units < 0 else ""), str(abs(minor_units)).rjust(exponent + 1, "0")
    major = f"{digits[:-exponent]}.{digits[-exponent:]}" if exponent else digits
    return f"{sign}{major} {str(currency).upper()}"


_templates.filters["money"] = _money


def message_id(notification, sender):
    """Return the email ``Message-ID`` of ``notification``: the same on every attempt (RFC 5322 3.6.4)."""
    domain = parseaddr(sender)[1].rpartition("@")[2] or "localhost"
    return f"<notification.{notification.id}@{domain}>"


def _billing_of(notification):
    """The name of the organisation whose billing ``notification`` is about (its owner and admins each get
    one), or ``None``: a user's own, or a notice to one person about an organisation (``PERSONAL_NOTICES``)."""
    organization = (notification.data or {}).get("organization")
    if notification.kind in PERSONAL_NOTICES or not isinstance(organization, dict):
        return None
    return organization.get("name") or None


def email(notification, user, sender, plans, now):
    """Return the ``EmailMessage`` for ``notification`` to ``user``: plain text plus an HTML alternative."""
    context = {"user": user, "data": notification.data or {}, "notification": notification, "plans": plans,
               "billing_of": _billing_of(notification)}
    if notification.kind in ACCOUNT_EMAILS:
        context.update(_account_email(notification, user))
    head, _, text = _templates.get_template(f"{notification.kind}.txt").render(context).partition("\n\n")
    subject = head.removeprefix("Subject:").strip()
    if context["billing_of"] and context["billing_of"] not in subject:
        subject = f"{context['billing_of']}: {subject}"
    html = _templates.get_template(f"{notification.kind}.html").render(context, subject=subject)
    message = EmailMessage()
    message["Subject"] = subject
    message["From"] = sender
    message["To"] = context.get("to") or user.email
    message["Date"] = format_datetime(now)
    message["Message-ID"] = message_id(notification, sender)
    # An account email's link is one unbroken line in the raw message (quoted-printable would fold
    # it, and a token copied out of a mail file would be cut), wherever the text allows 7bit.
    cte = "7bit" if "link" in context and (text + html).isascii() else None
    message.set_content(text, cte=cte)
    message.add_alternative(html, subtype="html", cte=cte)
    return message


def _duration(minutes):
    return f"{minutes // 60} hours" if minutes % 60 == 0 and minutes > 60 else f"{minutes} minutes"


def _account_email(notification, user):
    """Return the template context of an account email: ``link`` (a token minted now), ``ttl`` (its
    lifetime in words) and ``to``: the new address for an email change, else ``None`` (``user.email``)."""
    data = notification.data or {}
    ttl = current_app.config[_TTLS.get(notification.kind, "AUTH_VERIFY_EMAIL_TTL")]
    return {"link": email_tokens.link(notification, user), "ttl": _duration(ttl),
            "to": data.get("email") if notification.kind in ("email_change", "invitation") else None}


# The lifetime of each account email's link, where it is not AUTH_VERIFY_EMAIL_TTL's.
_TTLS = {"password_reset": "AUTH_PASSWORD_RESET_TTL", "invitation": "ORGANIZATION_INVITATION_TTL"}


def webhook_id(notification):
    """Return the Standard Webhooks ``webhook-id``: the notification's id, the same on every attempt."""
    return str(notification.id)


def webhook_body(notification, user):
    """Return the JSON text POSTed to the client app (CONTRACT "Additions": notification kinds).

    ``{"type": kind, "timestamp": created_at (ISO 8601 UTC), "data": {"notification": Notification,
    "user": {"id", "email"}}}``; the same bytes on every attempt. An ``APP_EVENTS`` kind carries its own data
    (``{"type", "timestamp", "data"}``): it is about a billable, not a notice to the user holding the row.
    """
    if notification.kind in APP_EVENTS:
        return json.dumps({"type": notification.kind, "timestamp": isoformat_z(notification.created_at),
                           "data": notification.data}, separators=(",", ":"))
    return json.dumps({
        "type": notification.kind,
        "timestamp": isoformat_z(notification.created_at),
        "data": {"notification": NotificationSchema().dump(notification), "user": {"id": user.id, "email": user.email}},
    }, separators=(",", ":"))
