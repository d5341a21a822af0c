"""Requests under load: ``GET /auth/me`` with each kind of token against the ceilings, and ``GET /plans``
(the catalogue, served from each worker's copy: no Stripe call per request) against ``GET /auth/me``."""
from scripts.bench.cpu import children_of, postgres_pids
from scripts.bench.database import seed_other_tokens
from scripts.bench.processes import create_scoped_token, register_and_login
from scripts.bench.runner import run_rows


def wrk_rows(db, port, minimal_port, token, args):
    """The wrk rows (``{name: (port, path, token)}``); under ``--smoke`` only the ceiling,
    ``GET /auth/me`` and ``GET /plans``; under ``--focus`` only the first two."""
    rows = {"minimal": (minimal_port, "/", None), "me": (port, "/auth/me", token), "plans": (port, "/plans", None)}
    if args.focus:
        return {name: rows[name] for name in ("minimal", "me")}
    if args.smoke:
        return rows
    # The user with many tokens is another user, seeded first, so that its row runs in the same
    # rounds as the row it is compared with (run after them, it met other ups and downs).
    many_user, many_token = register_and_login(port, "bench-many@bench.example")
    seed_other_tokens(db, many_user, args.other_tokens)
    return {**rows, "bare": (port, "/_bench/bare", token),
            "me_scoped": (port, "/auth/me", create_scoped_token(port, token)),
            "me_many_tokens": (port, "/auth/me", many_token)}


def measure_authenticated(wrk, db, port, minimal_port, token, args, workdir, gunicorn_pid, emulator):
    """Run the wrk rows; ``GET /auth/me`` with the login token also gets its CPU time per request, and
    ``GET /plans`` the Stripe calls it caused (``provider_calls``, and per request)."""
    rows = wrk_rows(db, port, minimal_port, token, args)
    server = {"workers": lambda: children_of(gunicorn_pid)}
    if db.kind == "postgres":
        server["postgres"] = postgres_pids
    before = emulator.api_requests()
    out = run_rows(wrk, rows, args, workdir, meters={"me": server})
    # Nothing else calls Stripe meanwhile: /auth/me and the minimal app never do. The warm-up's
    # requests are not counted, its calls are: the figure errs high.
    plans = out.get("plans")
    if plans is None:  # --focus
        return out
    plans["provider_calls"] = emulator.api_requests() - before
    served = plans["rps"] * args.duration * args.repeats
    plans["provider_calls_per_request"] = plans["provider_calls"] / served if served else None
    if "me_many_tokens" in out:
        out["me_many_tokens"]["other_tokens"] = args.other_tokens
    return out
