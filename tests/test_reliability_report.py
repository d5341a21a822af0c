"""``python -m scripts.reliability_report``: which run it shows, and docs/testing.md's table printed by it."""
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench-results" / "reliability.json"


def run_of(finished_at, deliveries, whole_suite, selection=""):
    return {"finished_at": finished_at, "database": "sqlite", "seconds": 12.5, "tests": {"passed": 3},
            "whole_suite": whole_suite, "selection": selection, "counts": {"webhook_deliveries": deliveries}}


def report(tmp_path, runs):
    (tmp_path / "runs.json").write_text(json.dumps({"runs": runs}))
    result = subprocess.run([sys.executable, "-m", "scripts.reliability_report", str(tmp_path / "runs.json")],
                            cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return {line.split(" | ")[0].removeprefix("| "): line.split(" | ")[1].removesuffix(" |")
            for line in result.stdout.splitlines()[2:]}


def test_a_later_partial_run_does_not_replace_the_whole_suites_figures(tmp_path):
    rows = report(tmp_path, [run_of("2026-11-20T10:00:00Z", 1669, True),
                             run_of("2026-11-21T10:00:00Z", 3, False, "tests/reliability/test_security.py")])
    assert rows["Webhook deliveries (HTTP, signed)"] == "1669"
    assert rows["Run (finished, seconds for the whole pytest run)"] == "2026-11-20T10:00:00Z, 12.5 s"


def test_with_only_partial_runs_the_report_says_which_run_it_shows(tmp_path):
    rows = report(tmp_path, [run_of("2026-11-21T10:00:00Z", 3, False, "tests/reliability -k 'shared or timing'")])
    assert rows["Run (finished, seconds for the whole pytest run)"] == \
        "2026-11-21T10:00:00Z, 12.5 s, partial: `pytest tests/reliability -k 'shared or timing'`"


def test_a_run_of_a_few_reliability_tests_is_recorded_as_partial():
    test = "tests/reliability/test_production_block.py::test_the_crontab_shares_the_production_blocks_metrics_folder"
    # The test reads no database; without TEST_DATABASE_URL the nested session does not empty this one's.
    env = {name: value for name, value in os.environ.items() if name != "TEST_DATABASE_URL"}
    result = subprocess.run([sys.executable, "-m", "pytest", test, "-q", "-p", "no:cacheprovider"], cwd=ROOT,
                            env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:]
    recorded = json.loads(RESULTS.read_text())["runs"][-1]  # appended by that session as it ended
    assert recorded.get("selection", "").startswith(test)
    assert recorded["whole_suite"] is False and recorded["tests"] == {"passed": 1}


def test_the_docs_table_has_every_row_the_report_prints(tmp_path):
    printed = list(report(tmp_path, [run_of("2026-11-20T10:00:00Z", 1, True)]))
    section = (ROOT / "docs" / "testing.md").read_text().split("\n## Reliability\n", 1)[1].split("\n## ", 1)[0]
    table = [line for line in section.splitlines() if line.startswith("| ")][1:]  # the header row is blank
    assert [line.split(" | ")[0].removeprefix("| ") for line in table] == printed
