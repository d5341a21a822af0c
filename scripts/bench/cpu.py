"""CPU time per part of the stack (gunicorn's workers, PostgreSQL, the emulator, the load), from /proc."""
import os
import resource
import time
from pathlib import Path


def cpu_seconds(pids):
    """Return the CPU time (user + system, seconds) the live processes ``pids`` have used, from /proc."""
    total = 0
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except (FileNotFoundError, ProcessLookupError):
            continue  # ended since it was listed
        # proc(5): fields 14 and 15, utime and stime in clock ticks; the name before ")" may hold spaces.
        fields = stat.rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def children_of(pid):
    """Return the pids of ``pid``'s child processes (gunicorn's workers)."""
    return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def postgres_pids():
    """Return the pids of every PostgreSQL server process (the backends serving the workers among them)."""
    return [int(entry.name) for entry in Path("/proc").iterdir()
            if entry.name.isdigit() and _comm(entry) == "postgres"]


def _comm(proc_dir):
    try:
        return (proc_dir / "comm").read_text().strip()
    except (FileNotFoundError, ProcessLookupError):
        return None


def _reaped_children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class CpuMeter:
    """CPU time per part of the stack over one measurement, so a throughput can be read against
    what the machine's cores could give. ``parts`` is ``{name: callable returning pids}``; two
    names are measured without pids: ``senders`` (this process: the webhook senders' threads)
    and ``wrk`` (the children this process reaped meanwhile: the wrk run)."""

    def __init__(self, parts):
        self.parts = parts

    def __enter__(self):
        self.start = self._now()
        return self

    def __exit__(self, *exc):
        end = self._now()
        self.seconds = {name: end[name] - self.start[name] for name in self.parts}

    def _now(self):
        own = {"senders": time.process_time, "wrk": _reaped_children_cpu}
        return {name: own[name]() if name in own else cpu_seconds(pids()) for name, pids in self.parts.items()}


def cpu_per_event(cpu_ms):
    """The table's ``CPU/event (ms): workers 7.9 + ... = 12.0, so 2 cores give <= 167 events/s``."""
    if not cpu_ms:
        return "CPU/event: —"
    total = sum(cpu_ms.values())
    parts = " + ".join(f"{name} {ms:.1f}" for name, ms in cpu_ms.items())
    ceiling = os.cpu_count() * 1000 / total
    return f"CPU/event (ms): {parts} = {total:.1f}, so {os.cpu_count()} cores give <= {ceiling:,.0f} events/s"
