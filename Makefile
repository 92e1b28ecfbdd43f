# The two commands a newcomer needs: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check

.PHONY: demo test lint install install-dev lock client axe translations migrate run web worker clean

$(PY):
	$(PYTHON) -m venv $(VENV)

# Installs come from the hash-locked files in requirements/ (requirements/README.md): every
# package pinned with its hashes, none resolved at install time (--no-deps). PyTorch's CPU build
# is on PyTorch's own index; TORCH_INDEX= (empty) leaves it out where pip finds the wheel
# elsewhere (.ci/run).
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
LOCKED_INSTALL := $(PIP) install -q --require-hashes --no-deps \
	$(if $(TORCH_INDEX),--extra-index-url $(TORCH_INDEX))

$(VENV)/.installed: requirements/inference.lock | $(PY)
	$(LOCKED_INSTALL) -r requirements/inference.lock
	touch $@

$(VENV)/.installed-dev: requirements/dev.lock $(VENV)/.installed
	$(LOCKED_INSTALL) -r requirements/dev.lock
	touch $@

## lock: re-compile requirements/*.lock from requirements/*.txt (uv, from the dev set); the
## web and inference locks take the dev lock's versions, so the three agree
## (TORCH_WHEELS: where uv finds torch's +cpu wheel; UV_ARGS passes options, e.g. --upgrade)
TORCH_WHEELS ?= https://download.pytorch.org/whl/torch/
UV_COMPILE := $(VENV)/bin/uv pip compile --quiet --generate-hashes --python-version 3.11 \
	--python-platform x86_64-manylinux_2_28 --find-links $(TORCH_WHEELS) \
	--custom-compile-command "make lock" $(UV_ARGS)

lock: $(VENV)/.installed-dev
	$(UV_COMPILE) requirements/dev.txt -o requirements/dev.lock
	$(UV_COMPILE) requirements/inference.txt -c requirements/dev.lock -o requirements/inference.lock
	$(UV_COMPILE) requirements/web.txt -c requirements/dev.lock \
		--override requirements/web-overrides.txt -o requirements/web.lock

## client: regenerate the Python client (clients/python) from the API's schema
## (tests/api/test_client_generated.py fails while it is stale)
client: $(VENV)/.installed-dev
	$(PY) clients/generate.py

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
