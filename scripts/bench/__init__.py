"""Benchmarks with targets (issues 6 and 13): authenticated requests, webhook ingest, prune, login.

``python -m scripts.bench [--db sqlite|postgres|both] [--duration S] [--quick | --smoke]`` (``make bench``).

The service runs the way production runs it: gunicorn, 2 sync workers, on a throwaway PostgreSQL
database (``subs_bench_<random>`` on 127.0.0.1:5432, user ``postgres``, dropped at the end) and/or
a temporary SQLite file, migrated with ``flask db upgrade``. It serves ``scripts.bench.service_app:app``:
the real app plus one bench-only route, ``GET /_bench/bare``, which touches no database. The
ceiling every ratio is taken against is a minimal Flask app (``scripts.bench.minimal_app``, one JSON
route) under the same gunicorn settings, measured in the same run. Every wrk row runs after a
warm-up, ``REPEATS`` times, interleaved with the rows it is compared with (so drift on a shared
machine hits them alike); the table gives the median and the min-max spread, and targets are
judged on the medians.

Load comes from other processes on loopback: wrk (installed with apt-get when missing) for the
plain requests, and a bounded pool of threads with ``http.client`` for the signed webhooks
(``scripts.bench.webhook_load``: the lifecycles of many subscriptions, recorded at a local Stripe
emulator, whose card listener calls go back to that emulator). All traffic goes to 127.0.0.1.

Prints one markdown table (every figure from this run) and writes the raw results to
``bench-results/latest.json``. Targets are ratios where they can be, because absolute figures
drift on shared machines; the absolute ones are set for a 2-core machine, load generator included.

One module per kind of measurement: ``authenticated`` (wrk rows of ``GET /auth/me``), ``sequential``
(login, intent, swap), ``webhooks``, ``prune``, ``delivery``, ``usage``, ``entitlements`` (consumes of
``POST /entitlements/check`` and the race for a quota's last units); ``runner`` runs wrk and takes the
medians, ``table`` prints the table, ``main`` runs them all for each database. ``settings`` holds
the counts and the targets; ``processes``, ``database`` and ``cpu`` the child processes, the
throwaway databases and the CPU meters they share.
"""
