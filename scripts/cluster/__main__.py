"""``python -m scripts.cluster [--loopback]``: one cluster run; prints its table; exit status 1 on any failed
check. ``--loopback`` uses the fallback of a sandbox that refuses ``ip netns`` (two loopback addresses)."""
import argparse
import contextlib
import os
import sys
import tempfile
import threading
import time

from scripts.cluster import checks, phases
from scripts.cluster.main import Run, log


def table(rows, mode, seconds):
    lines = ["| Measure | Value | Expected | Result |", "|---|---|---|---|"]
    lines += [f"| {measure} | {value} | {expected} | {'PASS' if ok else 'FAIL'} |"
              for measure, value, expected, ok in rows]
    lines.append(f"| time (set-up to checks) | {seconds:.0f} s | < 180 s | {'PASS' if seconds < 180 else 'SLOW'} |")
    return f"hosts: {mode}\n" + "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m scripts.cluster", description=__doc__.split("\n")[0])
    parser.add_argument("--loopback", action="store_true", help="two loopback addresses, not network namespaces")
    parser.add_argument("--keep", metavar="DIR", help="keep the hosts' logs in DIR "
                        "(made if missing) instead of a temporary folder")
    args = parser.parse_args(argv)
    started = time.monotonic()
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
    with contextlib.nullcontext(args.keep) if args.keep else tempfile.TemporaryDirectory(prefix="subs-cluster-") \
            as workdir:
        run = Run(workdir, args.loopback)
        try:
            run.start()
            mode = (f"two network namespaces ({', '.join(run.network.hosts)} on a bridge at {run.network.machine}/24)"
                    if run.network.mode == "netns" else
                    f"FALLBACK: ip netns refused ({run.network.reason}); two process groups on "
                    f"{' and '.join(run.network.hosts)}")
            log(mode)
            following = threading.Event()
            threading.Thread(target=run._follow_deliveries, args=(following,), daemon=True).start()
            phases.subscribe_accounts(run)
            phases.organize(run)
            log(f"{len(run.accounts)} accounts and {len(run.teams)} organisations subscribed; load for "
                f"{phases.LOAD_SECONDS} s")
            phases.load(run)
            phases.limits(run)
            phases.drain(run)
            following.set()
            rows = [row for check in checks.CHECKS for row in check(run)]
        finally:
            run.stop()
    print(table(rows, mode, time.monotonic() - started))
    return 0 if all(ok for *_, ok in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
