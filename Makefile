# zkafka: every set-up step a fresh machine needs lives here.
#   make test    create .venv (from the machine's python3), install zkafka + test extras, run the suite
#   make bench   storage benchmark (results go to BENCHMARKS.md by hand, with the machine)
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: install tools apt-tools images test lint unit integration bench demo down demo-down clean

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "zkafka needs Python >= 3.11, found " + sys.version)'
	@$(PYTHON) -m venv $(VENV) || { \
	  echo "python3 -m venv failed; installing Debian's python3-venv"; \
	  rm -rf $(VENV); apt-get update -q && apt-get install -y -q python3-venv && $(PYTHON) -m venv $(VENV); }

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	@touch $(STAMP)

# Debian's kcat (librdkafka 2.0.2) is one of the real clients the suite tests against. Debian's chromium and
# chromium-driver: the dashboard test (tests/dashboard) drives a real headless browser through
# /usr/bin/chromedriver. Debian's golang-go and golang-github-shopify-sarama-dev (Sarama 1.22) build the Sarama
# client, Debian's burrow (1.2.1) is the lag monitor the suite reads, Node.js and npm (the machine's, else
# Debian's) install kafkajs. Whatever is missing is installed with a single apt-get update.
KCAT       := $(shell command -v kcat 2>/dev/null)
CHROMIUM   := $(and $(wildcard /usr/bin/chromium),$(wildcard /usr/bin/chromedriver))
GO         := $(shell command -v go 2>/dev/null)
NPM        := $(shell command -v npm 2>/dev/null)
GOCODE     := /usr/share/gocode
SARAMA_SRC := $(wildcard $(GOCODE)/src/github.com/Shopify/sarama/sarama.go)
BURROW     := $(wildcard /usr/bin/Burrow)
APT_TOOLS  := $(strip $(if $(KCAT),,kcat) $(if $(CHROMIUM),,chromium chromium-driver) $(if $(GO),,golang-go) \
                $(if $(SARAMA_SRC),,golang-github-shopify-sarama-dev) $(if $(BURROW),,burrow) $(if $(NPM),,nodejs npm))

# The independent clients the tests run: kafkajs (tests/clients/kafkajs, pinned by its package-lock.json;
# npm writes node_modules/.package-lock.json last, so it is the stamp) and the Sarama program
# (tests/clients/sarama), built offline in GOPATH mode from Debian's Go sources into build/clients.
KAFKAJS    := tests/clients/kafkajs
SARAMA_BIN := build/clients/sarama-client
GO_OFFLINE := GO111MODULE=off GOPATH=$(GOCODE) GOPROXY=off GOFLAGS= CGO_ENABLED=0 GOCACHE=$(CURDIR)/build/go-cache

tools: apt-tools $(KAFKAJS)/node_modules/.package-lock.json $(SARAMA_BIN)

apt-tools:
ifneq ($(APT_TOOLS),)
	apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $(APT_TOOLS)
endif

$(KAFKAJS)/node_modules/.package-lock.json: $(KAFKAJS)/package.json $(KAFKAJS)/package-lock.json | apt-tools
	cd $(KAFKAJS) && npm ci --no-audit --no-fund --loglevel=error

$(SARAMA_BIN): $(wildcard tests/clients/sarama/*.go) | apt-tools
	@mkdir -p $(@D)
	cd tests/clients/sarama && $(GO_OFFLINE) go build -o $(CURDIR)/$@ .

install: $(STAMP) tools

lint: $(STAMP)
	$(BIN)/lint-imports

unit: $(STAMP)
	$(BIN)/pytest -q tests/unit

integration: $(STAMP)
	$(BIN)/pytest -q tests/integration

# The container tier's engine and images (tests/containers): Debian's docker.io started if no engine answers,
# `zkafka images build --offline` (debootstrap base, the project's wheels; zkafka:<version> and
# zkafka-zookeeper:<version>). Outside CI a machine that cannot run Docker (no root, no apt) still runs the
# rest: the tier then skips and says how to enable it.
images: $(STAMP)
	@bash compose/ensure-docker.sh && $(BIN)/zkafka images build --offline || { \
	  if [ "$$CI" = true ]; then echo "container images could not be built: CI needs them" >&2; exit 1; fi; \
	  echo "WARNING: no Docker engine or images here: the container tests will be skipped"; }

test: lint tools images
	$(BIN)/pytest -q -p no:cacheprovider tests

bench: $(STAMP)
	$(BIN)/zkafka bench storage

# `make demo`: checks Java 17+ and the ports, starts a real ZooKeeper (from the pyspark wheel's jars) + 3 brokers
# under ./.zkafka (left running), creates topic demo, sends and reads back 5000 records with the console tools,
# runs the consumer-group demo for 20 s, then prints how to connect. Stop it with `make down`.
demo: $(STAMP) tools
	$(BIN)/zkafka demo cluster --dir .zkafka

down:
	@if [ -f .zkafka/cluster.json ] && [ -x $(BIN)/zkafka ]; then $(BIN)/zkafka cluster down --dir .zkafka; \
	else echo "no demo cluster in ./.zkafka: nothing to stop"; fi

demo-down: down

clean:
	rm -rf $(VENV) .zkafka .pytest_cache build *.egg-info $(KAFKAJS)/node_modules
