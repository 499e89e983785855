# Coupler: two set-up commands, `make demo` and `make test`; everything else is here.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PYTEST_ARGS ?=

.PHONY: demo test lint bench wheel pyfiles system-deps services venv clean

# the virtual environment, reinstalled only when the packaging files change
# (system-deps first: the C compiler builds the fused copybook kernel at install)
$(STAMP): pyproject.toml setup.py translators/copybook/_fused.c | system-deps
	@test -x $(PY) || { echo "venv: creating $(VENV) with $(PYTHON)"; $(PYTHON) -m venv $(VENV); }
	@echo "venv: upgrading pip"
	@$(PY) -m pip install -q --upgrade pip
	@echo "venv: installing Coupler and its dependencies (pyspark, lxml, ...; a few minutes the first time)"
	@$(PY) -m pip install -q -e '.[dev]'
	@touch $(STAMP)
	@echo "venv: ready ($(VENV)/bin/coupler)"

venv: $(STAMP)

# system packages the tests need: a Java 17 runtime for Spark, OpenSSH's sshd for SFTP,
# Debian's chromium for the console's browser tests (Playwright drives it; it never downloads one)
# GnuCOBOL 3's cobc (the copybook tests' compiler oracle); a C compiler and Python's headers
# (setup.py builds the fused copybook kernel, translators/copybook/_fused.c)
# (checked on every run: it takes milliseconds when they are present)
system-deps:
	@missing=""; \
	command -v java >/dev/null 2>&1 || missing="$$missing openjdk-17-jre-headless"; \
	test -x /usr/sbin/sshd || missing="$$missing openssh-server"; \
	test -x /usr/bin/chromium || missing="$$missing chromium"; \
	command -v cobc >/dev/null 2>&1 || missing="$$missing gnucobol3"; \
	command -v cc >/dev/null 2>&1 || missing="$$missing gcc"; \
	test -f "$$($(PYTHON) -c 'import sysconfig; print(sysconfig.get_paths()["include"])')/Python.h" || missing="$$missing python3-dev"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing system packages:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else \
	    echo "missing system packages:$$missing (run as root or install them: apt-get install$$missing)"; exit 1; \
	  fi; \
	fi

# the machine's RabbitMQ and PostgreSQL (the broker transport's tests talk to them on
# loopback): started with their own commands when installed but stopped
services:
	@nc_ok() { (exec 3<>/dev/tcp/127.0.0.1/$$1) 2>/dev/null; }; \
	if ! nc_ok 5672 && command -v rabbitmq-server >/dev/null; then \
	  echo "starting RabbitMQ"; rabbitmq-server -detached; \
	  for i in $$(seq 60); do nc_ok 5672 && break; sleep 1; done; \
	fi; \
	if ! nc_ok 5432 && command -v pg_ctlcluster >/dev/null; then \
	  echo "starting PostgreSQL"; pg_ctlcluster --skip-systemctl-redirect $$(ls /etc/postgresql) main start; \
	  for i in $$(seq 30); do nc_ok 5432 && break; sleep 1; done; \
	fi; \
	nc_ok 5672 || { echo "RabbitMQ is not reachable on 127.0.0.1:5672"; exit 1; }; \
	nc_ok 5432 || { echo "PostgreSQL is not reachable on 127.0.0.1:5432"; exit 1; }

# ruff; the architecture's import rules and "no cycles" (import-linter contracts in
# pyproject.toml); mypy over the package, seen as `coupler.*` through a folder of symlinks
# (the package is installed from the top-level folders by package-dir)
TYPECHECK := build/typecheck
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports
	@mkdir -p $(TYPECHECK)/coupler && for f in bus translators adapters canonical schemas; do ln -sfn ../../../$$f $(TYPECHECK)/coupler/$$f; done
	cd $(TYPECHECK) && ../../$(VENV)/bin/mypy --config-file ../../pyproject.toml -p coupler.bus -p coupler.translators -p coupler.adapters -p coupler.canonical

# two workers, one per core (docs/testing.md); every Spark test on one of them
test: $(STAMP) system-deps services lint
	$(PY) -m pytest -n 2 --dist loadgroup $(PYTEST_ARGS)

demo: $(STAMP) system-deps
	$(PY) examples/demo/demo.py

bench: $(STAMP) system-deps
	$(PY) -m pip install -q -e '.[bench]'
	@for b in benchmarks/*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

# the wheel (for this Python and platform: it holds the compiled copybook kernel) in $(DIST)
DIST ?= dist
VERSION = $(shell sed -n 's/^version = "\(.*\)"$$/\1/p' pyproject.toml)
wheel: $(STAMP)
	$(PY) -m pip wheel -q --no-deps -w $(DIST) .
	@ls $(DIST)/coupler-$(VERSION)-*.whl

# Coupler's code as a zip for `spark-submit --py-files` (docs/batch.md): the executors import it
# from the zip, and Python finds the namespace package `coupler` in a zip only when the zip lists
# its folders, which a wheel does not (the compiled kernel cannot load from a zip: NumPy's decode)
pyfiles: wheel
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	  $(PY) -m pip install -q --no-deps --no-compile --target "$$tmp" "$$(ls -t $(DIST)/coupler-$(VERSION)-*.whl | head -1)" && \
	  rm -f $(DIST)/coupler-$(VERSION).zip && \
	  (cd "$$tmp" && $(abspath $(PY)) -m zipfile -c $(abspath $(DIST))/coupler-$(VERSION).zip coupler)
	@ls $(DIST)/coupler-$(VERSION).zip

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache
