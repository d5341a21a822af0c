"""The delivery channels, each off unless configured: email over SMTP, a signed POST to the client app.

A channel's ``opened()`` is a context manager holding one connection (an SMTP session, an HTTP
connection pool) for a batch; its ``send(notification, user, now)`` raises on any failure, which
the outbox counts as a failed attempt. ``check()`` is the worker's start-up probe; it raises
``ChannelUnusable`` with a one-line message naming the setting to fix.
"""
import smtplib
import ssl
from datetime import UTC

from standardwebhooks import Webhook

from app.notifications import messages

# Seconds one SMTP command or one HTTP request may take before the attempt counts as failed.
SEND_TIMEOUT = 10


class ChannelUnusable(RuntimeError):
    """A configured channel cannot work as set up; the message names the setting."""


class DeliveryFailed(RuntimeError):
    """The receiving end answered, but did not accept the notification."""


def configured_channel_names(config):
    """Return the names of the channels ``config`` turns on, in delivery order."""
    return [name for name, setting in (("email", "MAIL_SERVER"), ("webhook", "NOTIFY_WEBHOOK_URL"))
            if config.get(setting)]


def configured_channels(config):
    """Return ``{name: channel}`` for the channels ``config`` turns on."""
    kinds = {"email": EmailChannel, "webhook": WebhookChannel}
    return {name: kinds[name](config) for name in configured_channel_names(config)}


class EmailChannel:
    """Email over SMTP with the standard library (``MAIL_*`` settings), to the user's address."""

    name = "email"

    def __init__(self, config):
        self.host, self.port = config["MAIL_SERVER"], config["MAIL_PORT"]
        self.starttls, self.implicit_tls = config["MAIL_USE_TLS"], config["MAIL_USE_SSL"]
        self.username, self.password = config["MAIL_USERNAME"], config["MAIL_PASSWORD"]
        self.sender, self.plans = config["MAIL_DEFAULT_SENDER"], config["PROVIDER_PLANS"]

    def connect(self):
        """Return a logged-in ``smtplib.SMTP``; raise ``OSError`` or ``smtplib.SMTPException``."""
        if self.implicit_tls:
            smtp = smtplib.SMTP_SSL(self.host, self.port, timeout=SEND_TIMEOUT, context=ssl.create_default_context())
        else:
            smtp = smtplib.SMTP(self.host, self.port, timeout=SEND_TIMEOUT)
        try:
            if self.starttls:
                smtp.starttls(context=ssl.create_default_context())
            if self.username:
                smtp.login(self.username, self.password)
        except BaseException:
            smtp.close()
            raise
        return smtp

    def check(self):
        """Open and close one SMTP session; raise ``ChannelUnusable`` naming the setting at fault."""
        try:
            self.connect().quit()
        except smtplib.SMTPAuthenticationError as exc:
            raise ChannelUnusable(f"MAIL_USERNAME/MAIL_PASSWORD: the SMTP server refused the login ({exc.smtp_code})") \
                from None
        except smtplib.SMTPNotSupportedError:
            raise ChannelUnusable(f"MAIL_USE_TLS: {self.host}:{self.port} does not offer STARTTLS") from None
        except (OSError, smtplib.SMTPException) as exc:
            raise ChannelUnusable(f"MAIL_SERVER: cannot reach the SMTP server {self.host}:{self.port} "
                                  f"({exc.__class__.__name__}: {exc})") from None

    def opened(self):
        return _SmtpSession(self)


class _SmtpSession:
    """One SMTP connection for a batch, opened on first use and again after a failure."""

    def __init__(self, channel):
        self.channel, self.smtp = channel, None

    def __enter__(self):
        return self

    def send(self, notification, user, now):
        message = messages.email(notification, user, self.channel.sender, self.channel.plans, now)
        if self.smtp is None:
            self.smtp = self.channel.connect()
        try:
            self.smtp.send_message(message)
        except BaseException:
            self.close()  # the session's state is unknown: the next message starts a new one
            raise

    def close(self):
        if self.smtp is not None:
            try:
                self.smtp.quit()
            except (OSError, smtplib.SMTPException):
                self.smtp.close()
            self.smtp = None

    def __exit__(self, *exc_info):
        self.close()


class WebhookChannel:
    """A Standard Webhooks POST to ``NOTIFY_WEBHOOK_URL``, signed with ``NOTIFY_WEBHOOK_SECRET``.

    Headers ``webhook-id`` (the notification's id), ``webhook-timestamp`` (Unix seconds of this
    attempt) and ``webhook-signature`` (``v1,<base64 HMAC-SHA256>``), per the specification
    (https://www.standardwebhooks.com); any 2xx answer is a delivery, anything else a failed attempt.
    """

    name = "webhook"

    def __init__(self, config):
        self.url = config["NOTIFY_WEBHOOK_URL"]
        self.signer = Webhook(config["NOTIFY_WEBHOOK_SECRET"])

    def check(self):
        """Nothing to probe: a client app that is down meanwhile is what the retries are for."""

    def opened(self):
        return _HttpSession(self)


class _HttpSession:
    def __init__(self, channel):
        # Imported here, by the delivery worker alone: every other process would import requests for nothing.
        import requests

        self.channel, self.http = channel, requests.Session()

    def __enter__(self):
        return self

    def send(self, notification, user, now):
        body, msg_id = messages.webhook_body(notification, user), messages.webhook_id(notification)
        headers = {
            "content-type": "application/json",
            "webhook-id": msg_id,
            "webhook-timestamp": str(int(now.timestamp())),
            "webhook-signature": self.channel.signer.sign(msg_id, now.astimezone(UTC), body),
        }
        response = self.http.post(self.channel.url, data=body.encode(), headers=headers, timeout=SEND_TIMEOUT,
                                  allow_redirects=False)
        if not 200 <= response.status_code < 300:
            raise DeliveryFailed(f"{self.channel.url} answered HTTP {response.status_code}")

    def __exit__(self, *exc_info):
        self.http.close()
