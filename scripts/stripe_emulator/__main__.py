"""``python -m scripts.stripe_emulator --port 12111 [--host 127.0.0.1] [--state-file PATH]``."""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from werkzeug.serving import run_simple

from .app import create_app
from .core import persistence


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description="Stateful Stripe API emulator")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=12111)
    parser.add_argument("--state-file", type=Path, default=None,
                        help="Keep the state in this JSON file: read at start, written within half a second "
                             "of a change and at stop")
    args = parser.parse_args(argv)
    app = create_app()
    store = app.extensions["stripe_emulator"]["store"]
    if args.state_file:
        try:
            persistence.persist(app, args.state_file)
        except (OSError, ValueError) as exc:
            app.extensions["stripe_emulator"]["delivery"].stop()
            parser.exit(1, f"cannot read the emulator's state from {args.state_file}: {exc}; "
                           "remove the file to start afresh\n")
    # SIGTERM (how `make run` stops its processes) unwinds through the finally below, as Ctrl-C does.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
    try:
        run_simple(args.host, args.port, app, threaded=True, use_reloader=False)
    finally:
        app.extensions["stripe_emulator"]["delivery"].stop()
        if args.state_file:
            persistence.save(store, args.state_file)


if __name__ == "__main__":
    main()
