"""The documentation: README.md and docs/*.md link only to files and headings that exist, the
configuration table names exactly the settings the service reads, and the README stays short."""
import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote

import pytest

from app import config
from app.billing.events import REQUIRED_EVENT_TYPES
from app.presentation import InvoiceSchema
from app.subscription.schemas import QuantityRequestSchema

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.glob("*.md"))]
# SPEC.md and CONTRACT.md sit next to the checkout, not in it: the only place a link may leave it for.
SHARED = ROOT.parent / "shared"
README_MAX_LINES = 260
# Read in five minutes (issue 43): what it is, the two commands, what make run starts, where to go next.
README_MAX_WORDS = 900
# The two commands a fresh machine needs, first of all the README's commands.
README_COMMANDS = ["make run", "make test"]

# Documented in the configuration table although app/config.py does not read them, and why.
NOT_READ_BY_APP_CONFIG = {
    "BIND": "gunicorn.conf.py's listen address",
    "WEB_CONCURRENCY": "gunicorn.conf.py's number of workers",
    "PROMETHEUS_MULTIPROC_DIR": "prometheus_client's multiprocess folder, named by gunicorn.conf.py",
}
# Where each section of the one-page README went (issue 22), so that none is lost and the headings
# other branches add lines under stay where the integrator looks for them.
MOVED_SECTIONS = {
    "configuration.md": ["configuration"],
    "api.md": ["endpoints", "managing-a-subscription-from-the-app", "http-surface", "what-the-service-does-not-store",
               "openapi-document", "tokens", "decisions"],
    "billing.md": ["how-billing-works", "notification-delivery", "decisions"],
    "operating.md": ["command-line", "production", "metrics", "logs", "health-and-readiness",
                     "failed-events-and-replay", "reconcile-in-cron"],
    "emulator.md": ["the-stripe-emulator"],
    "testing.md": ["tests", "reliability", "benchmarks"],
    # The curl tour (issue 43), run as written by tests/test_tour.py.
    "tour.md": ["a-tour-with-curl"],
}

FENCE = re.compile(r"^ {0,3}(```|~~~)")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$")
CODE_SPAN = re.compile(r"`[^`]*`")
# An inline link or image: [text](target) or [text](target "title"); the text may span lines.
LINK = re.compile(r"\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def prose_lines(text):
    """Return the page's lines with fenced code blocks blanked, so line numbers stay."""
    lines, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            lines.append("")
        else:
            lines.append("" if fenced else line)
    return lines


def slug(heading):
    """Return GitHub's anchor of a heading: lower-case, punctuation but '-' and '_' dropped, spaces to '-'."""
    text = re.sub(r"!?\[((?:[^\]\\]|\\.)*)\]\([^)]*\)", r"\1", heading)  # a link counts as its text
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page):
    """Return the anchors of ``page``'s headings; a repeated one gets GitHub's ``-1``, ``-2``, ... suffix."""
    found, seen = set(), {}
    for line in prose_lines(page.read_text()):
        match = HEADING.match(line)
        if match:
            base = slug(match.group(2))
            anchor = f"{base}-{seen[base]}" if base in seen else base
            seen[base] = seen.get(base, 0) + 1
            found.add(anchor)
    return found


def links(page):
    """Return ``[(line number, target)]`` of the page's links, outside code blocks and code spans."""
    prose = "\n".join(prose_lines(page.read_text()))
    prose = CODE_SPAN.sub(lambda span: re.sub(r"[^\n]", " ", span.group()), prose)
    return [(prose.count("\n", 0, match.start()) + 1, match.group(1)) for match in LINK.finditer(prose)]


def broken_links(page, root=ROOT, shared=SHARED):
    """Return a line for each relative link of ``page`` whose file or heading does not exist."""
    problems = []
    for number, target in links(page):
        if SCHEME.match(target):
            continue  # https:, mailto:: not this repository's to check
        path, _, anchor = target.partition("#")
        # Normalised, not resolved: ../shared may be a symbolic link to a folder elsewhere.
        resolved = Path(os.path.normpath(page.parent / unquote(path))) if path else page
        where = f"{page.name}:{number}: {target}"
        if not resolved.is_relative_to(root):
            if not resolved.is_relative_to(shared):
                problems.append(f"{where}: leaves the repository")
                continue
            if not shared.is_dir():
                continue  # a checkout without the shared folder beside it has nothing to check against
        if not resolved.exists():
            problems.append(f"{where}: no such file ({resolved})")
        elif anchor and (resolved.suffix != ".md" or anchor not in anchors(resolved)):
            problems.append(f"{where}: no heading with the anchor #{anchor} in {resolved.name}")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_relative_link_reaches_an_existing_file_and_heading(page):
    assert links(page), f"{page.name} has no links: the link parser no longer finds them"
    assert broken_links(page) == []


def test_broken_files_and_anchors_are_reported(tmp_path):
    root = tmp_path / "repo"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "other.md").write_text("# Other\n\n## The `flask reconcile` (hourly) run\n")
    page = root / "README.md"
    page.write_text("# Front\n\n## Twice\n\n## Twice\n\n"
                    "[ok](docs/other.md#the-flask-reconcile-hourly-run) [ok](#twice-1) [ok](#front) [ok](docs)\n"
                    "[gone](docs/missing.md) [bad anchor](docs/other.md#nowhere)\n"
                    "[no such](#twice-2) [out](../elsewhere/x.md) [web](https://example.com/x#y)\n"
                    "`[in code](nowhere.md)`\n```\n[in a block](nowhere.md)\n```\n")
    problems = broken_links(page, root=root, shared=tmp_path / "shared")
    assert [problem.split(" (")[0] for problem in problems] == [
        "README.md:8: docs/missing.md: no such file",
        "README.md:8: docs/other.md#nowhere: no heading with the anchor #nowhere in other.md",
        "README.md:9: #twice-2: no heading with the anchor #twice-2 in README.md",
        "README.md:9: ../elsewhere/x.md: leaves the repository",
    ]


@pytest.mark.parametrize("heading, anchor", [
    ("What the service does not store", "what-the-service-does-not-store"),
    ("`flask reconcile` in cron", "flask-reconcile-in-cron"),
    ("Tests, reliability and benchmarks", "tests-reliability-and-benchmarks"),
    ("snake_case and kebab-case: both kept", "snake_case-and-kebab-case-both-kept"),
    ("A [linked](other.md) heading", "a-linked-heading"),
])
def test_anchors_follow_githubs_rules(heading, anchor):
    assert slug(heading) == anchor


def test_the_readme_links_every_docs_page():
    linked = {(README.parent / target.partition("#")[0]).resolve() for _, target in links(README)}
    assert [page.name for page in PAGES[1:] if page.resolve() not in linked] == []


@pytest.mark.parametrize("name", sorted(MOVED_SECTIONS))
def test_each_section_of_the_old_readme_has_a_heading_in_docs(name):
    assert (DOCS / name).exists()
    assert [anchor for anchor in MOVED_SECTIONS[name] if anchor not in anchors(DOCS / name)] == []


def test_the_readme_is_a_front_door():
    text = README.read_text()
    assert len(text.splitlines()) <= README_MAX_LINES
    assert len(text.split()) < README_MAX_WORDS, f"{len(text.split())} words"


def test_the_readme_opens_with_make_run_and_make_test():
    first_block = README.read_text().split("```sh\n", 1)[1].split("```", 1)[0]
    assert [line.split("#")[0].strip() for line in first_block.splitlines()] == README_COMMANDS


def settings_read_by_app_config():
    """Return every environment variable ``app.config.from_environ`` reads, asked with one holding them all."""
    class Everything(dict):
        def __contains__(self, name):
            return True

        def __getitem__(self, name):
            return name

    read = {value for value in config.from_environ(Everything()).values()}  # each value is its own name
    assert set(config.DEFAULTS) <= read and "DATABASE_URL" in read, read
    return read


def documented_settings():
    """Return ``{name: row count}`` of the names in the first column of docs/configuration.md's table."""
    section = (DOCS / "configuration.md").read_text().split("\n## Configuration\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")][2:]  # past the header and its rule
    assert rows, "docs/configuration.md has no configuration table under ## Configuration"
    counts = {}
    for row in rows:
        names = re.findall(r"`([A-Z][A-Z0-9_]*)`", re.split(r"(?<!\\)\|", row)[1])
        assert names, f"a row of the configuration table names no setting: {row}"
        for name in names:
            counts[name] = counts.get(name, 0) + 1
    return counts


def test_every_setting_the_service_reads_is_documented():
    assert sorted(settings_read_by_app_config() - set(documented_settings())) == []


def test_every_documented_setting_exists():
    documented = documented_settings()
    assert [name for name, count in documented.items() if count > 1] == []
    assert sorted(set(documented) - settings_read_by_app_config() - set(NOT_READ_BY_APP_CONFIG)) == []


@pytest.mark.parametrize("name", sorted(NOT_READ_BY_APP_CONFIG))
def test_each_exception_is_read_by_gunicorn_conf_and_not_by_app_config(name):
    assert name not in settings_read_by_app_config()
    assert re.search(rf"\b{name}\b", (ROOT / "gunicorn.conf.py").read_text())


def documented_event_types():
    """Return the event types docs/operating.md lists as needed, in its order."""
    text = (DOCS / "operating.md").read_text()
    listing = text.split("The event types the service needs", 1)[1].split("\n\n", 2)[1]
    return re.findall(r"^- `([a-z_.]+)`$", listing, re.M)


def test_the_documented_event_types_are_the_event_tables():
    assert documented_event_types() == list(REQUIRED_EVENT_TYPES)


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_commands_in_the_docs_need_only_python3(page):
    # uuidgen (util-linux) is absent from slim images, where python3 always is.
    assert "uuidgen" not in page.read_text()


def test_the_seat_limits_are_documented_as_the_schema_has_them():
    (seats,) = QuantityRequestSchema().fields["quantity"].validators
    assert f'"quantity" ({seats.min} to {seats.max} seats;' in (DOCS / "api.md").read_text()


def test_the_invoice_shape_in_api_md_is_the_schemas():
    """docs/api.md's Invoice lists every field the service answers, ``subtotal``, ``tax`` and ``total`` included."""
    row = next(line for line in (DOCS / "api.md").read_text().splitlines() if "`/subscription/invoices`" in line)
    listed = re.findall(r'"(\w+)"', row.split("Invoice: `{", 1)[1].split("}`", 1)[0])
    assert listed == list(InvoiceSchema().fields)


def test_the_test_counts_in_testing_md_are_the_suites():
    """docs/testing.md's table of test items per file is pytest's collection (issue 32), not typed."""
    check = subprocess.run([sys.executable, "-m", "scripts.test_counts", "--check"], cwd=ROOT,
                           capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stderr
