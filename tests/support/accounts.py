"""Accounts as the client app makes them: register, log in, bearer headers, verified addresses and the
account emails' tokens."""
import re

from sqlalchemy import select

from app.auth import tokens
from app.extensions import db
from app.models import User
from app.timeutil import utcnow

PASSWORD = "correct horse battery"


def register(client, email="ada@example.com", password=PASSWORD, name="Ada"):
    response = client.post("/auth/register", json={"email": email, "password": password, "name": name})
    assert response.status_code == 201, response.json
    return response.json


def login(client, email="ada@example.com", password=PASSWORD, **extra):
    response = client.post("/auth/login", json={"email": email, "password": password, **extra})
    assert response.status_code == 200, response.json
    return response.json


def bearer(token_body):
    return {"Authorization": f"Bearer {token_body['access_token']}"}


def fresh_token(app):
    """Issue a token to ``fuzzed_app``'s user directly (a generated logout or refresh may delete the last one)."""
    with app.app_context():
        user = db.session.scalars(select(User).where(User.email == "fuzz@example.com")).one()
        _, plain_text = tokens.issue(user)
        db.session.commit()
    return plain_text


def work(app):
    """Run the delivery worker once: what is due is sent, account emails with tokens minted now."""
    result = app.test_cli_runner().invoke(args=["deliver-notifications", "--once"])
    assert result.exit_code == 0, result.output
    return result.output


def mails(smtp_server, to=None, subject=None):
    return [m for m in smtp_server.messages
            if (to is None or m["To"] == to) and (subject is None or m["Subject"] == subject)]


def token_in(message):
    """Return the token of the link in ``message`` (its plain text and its HTML carry the same one)."""
    plain, html = message.get_body(("plain",)).get_content(), message.get_body(("html",)).get_content()
    (token,) = set(re.findall(r"[?&]token=([\w.\-]+)", plain))
    assert f"token={token}" in html
    return token


def last_token(smtp_server, to="ada@example.com", subject=None):
    return token_in(mails(smtp_server, to, subject)[-1])


def post(client, path, body, headers=None):
    return client.post(path, json=body, headers=headers or {})


def error_code(response):
    return response.json["error"]["code"]


def personal_token(client, headers, *abilities):
    response = client.post("/auth/tokens", json={"name": "script", "abilities": list(abilities)}, headers=headers)
    assert response.status_code == 201, response.json
    return bearer(response.json)


def verify(app, email):
    """Mark ``email``'s account verified, as its emailed link would (tests/test_accounts.py covers the link)."""
    with app.app_context():
        db.session.scalars(select(User).where(User.email == email)).one().email_verified_at = utcnow()
        db.session.commit()
