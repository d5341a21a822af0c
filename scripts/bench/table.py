"""The printed table: one row per measurement and database, each figure judged against its target."""
from scripts.bench import accounts
from scripts.bench.cpu import cpu_per_event
from scripts.bench.settings import (
    CONNECTIONS,
    ME_MAX_P99_MS,
    ME_MIN_SHARE_OF_MINIMAL,
    PLANS_MAX_PROVIDER_CALLS_PER_REQUEST,
    PRUNE_MAX_RSS_MB,
    PRUNE_MAX_SECONDS,
    TOKENS_MAX_COST,
    WEBHOOK_MAX_P99_MS,
    WEBHOOK_MIN_SHARE_OF_MINIMAL,
)


def fmt(value, digits=1):
    """Return ``value`` with thousands separators and ``digits`` decimals, or a dash when it was not measured."""
    return "—" if value is None else f"{value:,.{digits}f}"


def verdict(ok):
    """Return the Result column's word for a target met or missed."""
    return "PASS" if ok else "MISS"


def spread(row, key, digits, unit=""):
    """``median (min-max)`` of a repeated row's ``key``."""
    return (f"{fmt(row[key], digits)}{unit} ({fmt(row[key + '_min'], digits)}-{fmt(row[key + '_max'], digits)})")


def wrk_cells(row):
    return [spread(row, "rps", 0, " req/s"), fmt(row["p50_ms"]), spread(row, "p99_ms", 1), str(row["errors"])]


def _token_cost_rows(kind, r):
    """The rows of ``GET /auth/me`` with other tokens than the login one, each a cost against it."""
    me, scoped, many = r["me"], r["me_scoped"], r["me_many_tokens"]
    scoped_cost = 1 - scoped["rps"] / me["rps"] if me["rps"] else 1.0
    scoped_ok = scoped_cost < TOKENS_MAX_COST and scoped["errors"] == 0
    cost = 1 - many["rps"] / me["rps"] if me["rps"] else 1.0
    many_ok = cost < TOKENS_MAX_COST and many["errors"] == 0
    return [[kind, "`GET /auth/me`, personal token scoped to `profile:read`", *wrk_cells(scoped),
             f"cost {scoped_cost:+.1%} vs login token", f"cost < {TOKENS_MAX_COST:.0%}, 0 errors", verdict(scoped_ok)],
            [kind, f"`GET /auth/me`, user owns {many['other_tokens']:,} other tokens", *wrk_cells(many),
             f"cost {cost:+.1%} vs login token", f"cost < {TOKENS_MAX_COST:.0%}, 0 errors", verdict(many_ok)]]


def _plans_row(kind, r, runs):
    """``GET /plans`` from the workers' copies against ``GET /auth/me``: at least its throughput, no Stripe call
    per request."""
    plans, me = r["plans"], r["me"]
    ratio = plans["rps"] / me["rps"] if me["rps"] else 0.0
    per_request = plans["provider_calls_per_request"]
    ok = (ratio >= 1 and plans["errors"] == 0 and per_request is not None
          and per_request <= PLANS_MAX_PROVIDER_CALLS_PER_REQUEST)
    return [kind, f"`GET /plans` (catalogue from each worker's copy), no auth, {runs}", *wrk_cells(plans),
            f"{ratio:.0%} of `GET /auth/me`; {plans['provider_calls']} Stripe calls in all",
            f">= 100% of `/auth/me`, <= {PLANS_MAX_PROVIDER_CALLS_PER_REQUEST:g} Stripe calls/request, 0 errors",
            verdict(ok)]


def table_rows(kind, r, args):
    """The table's rows for database ``kind``; a row ``--smoke`` or ``--focus`` did not
    measure is left out."""
    rows = []
    minimal, me = r["minimal"], r["me"]
    runs = f"{CONNECTIONS} conn, {args.repeats} x {args.duration} s"
    rows.append([kind, f"minimal Flask app, one JSON route (the ceiling), {runs}", *wrk_cells(minimal), "",
                 "ceiling", ""])
    if "bare" in r:
        rows.append([kind, f"`GET /_bench/bare`: the app's hooks, no database, {runs}", *wrk_cells(r["bare"]),
                     f"{r['bare']['rps'] / minimal['rps']:.0%} of minimal", "(no target)", "info"])
    share, target_share = me["rps"] / minimal["rps"], ME_MIN_SHARE_OF_MINIMAL[kind]
    me_ok = share >= target_share and me["p99_ms"] < ME_MAX_P99_MS and me["errors"] == 0
    cpu = " + ".join(f"{part} {ms:.2f}" for part, ms in me["cpu_ms_per_request"].items())
    rows.append([kind, f"`GET /auth/me`, valid token, {runs}", *wrk_cells(me),
                 f"{share:.0%} of minimal; CPU/request (ms): {cpu}",
                 f">= {target_share:.0%} of minimal, p99 < {ME_MAX_P99_MS:g} ms, 0 errors", verdict(me_ok)])
    if "me_scoped" in r:
        rows += _token_cost_rows(kind, r)
    if "plans" in r:
        rows.append(_plans_row(kind, r, runs))
    hook = r["webhook"]
    calls = hook["provider_calls_per_event"]
    hook_share = hook["events_per_s"] / minimal["rps"] if minimal["rps"] else 0.0
    detail = (f"{hook_share:.1%} of minimal; {fmt(calls, 2)} provider calls/event; "
              f"{hook['ok']:,} ok of {hook['events']:,}; "
              f"ledger {hook['ledger_rows']:,}; converged {hook.get('converged', '—')} of {hook['users']}; "
              f"{cpu_per_event(hook['cpu_ms_per_event'])}")
    if kind == "postgres":
        hook_ok = (hook_share >= WEBHOOK_MIN_SHARE_OF_MINIMAL and hook["p99_ms"] is not None
                   and hook["p99_ms"] < WEBHOOK_MAX_P99_MS and hook["errors"] == 0 and hook["sent"] == hook["events"])
        target, result = (f">= {WEBHOOK_MIN_SHARE_OF_MINIMAL:.0%} of minimal (events/s per req/s), "
                          f"p99 < {WEBHOOK_MAX_P99_MS:g} ms, 0 errors", verdict(hook_ok))
    else:
        target, result = "(target is on PostgreSQL)", "info"
    rows.append([kind, f"webhook ingest, lifecycle mix of {hook['users']} subscriptions, {CONNECTIONS} senders",
                 f"{fmt(hook['events_per_s'], 0)} events/s", fmt(hook["p50_ms"]), fmt(hook["p99_ms"]),
                 str(hook["errors"]), detail, target, result])
    if "prune" not in r:  # --focus: the rows above only
        return rows
    prune = r["prune"]
    prune_ok = (prune["seconds"] <= PRUNE_MAX_SECONDS and prune["peak_rss_mb"] < PRUNE_MAX_RSS_MB
                and prune["pruned"] == prune["tokens"] and prune["left_expired"] == 0)
    rows.append([kind, f"`flask prune-tokens`, {prune['tokens']:,} expired tokens",
                 f"{fmt(prune['seconds'])} s", "", "", "0" if prune["pruned"] == prune["tokens"] else "wrong count",
                 f"peak RSS {fmt(prune['peak_rss_mb'], 0)} MB; pruned {prune['pruned']:,}",
                 f"<= {PRUNE_MAX_SECONDS:g} s, peak RSS < {PRUNE_MAX_RSS_MB:g} MB", verdict(prune_ok)])
    if "webhook_single" in r:
        single = r["webhook_single"]
        rows.append([kind, "one webhook delivery at a time (1 sender, no load)",
                     f"{fmt(single['events_per_s'], 0)} events/s", fmt(single["p50_ms"]), fmt(single["p99_ms"]),
                     str(single["errors"]), f"{single['ok']:,} ok of {single['sent']:,}", "(no target)", "info"])
    intent = r["intent"]
    rows.append([kind, f"`POST /subscription/intent`, new customer, sequential, {intent['requests']} calls", "",
                 fmt(intent["p50_ms"]), fmt(intent["p99_ms"]), str(intent["errors"]),
                 "customer + subscription created at the local emulator", "(no target)", "info"])
    swap = r["swap"]
    rows.append([kind, f"`POST /subscription/swap` round trip (request to row written), sequential, "
                       f"{swap['requests']} swaps", "", fmt(swap["p50_ms"]), fmt(swap["p99_ms"]), str(swap["errors"]),
                 "one update at the local emulator, Stripe's answer written", "(no target)", "info"])
    if "forgot" in r:
        rows.append(accounts.table_row(kind, r["forgot"]))
    login = r["login"]
    rows.append([kind, f"`POST /auth/login`, sequential, {login['requests']} logins", "", fmt(login["p50_ms"]),
                 fmt(login["p99_ms"]), str(login["errors"]), args.hash_params, "(no target)", "info"])
    return rows


def render_table(rows):
    """Return ``rows`` as one markdown table under the columns every row fills."""
    header = ["DB", "Row", "Throughput", "p50 ms", "p99 ms", "Errors", "Measured", "Target", "Result"]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)
