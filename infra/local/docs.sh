#!/usr/bin/env bash
# `make docs`: writes the reference tables the code owns (docs/configuration.md: settings,
# tool limits, template parameters, secrets; docs/operations.md: functions, log groups,
# alarms; docs/api.md: error codes) from the code and template.yaml. `make test` runs the same module without writing
# and fails, naming the row, when a committed table differs.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$REPO_ROOT"
# cfn-lint's template decoder reads template.yaml (infra/docs/template_facts.py).
"$REPO_ROOT/infra/local/install.sh"
# Each function's start-up runs to see what it reads, kb-retrieve's index load among them: the
# AWS SDK is pointed at a port where nothing listens, so no call leaves this machine.
export AWS_ENDPOINT_URL=http://127.0.0.1:9
export AWS_EC2_METADATA_DISABLED=true
unset AWS_ENDPOINT_URL_DYNAMODB AWS_ENDPOINT_URL_S3 AWS_ENDPOINT_URL_SQS AWS_ENDPOINT_URL_SECRETS_MANAGER
DOCS_WRITE=1 cargo test -p docs-check --test integration -- generated::
log "wrote the generated tables; review them with: git diff docs/"
