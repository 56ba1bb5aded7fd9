"""Least privilege in template.yaml: per function, exactly the DynamoDB actions its code uses
on the tables it uses; no Scan, no delete and no SAM CRUD policy on chats, ledger or usage.

Run by `make test` (infra/local/test.sh) with the local virtualenv, which has cfn-lint and
its template decoder (it understands !Ref, !GetAtt, !Sub).
"""

import sys
from pathlib import Path

from cfnlint.decode import decode_str

ROOT = Path(__file__).resolve().parents[2]

LEDGER = {"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query"}
# The router deletes a chat's items on its owner's request (DELETE /chats/{id}).
DELETES = {"dynamodb:BatchWriteItem"}
EXPECTED = {
    "ChatRouterFunction": {
        "ToolCallsTable": LEDGER | DELETES,
        "ToolCallsTable/index": LEDGER | DELETES,
        "ChatsTable": {
            "dynamodb:GetItem",
            "dynamodb:PutItem",
            "dynamodb:UpdateItem",
            "dynamodb:Query",
            "dynamodb:ConditionCheckItem",
        }
        | DELETES,
        "UsageTable": {"dynamodb:PutItem", "dynamodb:Query"},
        "RateLimitsTable": {"dynamodb:UpdateItem"},
    },
    "ToolWorkerFunction": {
        "ToolCallsTable": LEDGER,
        "ToolCallsTable/index": LEDGER,
        "ChatsTable": {"dynamodb:GetItem", "dynamodb:UpdateItem"},
        "UsageTable": {"dynamodb:PutItem"},
    },
    "SeatsAeroSearchFunction": {},
    "AmadeusSearchFunction": {},
}
# Tables whose data is users' chats, calls and spend: never scanned, never granted all
# actions. (Deletes are in EXPECTED: only the router's, for DELETE /chats/{id}.)
PRIVATE = {"ChatsTable", "ToolCallsTable", "UsageTable"}
FORBIDDEN = {"dynamodb:Scan", "dynamodb:*"}
SAM_DYNAMODB_POLICIES = {"DynamoDBCrudPolicy", "DynamoDBWritePolicy", "DynamoDBReadPolicy"}


def as_list(value):
    return value if isinstance(value, list) else [value]


def table_of(resource):
    """`ChatsTable` for !GetAtt ChatsTable.Arn, `ToolCallsTable/index` for its index ARN."""
    if isinstance(resource, dict) and "Fn::GetAtt" in resource:
        target = resource["Fn::GetAtt"]
        name = target[0] if isinstance(target, list) else str(target).split(".")[0]
        return name
    if isinstance(resource, dict) and "Fn::Sub" in resource:
        text = resource["Fn::Sub"]
        text = text[0] if isinstance(text, list) else text
        if text.startswith("${") and ".Arn}/index/" in text:
            return text[2 : text.index(".Arn}")] + "/index"
    return repr(resource)


def dynamodb_grants(policies):
    """{table: actions} from a function's inline statements; SAM DynamoDB policy templates
    are returned separately as {(template, table)}."""
    grants, templates = {}, set()
    for policy in policies:
        for name, args in policy.items():
            if name in SAM_DYNAMODB_POLICIES:
                templates.add((name, args["TableName"]["Ref"]))
            if name != "Statement":
                continue
            for statement in as_list(args):
                actions = {a for a in as_list(statement["Action"]) if a.startswith("dynamodb:")}
                if not actions:
                    continue
                for resource in as_list(statement["Resource"]):
                    grants.setdefault(table_of(resource), set()).update(actions)
    return grants, templates


def main():
    template, problems = decode_str((ROOT / "template.yaml").read_text())
    if problems:
        sys.exit(f"template.yaml does not decode: {problems}")
    resources = template["Resources"]
    failures = []
    for name, resource in resources.items():
        if resource.get("Type") != "AWS::Serverless::Function":
            continue
        grants, templates = dynamodb_grants(resource["Properties"].get("Policies", []))
        for policy, table in templates:
            if table in PRIVATE:
                failures.append(f"{name}: {policy} on {table}; list the actions instead")
        for table, actions in grants.items():
            bad = actions & FORBIDDEN
            if table.split("/")[0] in PRIVATE and bad:
                failures.append(f"{name}: {sorted(bad)} on {table}")
        if name in EXPECTED and grants != EXPECTED[name]:
            failures.append(f"{name}: DynamoDB grants {grants}, expected {EXPECTED[name]}")
    if "KbRetrieveFunction" in resources:
        policies = resources["KbRetrieveFunction"]["Properties"]["Policies"]
        grants, templates = dynamodb_grants(policies)
        if grants or templates != {("DynamoDBReadPolicy", "KnowledgeBaseTable")}:
            failures.append(f"KbRetrieveFunction: {grants} {templates}; expected read on the kb only")
    missing = set(EXPECTED) - set(resources)
    failures += [f"{name}: not in template.yaml" for name in sorted(missing)]
    if failures:
        sys.exit("IAM check failed:\n  " + "\n  ".join(failures))
    print(f"IAM check: {len(EXPECTED) + 1} functions hold exactly the DynamoDB access they use")


if __name__ == "__main__":
    main()
