# Set-up and everyday commands. Needs only python3 (3.11+) on the PATH; everything else goes in .venv.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PYTEST_ARGS ?=
# One pytest worker per core and one more (pytest-xdist): much of the suite waits on processes it
# started (gunicorn, the emulator, SMTP), which leaves a core idle (2 cores: 198 s with 2 workers,
# 182 s with 3); an idle worker takes queued tests from a busy one. PYTEST_ARGS='-n 0': one process.
PYTEST_WORKERS ?= $(shell $(PYTHON) -c 'import os; print((os.cpu_count() or 1) + 1)')
PYTEST_PARALLEL := -n $(PYTEST_WORKERS) --dist worksteal
# Python's own default, which some machines turn off (this one sets PYTHONDONTWRITEBYTECODE=1): with it
# pytest keeps its assertion-rewritten test modules in __pycache__, so each xdist worker and each
# collection after the first skips rewriting them (about 6 s of CPU per collection of the suite).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: install run demo test test-deep test-cluster lint bench clean

$(VENV)/.installed: setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip==25.3
	$(PY) -m pip install --quiet -e '.[test,dev]'
	touch $@

## make install: .venv with the service and its test and dev tools (pinned in setup.cfg); the other targets run it first
install: $(VENV)/.installed

# make run's ports and the folder of its database, emulator state, mail and dev.env; a second stack
# beside the first takes others: make run PORT=5001 EMULATOR_PORT=12112 SMTP_PORT=8026 INSTANCE=instance-2
PORT ?= 5000
EMULATOR_PORT ?= 12111
SMTP_PORT ?= 8025
INSTANCE ?= instance

## make run: the local Stripe emulator + the service on SQLite, at http://127.0.0.1:$(PORT); Ctrl-C stops it (exit 0)
run: install
	$(PY) -m scripts.dev --port $(PORT) --emulator-port $(EMULATOR_PORT) --smtp-port $(SMTP_PORT) --instance $(INSTANCE)

## make demo: the whole flow, step by step (uses a running `make run`, else starts its own)
demo: install
	$(PY) -m scripts.demo

## make bench: benchmarks against gunicorn on PostgreSQL and SQLite; prints one table (not part of make test)
bench: install
	$(PY) -m scripts.bench

## make test: the suite but its deep_only tests (make bench, make run's edges, the SDK type check, packaging),
## one worker per core and one more, generated inputs on a bounded budget; about 3 min 15 s on 2 cores
## (docs/testing.md "How long"; SQLite; set TEST_DATABASE_URL for PostgreSQL: each worker makes its own database).
## The few tests that need Redis start their own redis-server, installed here when missing (apt-get, as root);
## without one they are skipped.
test: install
	@$(PY) -m scripts.apt redis-server redis-server || echo "the tests that need Redis will be skipped"
	$(PY) -m pytest $(PYTEST_PARALLEL) $(PYTEST_ARGS)

## make test-deep: the whole suite, deep_only tests included, with the larger budget (TEST_DEEP=1): more
## generated examples, schemathesis's coverage phase, the bench's rows; CI runs it too
test-deep: install
	@$(PY) -m scripts.apt redis-server redis-server || echo "the tests that need Redis will be skipped"
	TEST_DEEP=1 $(PY) -m pytest $(PYTEST_PARALLEL) $(PYTEST_ARGS)

## make test-cluster: two service hosts (network namespaces, or loopback addresses where refused) on one
## PostgreSQL and one Redis, one killed mid-load; prints one table, exit 1 on any loss (about 1-2 min; root for ip netns)
test-cluster: install
	@$(PY) -m scripts.apt redis-server redis-server
	$(PY) -m scripts.cluster

## make lint: ruff (pyflakes, pycodestyle, isort, bugbear, pyupgrade, complexity <= 10), and mypy on the
## Stripe calls, whose params are typed with the pinned SDK's TypedDicts: every module of app/ that imports stripe
STRIPE_MODULES = $(shell grep -rlE '^(import|from) stripe' app --include='*.py' | sort)
lint: install
	$(VENV)/bin/ruff check app tests scripts wsgi.py gunicorn.conf.py
	$(VENV)/bin/mypy $(STRIPE_MODULES)

## make clean: remove .venv, instance/ and pytest's cache
clean:
	rm -rf $(VENV) instance .pytest_cache
