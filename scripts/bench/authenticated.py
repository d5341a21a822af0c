"""Authenticated requests under load: ``GET /auth/me`` with each kind of token, against the ceilings."""
from scripts.bench.cpu import children_of, postgres_pids
from scripts.bench.database import seed_other_tokens
from scripts.bench.processes import create_scoped_token, register_and_login
from scripts.bench.runner import run_rows


def wrk_rows(db, port, minimal_port, token, args):
    """The wrk rows (``{name: (port, path, token)}``); under ``--smoke`` only the ceiling and ``GET /auth/me``."""
    rows = {"minimal": (minimal_port, "/", None), "me": (port, "/auth/me", token)}
    if args.smoke:
        return rows
    # The user with many tokens is another user, seeded first, so that its row runs in the same
    # rounds as the row it is compared with (run after them, it met other ups and downs).
    many_user, many_token = register_and_login(port, "bench-many@bench.example")
    seed_other_tokens(db, many_user, args.other_tokens)
    return {**rows, "bare": (port, "/_bench/bare", token),
            "me_scoped": (port, "/auth/me", create_scoped_token(port, token)),
            "me_many_tokens": (port, "/auth/me", many_token)}


def measure_authenticated(wrk, db, port, minimal_port, token, args, workdir, gunicorn_pid):
    """Run the wrk rows; ``GET /auth/me`` with the login token also gets its CPU time per request."""
    rows = wrk_rows(db, port, minimal_port, token, args)
    server = {"workers": lambda: children_of(gunicorn_pid)}
    if db.kind == "postgres":
        server["postgres"] = postgres_pids
    out = run_rows(wrk, rows, args, workdir, meters={"me": server})
    if "me_many_tokens" in out:
        out["me_many_tokens"]["other_tokens"] = args.other_tokens
    return out
