# Entry points; each target is a thin wrapper around a script you can also run directly.
.PHONY: dev down test lint emulators-up emulators-down ci

## The whole system locally: emulators, fakes (without keys), every function under
## cargo lambda watch, the tool queue feeding the worker, and a demo chat turn.
dev:
	./infra/local/dev.sh up

## Stop exactly what `make dev` started.
down:
	./infra/local/dev.sh down

## Run every test against local emulators (starts and stops them as needed).
test:
	./infra/local/test.sh

## Formatting, clippy and the SAM template checks.
lint:
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings
	./infra/local/install.sh
	.local/venv/bin/cfn-lint template.yaml
	SAM_CLI_TELEMETRY=0 .local/venv/bin/sam validate --lint --region us-east-1

## Start DynamoDB Local and moto; `source .local/run/env` afterwards.
emulators-up:
	./infra/local/emulators.sh start

## Stop exactly what emulators-up started.
emulators-down:
	./infra/local/emulators.sh stop

## What CI runs.
ci:
	./.ci/run
