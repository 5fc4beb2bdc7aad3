# zkafka: every set-up step a fresh machine needs lives here.
#   make test    create .venv (from the machine's python3), install zkafka + test extras, run the suite
#   make bench   storage benchmark (results go to BENCHMARKS.md by hand, with the machine)
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: install tools test lint unit integration bench demo demo-down clean

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "zkafka needs Python >= 3.11, found " + sys.version)'
	@$(PYTHON) -m venv $(VENV) || { \
	  echo "python3 -m venv failed; installing Debian's python3-venv"; \
	  rm -rf $(VENV); apt-get update -q && apt-get install -y -q python3-venv && $(PYTHON) -m venv $(VENV); }

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	@touch $(STAMP)

# Debian's kcat (librdkafka 2.0.2) is one of the real clients the suite tests against.
KCAT := $(shell command -v kcat 2>/dev/null)
tools:
ifeq ($(KCAT),)
	apt-get update -q && apt-get install -y -q kcat
endif

install: $(STAMP) tools

lint: $(STAMP)
	$(BIN)/lint-imports

unit: $(STAMP)
	$(BIN)/pytest -q tests/unit

integration: $(STAMP)
	$(BIN)/pytest -q tests/integration

test: lint tools
	$(BIN)/pytest -q -p no:cacheprovider tests

bench: $(STAMP)
	$(BIN)/zkafka bench storage

# A real ZooKeeper (from the pyspark wheel's jars) + 3 brokers under ./.zkafka, a demo topic, and a
# look at who leads what. Stop with `make demo-down`.
demo: $(STAMP)
	$(BIN)/zkafka cluster up --brokers 3 --dir .zkafka
	$(BIN)/kafka-topics --zookeeper 127.0.0.1:2181 --create --if-not-exists --topic demo --partitions 6 --replication-factor 3
	$(BIN)/kafka-topics --zookeeper 127.0.0.1:2181 --describe --topic demo
	$(BIN)/zkafka cluster status --dir .zkafka

demo-down: $(STAMP)
	$(BIN)/zkafka cluster down --dir .zkafka

clean:
	rm -rf $(VENV) .zkafka .pytest_cache build *.egg-info
