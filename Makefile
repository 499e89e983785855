# Coupler: two set-up commands, `make demo` and `make test`; everything else is here.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PYTEST_ARGS ?=

.PHONY: demo test lint bench wheel system-deps venv clean

# the virtual environment, reinstalled only when the packaging files change
$(STAMP): pyproject.toml setup.py
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

# system packages the tests need: a Java 17 runtime for Spark, OpenSSH's sshd for SFTP
# (checked on every run: it takes milliseconds when they are present)
system-deps:
	@missing=""; \
	command -v java >/dev/null 2>&1 || missing="$$missing openjdk-17-jre-headless"; \
	test -x /usr/sbin/sshd || missing="$$missing openssh-server"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing system packages:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else \
	    echo "missing system packages:$$missing (run as root or install them: apt-get install$$missing)"; exit 1; \
	  fi; \
	fi

lint: $(STAMP)
	$(VENV)/bin/ruff check .

test: $(STAMP) system-deps lint
	$(PY) -m pytest $(PYTEST_ARGS)

demo: $(STAMP)
	$(PY) -m coupler.bus.demo

bench: $(STAMP) system-deps
	$(PY) -m pip install -q -e '.[bench]'
	@for b in benchmarks/*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

wheel: $(STAMP)
	$(PY) -m pip wheel -q --no-deps -w dist .
	@ls dist/*.whl

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache
