"""``flask prune-tokens`` over many expired tokens: its time and its own peak memory."""
import os
import re
import subprocess
import sys
import time

from scripts.bench.settings import REPO, log

# Runs the command after the fd number it is given and writes the command's peak resident set (KiB)
# to that fd. Linux counts in a child's peak the memory of the process it was forked from, until
# its exec (with vfork, that process's own), so started straight from this bench, hundreds of MB
# by then, the prune showed the bench's size; started from this small launcher it shows its own.
_PEAK_RSS_LAUNCHER = ("import os, resource, subprocess, sys; code = subprocess.call(sys.argv[2:]); "
                      "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss; "
                      "os.write(int(sys.argv[1]), str(peak).encode()); sys.exit(code)")


def run_prune(env):
    """Run ``flask prune-tokens`` in its own process; return seconds, peak RSS (MB) and its output."""
    read_end, write_end = os.pipe()
    argv = [sys.executable, "-c", _PEAK_RSS_LAUNCHER, str(write_end),
            sys.executable, "-m", "flask", "--app", "wsgi", "prune-tokens"]
    started = time.perf_counter()
    process = subprocess.run(argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             pass_fds=(write_end,))
    seconds = time.perf_counter() - started
    os.close(write_end)
    with os.fdopen(read_end) as peak:
        peak_kib = peak.read()
    output = process.stdout.decode()
    if process.returncode != 0:
        raise RuntimeError(f"prune-tokens failed ({process.returncode}):\n{output}")
    pruned = int(re.search(r"pruned (\d+)", output).group(1))
    result = {"seconds": seconds, "peak_rss_mb": int(peak_kib) / 1024, "pruned": pruned, "output": output.strip()}
    log(f"prune: {pruned} tokens in {seconds:.1f} s, peak RSS {result['peak_rss_mb']:.0f} MB")
    return result
