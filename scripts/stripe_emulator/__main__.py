"""``python -m scripts.stripe_emulator --port 12111 [--host 127.0.0.1]``."""

from __future__ import annotations

import argparse

from werkzeug.serving import run_simple

from .app import create_app


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description="Stateful Stripe API emulator")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=12111)
    args = parser.parse_args(argv)
    app = create_app()
    try:
        run_simple(args.host, args.port, app, threaded=True, use_reloader=False)
    finally:
        app.extensions["stripe_emulator"]["delivery"].stop()


if __name__ == "__main__":
    main()
