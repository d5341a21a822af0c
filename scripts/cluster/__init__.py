"""``make test-cluster``: two service hosts against one PostgreSQL and one Redis, one killed mid-load.

``python -m scripts.cluster``. Each host is a network namespace of the run's own (``ip netns``,
a veth pair into a bridge on a private /24) running ``gunicorn -c gunicorn.conf.py -w 2``,
``flask deliver-notifications`` and ``flask deliver-usage`` in one process group
(``scripts.cluster.hosts``); where the sandbox refuses ``ip netns``, two process groups on
127.0.0.11 and 127.0.0.12, and the output says so (``scripts.cluster.network``). Shared, on the
machine: a throwaway PostgreSQL database, a Redis of the run's own (the rate limits), the Stripe
emulator (Stripe's webhook backoff compressed; both plans with a metered price on one meter), an
SMTP sink (which the clients read their emailed links from) and an HTTP receiver for the
notifications. A TCP load balancer without health checks sends the emulator's webhooks to the
hosts in turn, so a delivery to a dead host fails and Stripe's retry brings it back.

Phases (``scripts.cluster.phases``): accounts register and subscribe on both hosts; organisations
are made and subscribed per seat, their invitees verified from their emails, and one whose card
fails refuses a seat on both hosts (``scripts.cluster.teams``); for ``LOAD_SECONDS`` every
account runs the client actions (``scripts.cluster.actions.ACTIONS``: swap, read, refresh on one
host then read on the other, log in), every organisation invites, accepts, and loses members
(``teams.step``), and a backend with a service key reports usage, each batch sent twice
(``scripts.cluster.usage``), all alternating hosts; host A's process group is killed with
SIGKILL and started again; the login and Stripe-call limits are tried across both hosts; then the
webhooks, the notification outbox and the usage ledger drain. The checks
(``scripts.cluster.checks.CHECKS``) print one table; the exit status is 1 when any fails.
"""
