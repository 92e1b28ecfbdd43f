# The two commands a newcomer needs: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check

.PHONY: demo test lint install install-dev translations migrate run web worker clean

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

translations: $(MO)
install: $(VENV)/.installed $(MO)
install-dev: $(VENV)/.installed-dev $(MO)

## demo: install, migrate SQLite, load the demo, fill it with a simulated crowd, serve it
## (DEMO_ARGS passes options, e.g. DEMO_ARGS="--addrport 127.0.0.1:8001 --no-tiny-model")
demo: install
	$(PY) manage.py demo $(DEMO_ARGS)

## test: install the dev requirements and run the test suite
test: install-dev
	$(PY) -m pytest $(PYTEST_ARGS)

## lint: ruff (lint and format) and mypy
lint: install-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	EVALSITE_TASKS_INLINE=1 $(VENV)/bin/mypy annotation modelhub evalsite dashboard api webhooks  # its Django plugin loads the settings

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
