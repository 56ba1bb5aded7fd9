"""Least privilege in template.yaml: per function, exactly the DynamoDB actions its code uses
on the tables it uses; no Scan, no delete and no SAM CRUD policy on chats, ledger or usage.
Amazon Bedrock: only the router and the worker may stream from a model, only with
BedrockModelId set, only that model (or its inference profile), plus the ARNs listed in
BedrockAgentModelArns (one model each); the OpenAI key is readable
only where an OpenAI endpoint is used.

Run by `make test` (infra/local/test.sh) with the local virtualenv, which has cfn-lint and
its template decoder (it understands !Ref, !GetAtt, !Sub).
"""

import re
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
            # DELETE /memory and DELETE /alerts/{id}: a user's own items, on their request.
            "dynamodb:DeleteItem",
        }
        | DELETES,
        "ChatsTable/index": {"dynamodb:Query"},
        # Records (PutItem, Query) and the daily budget's holds (UpdateItem).
        "UsageTable": {"dynamodb:PutItem", "dynamodb:Query", "dynamodb:UpdateItem"},
        "RateLimitsTable": {"dynamodb:UpdateItem"},
    },
    "ToolWorkerFunction": {
        "ToolCallsTable": LEDGER,
        "ToolCallsTable/index": LEDGER,
        # Session-state patches; fare alerts: the schedule read (Query), matches written,
        # a schedule entry replaced by the next (PutItem, DeleteItem).
        "ChatsTable": {
            "dynamodb:GetItem",
            "dynamodb:UpdateItem",
            "dynamodb:Query",
            "dynamodb:PutItem",
            "dynamodb:DeleteItem",
        },
        "UsageTable": {"dynamodb:PutItem"},
    },
    # The MCP server: the ledger and the per-user limits of its calls, nothing of chats.
    "McpServerFunction": {
        "ToolCallsTable": LEDGER,
        "ToolCallsTable/index": LEDGER,
        "RateLimitsTable": {"dynamodb:UpdateItem"},
    },
    # Only with PublicToolRoutes: each user's calls to the public routes are counted.
    "SeatsAeroSearchFunction": {"RateLimitsTable?": {"dynamodb:UpdateItem"}},
    "CashSearchFunction": {"RateLimitsTable?": {"dynamodb:UpdateItem"}},
}
# Who may call the tool routes of the IAM-only API: the router, the worker and the MCP server.
INVOKERS = {"ChatRouterFunction", "ToolWorkerFunction", "McpServerFunction"}
# Tables whose data is users' chats, calls and spend: never scanned, never granted all
# actions. (Deletes are in EXPECTED: the router's, for DELETE /chats/{id}, DELETE /memory
# and DELETE /alerts/{id}; the worker's, for fare-alert schedule entries.)
PRIVATE = {"ChatsTable", "ToolCallsTable", "UsageTable"}
FORBIDDEN = {"dynamodb:Scan", "dynamodb:*"}
SAM_DYNAMODB_POLICIES = {"DynamoDBCrudPolicy", "DynamoDBWritePolicy", "DynamoDBReadPolicy"}
# Who may call Bedrock: which actions, under which condition, on the model of which
# parameter (docs/security.md).
BEDROCK = {
    "ChatRouterFunction": ({"bedrock:InvokeModelWithResponseStream"}, "BedrockOn", "BedrockModelId"),
    "ToolWorkerFunction": ({"bedrock:InvokeModelWithResponseStream"}, "BedrockOn", "BedrockModelId"),
    # Query embeddings (Titan) only.
    "KbRetrieveFunction": ({"bedrock:InvokeModel"}, "EmbeddingsOverBedrock", "EmbeddingsModel"),
}
# Who may retrieve from a Bedrock knowledge base: (condition, parameter of its id).
KNOWLEDGE_BASE = {
    "KbRetrieveFunction": ("KbOverBedrock", "KbBedrockKnowledgeBaseId"),
}
# The further models agent profiles name: (condition, parameter), for STREAMERS only.
AGENT_MODELS = ("BedrockAgentModels", "BedrockAgentModelArns")
STREAMERS = {"ChatRouterFunction", "ToolWorkerFunction"}
# Who may read the OpenAI key, under which condition.
OPENAI_KEY = {
    "ChatRouterFunction": "OpenAiInUse",
    "ToolWorkerFunction": "OpenAiInUse",
    "KbRetrieveFunction": "EmbeddingsOverHttp",
}


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


def unconditional(policies):
    """(policy, conditional) pairs: the true branch of `!If [cond, policy, !Ref AWS::NoValue]`
    is a conditional policy."""
    for policy in policies:
        if "Fn::If" in policy:
            _, yes, no = policy["Fn::If"]
            if no != {"Ref": "AWS::NoValue"}:
                sys.exit(f"unexpected !If policy: {policy}")
            yield yes, True
        else:
            yield policy, False


def dynamodb_grants(policies):
    """{table: actions} from a function's inline statements (a table granted only under a
    condition is named with a trailing `?`); SAM DynamoDB policy templates are returned
    separately as {(template, table)}."""
    grants, templates = {}, set()
    for policy, conditional in unconditional(policies):
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
                    table = table_of(resource) + ("?" if conditional else "")
                    grants.setdefault(table, set()).update(actions)
    return grants, templates


def invokes_tool_routes(policies):
    """True when a policy grants execute-api:Invoke."""
    for policy, _ in unconditional(policies):
        for statement in as_list(policy.get("Statement", [])):
            if "execute-api:Invoke" in as_list(statement.get("Action", [])):
                return True
    return False


def conditional_statements(policies):
    """(statement, condition) for every inline statement; condition is None when the policy
    is not under `!If [condition, policy, !Ref AWS::NoValue]`."""
    for policy in policies:
        condition = None
        if "Fn::If" in policy:
            condition, policy, _ = policy["Fn::If"]
        for statement in as_list(policy.get("Statement", [])) if isinstance(policy, dict) else []:
            yield statement, condition


def sub_texts(resource):
    """The `!Sub` texts of a statement's resources, through an `!If` between lists."""
    if isinstance(resource, dict) and "Fn::If" in resource:
        _, yes, no = resource["Fn::If"]
        return sub_texts(yes) + sub_texts(no)
    if isinstance(resource, list):
        return [text for r in resource for text in sub_texts(r)]
    if isinstance(resource, dict) and "Fn::Sub" in resource:
        text = resource["Fn::Sub"]
        return [text[0] if isinstance(text, list) else text]
    return [repr(resource)]


def bedrock_access(name, policies):
    """Bedrock grants exactly as BEDROCK says: the actions, under the condition, on ARNs of
    the model parameter only (never a wildcard model or bedrock:*)."""
    failures = []
    expected_actions, expected_condition, parameter = BEDROCK.get(name, (set(), None, None))
    granted = set()
    for statement, condition in conditional_statements(policies):
        actions = {a for a in as_list(statement.get("Action", [])) if a.startswith("bedrock:")}
        if not actions:
            continue
        if "bedrock:Retrieve" in actions:
            failures += knowledge_base_grant(name, statement, condition, actions)
            continue
        granted |= actions
        if statement.get("Resource") == {"Ref": AGENT_MODELS[1]}:
            # The agent profiles' models: streaming only, by the streaming functions, and
            # only when the parameter lists any (its pattern refuses wildcard models).
            if name not in STREAMERS or actions != {"bedrock:InvokeModelWithResponseStream"}:
                failures.append(f"{name}: {sorted(actions)} on {AGENT_MODELS[1]}")
            if condition != AGENT_MODELS[0]:
                failures.append(f"{name}: {AGENT_MODELS[1]} granted under {condition}, expected {AGENT_MODELS[0]}")
            continue
        if condition != expected_condition:
            failures.append(f"{name}: Bedrock granted under {condition}, expected {expected_condition}")
        for text in sub_texts(statement.get("Resource")):
            model_arn = ":foundation-model/" in text or ":inference-profile/" in text
            if not model_arn or not text.endswith("${" + str(parameter) + "}"):
                failures.append(f"{name}: Bedrock on {text}; expected ARNs of {parameter} only")
    if granted != expected_actions:
        failures.append(f"{name}: Bedrock actions {sorted(granted)}, expected {sorted(expected_actions)}")
    return failures


def knowledge_base_grant(name, statement, condition, actions):
    """bedrock:Retrieve alone, by KNOWLEDGE_BASE's functions, under their condition, on the
    one knowledge base the parameter names."""
    if name not in KNOWLEDGE_BASE:
        return [f"{name}: bedrock:Retrieve is not expected here"]
    expected_condition, parameter = KNOWLEDGE_BASE[name]
    failures = []
    if actions != {"bedrock:Retrieve"}:
        failures.append(f"{name}: {sorted(actions)} granted with bedrock:Retrieve; expected it alone")
    if condition != expected_condition:
        failures.append(f"{name}: bedrock:Retrieve granted under {condition}, expected {expected_condition}")
    for text in sub_texts(statement.get("Resource")):
        if not text.endswith(":knowledge-base/${" + parameter + "}"):
            failures.append(f"{name}: bedrock:Retrieve on {text}; expected the knowledge base {parameter} names")
    return failures


def openai_key_access(name, policies):
    """The OpenAI key secret is readable only by OPENAI_KEY's functions, under their condition."""
    failures = []
    conditions = set()
    for policy, _ in unconditional(policies):
        if policy.get("AWSSecretsManagerGetSecretValuePolicy", {}).get("SecretArn") == {"Ref": "OpenAiApiKeySecret"}:
            conditions.add(None)
    for statement, condition in conditional_statements(policies):
        if statement.get("Resource") == {"Ref": "OpenAiApiKeySecret"}:
            conditions.add(condition)
    expected = {OPENAI_KEY[name]} if name in OPENAI_KEY else set()
    if conditions != expected:
        failures.append(f"{name}: the OpenAI key readable under {conditions}, expected {expected}")
    return failures


def mcp_client_secret_access(name, policies):
    """The external MCP servers' tokens (McpClientSecretArns) are readable by the functions
    that run their tools (the router and the worker) only, under McpClientSecrets, read-only."""
    granted = [
        (statement, condition)
        for statement, condition in conditional_statements(policies)
        if statement.get("Resource") == {"Ref": "McpClientSecretArns"}
    ]
    expected = name in STREAMERS
    failures = []
    if bool(granted) != expected:
        failures.append(f"{name}: McpClientSecretArns readable={bool(granted)}, expected {expected}")
    for statement, condition in granted:
        if condition != "McpClientSecrets" or as_list(statement.get("Action")) != ["secretsmanager:GetSecretValue"]:
            failures.append(f"{name}: {statement.get('Action')} on McpClientSecretArns under {condition}")
    return failures


def agent_model_parameter(params, conditions):
    """BedrockAgentModelArns takes model and inference-profile ARNs only, none with a wildcard
    model, defaults to none, and its condition holds only when it lists any."""
    failures = []
    param = params.get("BedrockAgentModelArns", {})
    pattern = re.compile(param.get("AllowedPattern", ""))
    allowed = [
        "",
        "arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-3-5-haiku-20241022-v1:0",
        "arn:aws:bedrock:*::foundation-model/amazon.nova-pro-v1:0",
        "arn:aws:bedrock:eu-central-1:123456789012:inference-profile/eu.amazon.nova-pro-v1:0",
    ]
    refused = [
        "*",
        "arn:aws:bedrock:us-east-1::foundation-model/*",
        "arn:aws:bedrock:us-east-1::foundation-model/anthropic.*",
        "arn:aws:bedrock:*:*:*",
        "arn:aws:s3:::bucket/object",
        "arn:aws:bedrock:us-east-1:123456789012:agent/AGENT1",
    ]
    if param.get("Type") != "CommaDelimitedList" or param.get("Default") != "":
        failures.append("BedrockAgentModelArns: a CommaDelimitedList defaulting to none")
    failures += [f"BedrockAgentModelArns: pattern refuses {a!r}" for a in allowed if not pattern.fullmatch(a)]
    failures += [f"BedrockAgentModelArns: pattern allows {r!r}" for r in refused if pattern.fullmatch(r)]
    if "BedrockAgentModelArns" not in str(conditions.get("BedrockAgentModels")):
        failures.append("Conditions.BedrockAgentModels: must test BedrockAgentModelArns")
    return failures


def bedrock_parameters(template):
    """The provider switch offers exactly openai and bedrock, and a stack on Bedrock must
    name its model (a template rule), so no role is ever granted an empty model."""
    failures = []
    params = template["Parameters"]
    if set(params.get("LlmProvider", {}).get("AllowedValues", [])) != {"openai", "bedrock"}:
        failures.append("LlmProvider: must allow exactly openai and bedrock")
    if params.get("BedrockModelId", {}).get("Default") != "":
        failures.append("BedrockModelId: no Bedrock access unless a model is chosen")
    secret = template["Resources"].get("OpenAiApiKeySecret", {})
    if secret.get("Condition") != "OpenAiKeyUsed":
        failures.append("OpenAiApiKeySecret: a stack on Bedrock alone must create no OpenAI key secret")
    used = str(template.get("Conditions", {}).get("OpenAiKeyUsed"))
    if "OpenAiInUse" not in used or "EmbeddingsOverHttp" not in used:
        failures.append("Conditions.OpenAiKeyUsed: must cover OpenAI chat and an embeddings server")
    failures += agent_model_parameter(params, template.get("Conditions", {}))
    rule = template.get("Rules", {}).get("BedrockNeedsAModel", {})
    if "BedrockModelId" not in str(rule.get("Assertions")):
        failures.append("Rules.BedrockNeedsAModel: LlmProvider bedrock must require a BedrockModelId")
    return failures


def public_routes(template):
    """The tool routes users reach with their own token exist only with PublicToolRoutes, all
    JWT-authorised; every route on the SAM-built ToolsApi is an IAM-only /internal/ route."""
    failures = []
    resources = template["Resources"]
    for name, resource in resources.items():
        if resource.get("Type", "").startswith("AWS::ApiGatewayV2::") or name == "PublicToolsApi":
            if resource.get("Condition") != "PublicToolRoutesOn":
                failures.append(f"{name}: a public-route resource without Condition PublicToolRoutesOn")
            if resource.get("Type") == "AWS::ApiGatewayV2::Route":
                if resource["Properties"].get("AuthorizationType") != "JWT":
                    failures.append(f"{name}: a public route without the JWT authorizer")
        if resource.get("Type") != "AWS::Serverless::Function":
            continue
        for event_name, event in resource["Properties"].get("Events", {}).items():
            if event.get("Type") != "HttpApi":
                continue
            props = event["Properties"]
            path = props.get("Path", "")
            authorizer = props.get("Auth", {}).get("Authorizer")
            if not path.startswith("/internal/") or authorizer != "AWS_IAM":
                failures.append(f"{name}.{event_name}: {path} is not an IAM-only /internal/ route")
    api_auth = resources["ToolsApi"]["Properties"]["Auth"]
    if api_auth.get("DefaultAuthorizer") != "AWS_IAM" or api_auth.get("Authorizers"):
        failures.append(f"ToolsApi: authorizers {api_auth}; expected IAM only")
    if template["Parameters"]["PublicToolRoutes"].get("Default") != "false":
        failures.append("PublicToolRoutes: the public routes must be off by default")
    return failures


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
            if table.split("/")[0].rstrip("?") in PRIVATE and bad:
                failures.append(f"{name}: {sorted(bad)} on {table}")
        if name in EXPECTED and grants != EXPECTED[name]:
            failures.append(f"{name}: DynamoDB grants {grants}, expected {EXPECTED[name]}")
        invokes = invokes_tool_routes(resource["Properties"].get("Policies", []))
        if invokes != (name in INVOKERS):
            failures.append(f"{name}: execute-api:Invoke granted={invokes}, expected {name in INVOKERS}")
        failures += bedrock_access(name, resource["Properties"].get("Policies", []))
        failures += openai_key_access(name, resource["Properties"].get("Policies", []))
        failures += mcp_client_secret_access(name, resource["Properties"].get("Policies", []))
    if "KbRetrieveFunction" in resources:
        policies = resources["KbRetrieveFunction"]["Properties"]["Policies"]
        grants, templates = dynamodb_grants(policies)
        if grants != {"RateLimitsTable?": {"dynamodb:UpdateItem"}} or templates != {
            ("DynamoDBReadPolicy", "KnowledgeBaseTable")
        }:
            failures.append(f"KbRetrieveFunction: {grants} {templates}; expected read on the kb only")
    failures += public_routes(template)
    failures += bedrock_parameters(template)
    missing = set(EXPECTED) - set(resources)
    failures += [f"{name}: not in template.yaml" for name in sorted(missing)]
    if failures:
        sys.exit("IAM check failed:\n  " + "\n  ".join(failures))
    print(
        f"IAM check: {len(EXPECTED) + 1} functions hold exactly the DynamoDB access they use"
        ";"
        " only the router, the worker and the MCP server may call the IAM-only tool routes"
        " and stream from Bedrock (the chosen model, with BedrockModelId set,"
        " and the agent profiles' models listed in BedrockAgentModelArns);"
        " kb-retrieve may embed with the chosen Titan model only with EmbeddingsProvider bedrock"
        " and retrieve from the one Bedrock knowledge base KbBedrockKnowledgeBaseId names, only when set;"
        " the OpenAI key only where OpenAI is used;"
        " external MCP servers' tokens only by the router and the worker;"
        " user-token routes exist only with PublicToolRoutes"
    )


if __name__ == "__main__":
    main()
