"""The shared runner of the wrk rows: wrk's output parsed, rows run in interleaved rounds, medians taken."""
import re
import statistics
import subprocess
from pathlib import Path

from scripts.bench.cpu import CpuMeter
from scripts.bench.settings import CONNECTIONS, HOST, log

_DURATION = re.compile(r"([\d.]+)(us|ms|s|m)\b")
_UNITS_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0}


def _ms(token):
    match = _DURATION.fullmatch(token.strip())
    return float(match.group(1)) * _UNITS_MS[match.group(2)]


def parse_wrk(output):
    """Return requests/s, p50/p99 (ms), request and error counts from ``wrk --latency`` output."""
    result = {"rps": float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))}
    for pct in ("50", "75", "90", "99"):
        result[f"p{pct}_ms"] = _ms(re.search(rf"^\s+{pct}(?:\.0+)?%\s+(\S+)", output, re.M).group(1))
    result["requests"] = int(re.search(r"(\d+) requests in", output).group(1))
    socket_errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output)
    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    result["socket_errors"] = dict(zip(("connect", "read", "write", "timeout"),
                                       map(int, socket_errors.groups()), strict=True)) if socket_errors else {}
    result["non_2xx"] = int(non_2xx.group(1)) if non_2xx else 0
    result["errors"] = sum(result["socket_errors"].values()) + result["non_2xx"]
    return result


def run_wrk(wrk, port, path, duration, workdir, token=None, connections=CONNECTIONS, lua=None):
    """Run wrk against ``path`` for ``duration`` s (with ``token`` as bearer); return ``parse_wrk``'s figures.

    ``lua``: a function returning more of wrk's Lua script (a request body, say), called for each run, so that
    what must be new in every run (consume identifiers) is.
    """
    script = Path(workdir) / "bench.lua"
    lines = ['wrk.headers["Accept"] = "application/json"']
    if token:
        lines.append(f'wrk.headers["Authorization"] = "Bearer {token}"')
    if lua:
        lines.append(lua())
    script.write_text("\n".join(lines) + "\n")
    argv = [wrk, "-t2", f"-c{connections}", f"-d{duration}s", "--latency", "--timeout", "5s", "-s", str(script),
            f"http://{HOST}:{port}{path}"]
    output = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    result = parse_wrk(output)
    log(f"wrk :{port}{path}: {result['rps']:.0f} req/s p50 {result['p50_ms']:.1f} ms p99 {result['p99_ms']:.1f} ms "
        f"errors {result['errors']}")
    return result


def summarize(runs):
    """Median and min-max of repeated wrk runs of one row; errors are summed over the runs."""
    out = {"runs": runs, "errors": sum(run["errors"] for run in runs)}
    for key in ("rps", "p50_ms", "p99_ms"):
        values = [run[key] for run in runs]
        out[key], out[f"{key}_min"], out[f"{key}_max"] = statistics.median(values), min(values), max(values)
    return out


def run_rows(wrk, rows, args, workdir, meters=None):
    """Measure ``rows`` (``{name: (port, path, token[, lua])}``, ``lua`` as ``run_wrk`` takes it): a warm-up each
    (if any), then ``args.repeats`` rounds.

    Each round runs every row once for ``args.duration`` s, in turn, so that a row and the rows
    it is compared with share the machine's ups and downs. Returns ``{name: summarize(...)}``; a
    row named in ``meters`` (``{name: CpuMeter parts}``) also gets its median CPU time per request
    by part (``cpu_ms_per_request``), wrk's own included.
    """
    meters = meters or {}
    if args.warm_up:
        for port, path, token, *lua in rows.values():
            run_wrk(wrk, port, path, args.warm_up, workdir, token, lua=lua[0] if lua else None)
    runs = {name: [] for name in rows}
    for _ in range(args.repeats):
        for name, (port, path, token, *lua) in rows.items():
            with CpuMeter({**meters.get(name, {}), "wrk": None}) as cpu:
                result = run_wrk(wrk, port, path, args.duration, workdir, token, lua=lua[0] if lua else None)
            requests = result["rps"] * args.duration
            if name in meters and requests:
                result["cpu_ms_per_request"] = {part: seconds * 1000 / requests
                                                for part, seconds in cpu.seconds.items()}
            runs[name].append(result)
    summaries = {name: summarize(row_runs) for name, row_runs in runs.items()}
    for name in meters:
        summaries[name]["cpu_ms_per_request"] = {part: statistics.median(run["cpu_ms_per_request"][part]
                                                                         for run in runs[name])
                                                 for part in runs[name][0]["cpu_ms_per_request"]}
    return summaries
