"""The suite's counts in docs/testing.md, from pytest's own collection: ``python -m scripts.test_counts``.

Rewrites the table between the ``test-counts`` markers of docs/testing.md with the number of test
items pytest collects per file (parametrized cases counted one by one, as pytest's summary counts
them), so the page never states a count nobody ran. ``--check`` rewrites nothing and exits 1, with
one line, when the page's table is not the suite's (``tests/test_docs.py`` runs it so).
"""
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "testing.md"
START, END = "<!-- test-counts:start -->", "<!-- test-counts:end -->"
BLOCK = re.compile(re.escape(START) + r".*?" + re.escape(END), re.S)


def collected():
    """Return ``Counter({file path: items})`` of pytest's collection of ``tests/``: every test, the ones
    ``make test`` leaves to ``make test-deep`` (``deep_only``) included."""
    # The same collection whatever the caller's budget: make test and make test-deep check the same page.
    env = {**os.environ, "TEST_DEEP": "1"}
    run = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:xdist",
                          "-p", "no:cacheprovider", "tests"], cwd=ROOT, env=env, capture_output=True, text=True,
                         check=False)
    if run.returncode != 0:
        last = (run.stdout.strip().splitlines() or ["no output"])[-1]
        raise SystemExit(f"pytest could not collect the suite (exit {run.returncode}): {last}")
    return Counter(line.split("::", 1)[0] for line in run.stdout.splitlines() if "::" in line)


def table(counts):
    """The markdown block: one row per test file, largest first, then the total."""
    rows = [f"| `{path}` | {count} |" for path, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    return "\n".join([START, "| File | Tests |", "|---|---:|", *rows,
                      f"| **{len(counts)} files** | **{sum(counts.values())}** |", END])


def main(argv):
    check = argv == ["--check"]
    if argv and not check:
        print("usage: python -m scripts.test_counts [--check]", file=sys.stderr)
        return 2
    page = PAGE.read_text()
    if not BLOCK.search(page):
        print(f"{PAGE.relative_to(ROOT)} has no {START} ... {END} block", file=sys.stderr)
        return 1
    fresh = BLOCK.sub(lambda _: table(collected()), page)
    if check:
        if fresh != page:
            print(f"{PAGE.relative_to(ROOT)}'s test counts are not the suite's: run python -m scripts.test_counts",
                  file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(fresh)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
