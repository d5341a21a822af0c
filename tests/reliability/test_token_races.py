"""Refresh under concurrency, through a real gunicorn with four sync workers (issue 14 item 17, issue 12).

Ten clients refresh one token at the same moment, round after round: exactly one gets a new token,
the others 401 (the token was just rotated out, within the grace window, so the family survives),
and the one new token is the user's only live token. On SQLite the writers queue on the file lock,
on PostgreSQL on the token's row lock; the rotation's DELETE must have matched the row either way.
"""
import requests
from sqlalchemy import func, select

from app.extensions import db
from app.models import AccessToken, RotatedToken
from tests.support.accounts import PASSWORD, register
from tests.support.reliability import in_parallel

ROUNDS = 5
RACERS = 10


def live_tokens(app):
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(AccessToken))


def test_of_ten_concurrent_refreshes_of_one_token_exactly_one_wins_every_round(make_app, gunicorn, tally):
    app = make_app()
    register(app.test_client())
    login = gunicorn.post("/auth/login", json={"email": "ada@example.com", "password": PASSWORD})
    token = login.json()["access_token"]
    for _ in range(ROUNDS):
        headers = {"Authorization": f"Bearer {token}"}
        answers = in_parallel([lambda headers=headers: requests.post(f"{gunicorn.url}/auth/token/refresh",
                                                                     headers=headers, timeout=30)] * RACERS)
        tally["parallel_requests"] += RACERS
        tally["refresh_races"] += 1
        winners = [answer for answer in answers if answer.status_code == 200]
        tally["refresh_race_winners_max"] = max(tally["refresh_race_winners_max"], len(winners))
        assert sorted(answer.status_code for answer in answers) == [200] + [401] * (RACERS - 1), \
            [(answer.status_code, answer.text) for answer in answers]
        for loser in (answer for answer in answers if answer.status_code == 401):
            assert 'error_description="token rotated out"' in loser.headers["WWW-Authenticate"]
        token = winners[0].json()["access_token"]
        # The family is intact: the winner's token works and is the only live one.
        assert gunicorn.get("/auth/me", headers={"Authorization": f"Bearer {token}"}).status_code == 200
        assert live_tokens(app) == 1
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(RotatedToken)) == ROUNDS
    assert "SAWarning" not in gunicorn.log.read_text()
