"""docs/tour.md run as written (issue 43 item 2): its ``sh`` blocks in order, in one bash process, from a
checkout-like folder whose ``instance/`` is ``make run``'s stack (scripts/dev.py); every ``# <status>``
comment is checked against the HTTP status the line's curl printed (``-w "$W"``: on stderr), and every
line must succeed, so the tour cannot drift from the service again. ``deep_only``: the stack, ``make demo`` and
the tour take about a minute, which ``make test-deep`` (CI) spends and ``make test`` does not."""
import os
import queue
import re
import sqlite3
import subprocess
import sys
import threading
from contextlib import closing
from pathlib import Path

import pytest
import stripe

from scripts.demo import Demo
from scripts.dev import API_KEY, Stack
from tests.ports import free_port

ROOT = Path(__file__).resolve().parent.parent
TOUR = ROOT / "docs" / "tour.md"
# A status comment: "   # 201 ..." at the end of a command's line.
STATUS_COMMENT = re.compile(r"\s#\s+(\d{3})\b")
STATUS_LINE = re.compile(r"^\d{3}$")
DONE = "__tour_command_done__"
# Each command's time: the mail and webhook waits are bounded by the tour (30 s), Stripe calls by the service.
COMMAND_SECONDS = 90


def sh_commands(text):
    """Return ``[(line number, command)]`` of the ``sh`` blocks of ``text``, in order: a command is a line
    with its backslash continuations, or the lines up to where bash reads a whole command (a function)."""
    commands, fenced, pending, start = [], False, [], 0
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            assert not pending, f"docs/tour.md:{start}: the block ends inside a command"
            fenced = line.strip() == "```sh" if not fenced else False
            continue
        if not fenced or (not pending and not line.strip()):
            continue
        start = start if pending else number
        pending.append(line)
        source = "\n".join(pending)
        if not line.endswith("\\") and subprocess.run(["bash", "-n"], input=source, text=True,
                                                      capture_output=True).returncode == 0:
            commands.append((start, source))
            pending = []
    return commands


def expected_status(command):
    """The status a command's comment expects, or None."""
    match = STATUS_COMMENT.search(command)
    return int(match.group(1)) if match else None


class Shell:
    """One bash process fed one command at a time; ``run`` returns its exit status, stdout and stderr."""

    def __init__(self, cwd, env):
        self.process = subprocess.Popen(["bash", "--noprofile", "--norc"], cwd=cwd, env=env, text=True,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines = {"out": queue.Queue(), "err": queue.Queue()}
        for name, stream in (("out", self.process.stdout), ("err", self.process.stderr)):
            threading.Thread(target=self._read, args=(stream, self.lines[name]), daemon=True).start()

    @staticmethod
    def _read(stream, lines):
        for line in stream:
            lines.put(line.rstrip("\n"))

    def _until_done(self, name):
        got = []
        while True:
            try:
                line = self.lines[name].get(timeout=COMMAND_SECONDS)
            except queue.Empty:
                raise TimeoutError(f"no end within {COMMAND_SECONDS} s; so far: {got}") from None
            if line.startswith(DONE):
                return line.removeprefix(DONE).strip(), got
            got.append(line)

    def run(self, command):
        self.process.stdin.write(f"{command}\nprintf '\\n{DONE} %s\\n' $?; printf '\\n{DONE}\\n' >&2\n")
        self.process.stdin.flush()
        status, out = self._until_done("out")
        _, err = self._until_done("err")
        return int(status), out, err

    def close(self):
        self.process.stdin.close()
        self.process.wait(10)


def problems_running(commands, shell, page="docs/tour.md"):
    """Run ``commands`` in ``shell``; return a line for each that failed or whose status is not its comment's."""
    problems = []
    for number, command in commands:
        code, out, err = shell.run(command)
        printed = [int(line) for line in err if STATUS_LINE.match(line)]
        expected = expected_status(command)
        where = f"{page}:{number}: {command.splitlines()[0].strip()[:100]}"
        if code != 0:
            problems.append(f"{where}: exit status {code}; stderr {err[-5:]}")
        elif expected is None and printed:
            problems.append(f"{where}: printed status {printed} but no comment says which")
        elif expected is not None and printed != [expected]:
            problems.append(f"{where}: printed status {printed}, the comment says {expected}; answer {out[-3:]}")
    return problems


def test_the_checker_reports_a_wrong_status_a_missing_one_and_a_failed_line(tmp_path):
    page = ("```sh\nok() { printf '%s\\n' \"$1\" >&2\n}\nok 201   # 201 right\nok 409   # 201 wrong\n"
            "true   # 200 printed none\nok 200\nfalse\nX=$(echo 'a\nb')\necho \"$X\" | grep -q b\n```\n")
    commands = sh_commands(page)
    assert [number for number, _ in commands] == [2, 4, 5, 6, 7, 8, 9, 11]
    shell = Shell(tmp_path, {"PATH": os.environ["PATH"]})
    try:
        problems = problems_running(commands, shell, page="page.md")
    finally:
        shell.close()
    assert [problem.split(": ")[0] for problem in problems] == ["page.md:5", "page.md:6", "page.md:7", "page.md:8"]


def tour_checkout(folder):
    """A folder laid out as the checkout's root for the tour: ``.venv`` (for ``.venv/bin/flask``) and
    ``wsgi.py`` (``FLASK_APP=wsgi``) linked to this one's, and ``instance/`` for the stack."""
    folder.mkdir()
    (folder / ".venv").symlink_to(Path(sys.prefix))
    (folder / "wsgi.py").symlink_to(ROOT / "wsgi.py")
    return folder


@pytest.mark.deep_only
def test_the_tour_runs_as_written_against_make_runs_stack_after_make_demo(tmp_path, capsys):
    """``make demo`` first, on the same stack, as a reader may: the tour's trial is still a trial (it saves
    another card than the demo's), and every status comment holds."""
    checkout = tour_checkout(tmp_path / "checkout")
    instance = checkout / "instance"
    commands = sh_commands(TOUR.read_text())
    checked = [command for _, command in commands if expected_status(command) is not None]
    assert len(checked) == len(STATUS_COMMENT.findall(TOUR.read_text())) >= 30, "every status comment is checked"
    assert any("/organizations/invitations/accept" in command for command in checked)
    assert any("/usage/events" in command and "$K" in command for command in checked)
    stack = Stack(port=free_port(), emulator_port=free_port(), database_url=f"sqlite:///{instance / 'app.db'}",
                  smtp_port=free_port(), maildir=instance / "mail", env_file=instance / "dev.env",
                  state_file=instance / "emulator.json")
    # A reader's terminal: none of this process's settings (a TEST_DATABASE_URL, a PROVIDER_*) reach the tour.
    env = {name: os.environ[name] for name in ("PATH", "HOME", "LANG") if name in os.environ}
    with stack as stack_env:
        Demo(stack_env).run()
        assert "Demo complete." in capsys.readouterr().out
        shell = Shell(checkout, env)
        try:
            problems = problems_running(commands, shell)
            assert not problems, "\n".join(problems)
        finally:
            shell.close()
        provider = stripe.StripeClient(API_KEY, base_addresses={"api": stack_env["EMULATOR_URL"]})
        with closing(sqlite3.connect(instance / "app.db")) as database:
            (ada,) = database.execute("SELECT provider_id FROM users WHERE email = 'ada@example.com'").fetchone()
        (subscription,) = provider.v1.subscriptions.list(params={"customer": ada}).data
        assert subscription.status == "trialing", "the tour's card had its trial in the demo"
