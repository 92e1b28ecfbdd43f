# The two commands a newcomer needs: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check

.PHONY: demo test lint install install-dev axe translations migrate run web worker clean

$(PY):
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: requirements.txt | $(PY)
	$(PIP) install -q -r requirements.txt
	touch $@

$(VENV)/.installed-dev: requirements.txt requirements-dev.txt $(VENV)/.installed
	$(PIP) install -q -r requirements-dev.txt
	touch $@

# The worker pages' compiled translations (generated, not committed): docs/protocols.md
MO := $(patsubst %.po,%.mo,$(wildcard locale/*/LC_MESSAGES/django.po))

%.mo: %.po $(VENV)/.installed
	$(PY) manage.py translations_compile

# axe-core for the browser tests' accessibility checks (tests/browser/axe.py), from the npm
# registry: the tests inject this file, never a CDN's. Without npm the `axe` tests are skipped.
AXE_JS := .cache/axe/node_modules/axe-core/axe.min.js

$(AXE_JS):
	@if command -v npm >/dev/null 2>&1; then \
		npm install --no-audit --no-fund --prefix .cache/axe axe-core@4.10.3; \
	else \
		echo "note: npm not found, axe-core not installed: the accessibility (axe) tests will be skipped"; \
	fi

translations: $(MO)
axe: $(AXE_JS)
install: $(VENV)/.installed $(MO)
install-dev: $(VENV)/.installed-dev $(MO) axe

## demo: install, migrate SQLite, load the demo, fill it with a simulated crowd, serve it
## (DEMO_ARGS passes options, e.g. DEMO_ARGS="--addrport 127.0.0.1:8001 --no-tiny-model")
demo: install
	$(PY) manage.py demo $(DEMO_ARGS)

## test: install the dev requirements and run the test suite
test: install-dev
	$(PY) -m pytest $(PYTEST_ARGS)

## lint: ruff (lint and format), the import layers (.importlinter) and mypy
lint: install-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports
	EVALSITE_TASKS_INLINE=1 $(VENV)/bin/mypy annotation chat judges workerpages modelhub evalsite evalstats dashboard api webhooks  # its Django plugin loads the settings

migrate: install
	$(PY) manage.py migrate --noinput

run: migrate
	$(PY) manage.py runserver

## web: the production web server (gunicorn + uvicorn workers; docs/deployment.md)
web: migrate
	$(VENV)/bin/gunicorn -c deploy/gunicorn.conf.py evalsite.asgi:application

## worker: a Celery worker for both queues, with the beat schedule (needs CELERY_BROKER_URL)
worker: install
	$(VENV)/bin/celery -A evalsite worker -B -Q default,inference --loglevel INFO

clean:
	rm -rf var .pytest_cache .ruff_cache .mypy_cache .hypothesis test-artifacts
