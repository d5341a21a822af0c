"""Print the reliability suite's figures as a markdown table, for the "Reliability" section of docs/testing.md.

    python -m scripts.reliability_report [bench-results/reliability.json]

The figures are the counts the suite itself wrote (tests/reliability/conftest.py), per database
the newest run of the whole suite; nothing here is typed by hand. A database with none (only runs
of a few tests) shows its newest run, and the table's last row says it is partial and how pytest
was run. Exits 1 when the file is missing or holds no run.
"""
import json
import sys
from pathlib import Path

DEFAULT = Path(__file__).resolve().parents[1] / "bench-results" / "reliability.json"

# Count key -> the row label; in this order. Keys a run does not have are shown as 0.
ROWS = {
    "webhook_deliveries": "Webhook deliveries (HTTP, signed)",
    "lifecycle_events": "Distinct provider events of the shuffled subscription lifecycles (20, or 50 with TEST_DEEP=1)",
    "duplicate_deliveries": "Duplicate deliveries",
    "reordered_deliveries": "Deliveries after a newer event of the same customer",
    "parallel_requests": "Requests sent in parallel to 4 gunicorn workers",
    "metrics_requests_two_workers": "Requests to 2 gunicorn workers (gunicorn.conf.py), each scrape counting all",
    "webhook_retries_after_5xx": "5xx answers retried (provider-style) until accepted",
    "faults_injected": "Faults injected (database lost/locked, provider down/slow, worker killed)",
    "provider_fault_max_ms": "Slowest 503 with the provider down or slow (ms)",
    "inputs_tried": "Bad or generated inputs tried",
    "rebuilt_users": "Users rebuilt from the provider alone",
    "login_timing_median_diff_us": "Login: unknown email vs wrong password, median difference (µs)",
    "brute_force_guesses_before_429": "Login guesses answered before 429 (4 workers, `memory://`: counted per worker)",
    "brute_force_guesses_before_429_shared": "Login guesses answered before 429 (4 workers sharing Redis; limit 10)",
    "refresh_races": "Rounds of 10 concurrent refreshes of one token (4 workers)",
    "refresh_race_winners_max": "Most refreshes answered 200 in one round (must be 1)",
    "notifications_queued": "Notifications queued for email during an SMTP outage (2 workers)",
    "smtp_outage_ms": "SMTP server down (ms)",
    "notification_failed_attempts": "Delivery attempts failed meanwhile, retried with backoff",
    "notifications_mailed": "Notifications mailed (must equal queued)",
    "notifications_mailed_twice": "Notifications mailed twice (must be 0)",
    "usage_events_delivered": "Usage events delivered through worker kills and random 429/500 (each once at Stripe)",
    "usage_answers_lost": "Usage batches whose answer a killed gunicorn worker lost, retried by the backend",
    "lost_updates": "Lost or wrong updates (must be 0)",
}


def latest_per_database(runs):
    """Return ``{database: run}``: each database's newest whole-suite run, else its newest run."""
    latest, whole = {}, {}
    for run in runs:
        latest[run["database"]] = run
        if run.get("whole_suite"):
            whole[run["database"]] = run
    return {**latest, **whole}


def which_run(run):
    """Return the cell naming ``run``: when it finished, how long it took, and the selection when partial."""
    cell = f"{run['finished_at']}, {run['seconds']} s"
    if run.get("whole_suite"):
        return cell
    # Runs written before the selection was recorded have none; a pipe (a -k expression) would end the cell.
    selection = run.get("selection")
    return cell + (", partial run" if selection is None else f", partial: `pytest {selection}`".replace("|", "\\|"))


def table(runs):
    latest = latest_per_database(runs)
    databases = sorted(latest)
    lines = ["| | " + " | ".join(databases) + " |", "|---|" + "---:|" * len(databases)]
    for key, label in ROWS.items():
        lines.append(f"| {label} | " + " | ".join(str(latest[d]["counts"].get(key, 0)) for d in databases) + " |")
    tests = [latest[d]["tests"] for d in databases]
    lines.append("| Reliability tests passed / failed | " + " | ".join(
        f"{t.get('passed', 0)} / {t.get('failed', 0)}" for t in tests) + " |")
    lines.append("| Run (finished, seconds for the whole pytest run) | " + " | ".join(
        which_run(latest[d]) for d in databases) + " |")
    return "\n".join(lines)


def main(argv):
    path = Path(argv[1]) if len(argv) > 1 else DEFAULT
    try:
        runs = json.loads(path.read_text())["runs"]
    except (OSError, ValueError, KeyError) as exc:
        print(f"no reliability results in {path}: {exc}; run the test suite first", file=sys.stderr)
        return 1
    if not runs:
        print(f"no reliability runs in {path}", file=sys.stderr)
        return 1
    print(table(runs))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
