# Set-up and everyday commands. Needs only python3 (3.11+) on the PATH; everything else goes in .venv.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PYTEST_ARGS ?=

.PHONY: install run demo test lint bench clean

$(VENV)/.installed: setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip==25.3
	$(PY) -m pip install --quiet -e '.[test,dev]'
	touch $@

install: $(VENV)/.installed

## make run: the local Stripe emulator + the service on SQLite, at http://127.0.0.1:5000
run: install
	$(PY) -m scripts.dev

## make demo: the whole flow, step by step (uses a running `make run`, else starts its own)
demo: install
	$(PY) -m scripts.demo

## make bench: benchmarks against gunicorn on PostgreSQL and SQLite; prints one table (not part of make test)
bench: install
	$(PY) -m scripts.bench

## make test: the whole suite (SQLite; set TEST_DATABASE_URL for PostgreSQL). The few tests that need Redis
## start their own redis-server, installed here when missing (apt-get, as root); without one they are skipped.
test: install
	@$(PY) -m scripts.apt redis-server redis-server || echo "the tests that need Redis will be skipped"
	$(PY) -m pytest $(PYTEST_ARGS)

lint: install
	$(VENV)/bin/ruff check app tests scripts wsgi.py gunicorn.conf.py

clean:
	rm -rf $(VENV) instance .pytest_cache
