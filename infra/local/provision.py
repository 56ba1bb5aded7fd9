#!/usr/bin/env python3
"""Create the template's storage resources in the local emulators.

Reads template.yaml, so the local schema cannot drift from the deployed one:
  * every AWS::DynamoDB::Table -> DynamoDB Local (keys, LSIs, GSIs, TTL as declared)
  * every AWS::SQS::Queue      -> moto (dead-letter redrive as declared)
  * every AWS::SecretsManager::Secret -> moto (local values, see LOCAL_SECRET_VALUES)
Then writes an env file mapping the template's Globals environment variables (e.g.
TOOL_CALLS_TABLE: !Ref ToolCallsTable) to the local names, plus the SDK endpoint overrides.

Idempotent: existing resources are kept, so a second run is fast and keeps data.
"""

import argparse
import json
import os
import secrets
import shlex
import sys

import boto3
import yaml
from botocore.exceptions import ClientError


class CfnLoader(yaml.SafeLoader):
    """SafeLoader that turns CloudFormation short tags (!Ref X) into {"Ref": X} dicts."""


def _cfn_tag(loader, tag_suffix, node):
    name = "Ref" if tag_suffix == "Ref" else f"Fn::{tag_suffix}"
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
        if tag_suffix == "GetAtt":
            value = value.split(".", 1)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)
    return {name: value}


CfnLoader.add_multi_constructor("!", _cfn_tag)


def local_secret_values(run_dir):
    """Secret values for local use: real keys when the developer exported them, else fakes.

    The JWT key is random per machine and kept in .local/run so dev tokens stay valid.
    """
    jwt_file = os.path.join(run_dir, "jwt-secret")
    if not os.path.exists(jwt_file):
        with open(jwt_file, "w", encoding="utf-8") as f:
            f.write(secrets.token_urlsafe(48))
        os.chmod(jwt_file, 0o600)
    with open(jwt_file, encoding="utf-8") as f:
        jwt_secret = f.read().strip()
    return {
        "OpenAiApiKeySecret": os.environ.get("OPENAI_API_KEY", "local-fake-openai-key"),
        "SeatsAeroApiKeySecret": os.environ.get("SEATSAERO_API_KEY", "local-fake-seatsaero-key"),
        "AmadeusCredentialsSecret": json.dumps(
            {
                "client_id": os.environ.get("AMADEUS_CLIENT_ID", "local-fake-client-id"),
                "client_secret": os.environ.get("AMADEUS_CLIENT_SECRET", "local-fake-client-secret"),
            }
        ),
        "AmadeusTokenSecret": "{}",
        "DuffelTokenSecret": os.environ.get("DUFFEL_TOKEN", "duffel_test_local-fake-token"),
        "JwtSigningSecret": jwt_secret,
    }


# The secrets a developer's exported key fills, by the variable that holds it.
SUPPLIED_BY = {
    "OpenAiApiKeySecret": "OPENAI_API_KEY",
    "SeatsAeroApiKeySecret": "SEATSAERO_API_KEY",
    "AmadeusCredentialsSecret": "AMADEUS_CLIENT_ID",
    "DuffelTokenSecret": "DUFFEL_TOKEN",
}


def create_table(ddb, name, props):
    spec = {
        "TableName": name,
        "AttributeDefinitions": props["AttributeDefinitions"],
        "KeySchema": props["KeySchema"],
        "BillingMode": props.get("BillingMode", "PAY_PER_REQUEST"),
    }
    if props.get("LocalSecondaryIndexes"):
        spec["LocalSecondaryIndexes"] = props["LocalSecondaryIndexes"]
    if props.get("GlobalSecondaryIndexes"):
        spec["GlobalSecondaryIndexes"] = props["GlobalSecondaryIndexes"]
    try:
        ddb.create_table(**spec)
        print(f"  table {name}: created", file=sys.stderr)
    except ClientError as e:
        if e.response["Error"]["Code"] != "ResourceInUseException":
            raise
        print(f"  table {name}: exists", file=sys.stderr)
    ddb.get_waiter("table_exists").wait(TableName=name)
    ttl = props.get("TimeToLiveSpecification")
    if ttl and ttl.get("Enabled"):
        current = ddb.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
        if current.get("TimeToLiveStatus") not in ("ENABLED", "ENABLING"):
            ddb.update_time_to_live(
                TableName=name,
                TimeToLiveSpecification={"AttributeName": ttl["AttributeName"], "Enabled": True},
            )


def condition_holds(name, conditions, params):
    """Whether the template's condition `name` holds with every parameter at its default
    (Fn::Equals, Not, And, Or, Condition over Refs to parameters); None when it reads
    anything else."""

    def value_of(node):
        if isinstance(node, dict) and "Ref" in node:
            param = params.get(node["Ref"])
            return None if param is None else str(param.get("Default", ""))
        if isinstance(node, (str, int, float)):
            return str(node)
        return None

    def holds(node):
        if isinstance(node, dict) and "Condition" in node:
            return holds(conditions.get(node["Condition"]))
        if isinstance(node, dict) and "Fn::Equals" in node:
            a, b = (value_of(v) for v in node["Fn::Equals"])
            return None if a is None or b is None else a == b
        if isinstance(node, dict) and "Fn::Not" in node:
            inner = holds(node["Fn::Not"][0])
            return None if inner is None else not inner
        if isinstance(node, dict) and ("Fn::And" in node or "Fn::Or" in node):
            parts = [holds(n) for n in node.get("Fn::And", node.get("Fn::Or"))]
            if None in parts:
                return None
            return all(parts) if "Fn::And" in node else any(parts)
        return None

    return holds(conditions.get(name))


def resolve(value, params, names, conditions=None):
    """Resolve the intrinsic functions the Globals use: Ref to a resource or a parameter, and
    If on a condition, decided with the parameters' defaults (the deployment `make dev`
    stands for); a condition that reads more than parameters takes its first branch, which
    names a resource the template may leave out (the OpenAI key on Bedrock alone): locally
    every resource exists, so that branch holds."""
    if isinstance(value, dict) and "Fn::If" in value:
        branches = value["Fn::If"]
        if len(branches) != 3:
            return None
        held = condition_holds(branches[0], conditions or {}, params)
        return resolve(branches[1 if held in (True, None) else 2], params, names, conditions)
    if isinstance(value, dict) and "Ref" in value:
        ref = value["Ref"]
        if ref in names:
            return names[ref]
        if ref in params:
            return str(params[ref].get("Default", ""))
        return None
    if isinstance(value, (str, int, float)):
        return str(value)
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--template", required=True)
    ap.add_argument("--dynamodb", required=True, help="DynamoDB Local endpoint URL")
    ap.add_argument("--moto", required=True, help="moto server endpoint URL (SQS, Secrets Manager)")
    ap.add_argument("--env-file", required=True)
    args = ap.parse_args()

    with open(args.template, encoding="utf-8") as f:
        template = yaml.load(f, Loader=CfnLoader)
    resources = template.get("Resources", {})
    params = template.get("Parameters", {})
    region = os.environ.get("AWS_REGION", "us-east-1")
    ddb = boto3.client("dynamodb", endpoint_url=args.dynamodb, region_name=region)
    sqs = boto3.client("sqs", endpoint_url=args.moto, region_name=region)
    sm = boto3.client("secretsmanager", endpoint_url=args.moto, region_name=region)
    s3 = boto3.client("s3", endpoint_url=args.moto, region_name=region)
    run_dir = os.path.dirname(os.path.abspath(args.env_file))
    os.makedirs(run_dir, exist_ok=True)
    secret_values = local_secret_values(run_dir)

    # Local name of each resource: what `!Ref` yields for it in AWS (table name, queue URL,
    # secret id). Local names are the logical ids, so they are easy to find in the emulators.
    names = {}
    queue_arns = {}
    print("provisioning from template.yaml:", file=sys.stderr)
    for logical_id, res in resources.items():
        if res.get("Type") == "AWS::DynamoDB::Table":
            create_table(ddb, logical_id, res.get("Properties", {}))
            names[logical_id] = logical_id

    # Dead-letter queues first, so redrive policies can point at their ARNs.
    queues = {k: v for k, v in resources.items() if v.get("Type") == "AWS::SQS::Queue"}
    ordered = sorted(queues, key=lambda k: "RedrivePolicy" in queues[k].get("Properties", {}))
    for logical_id in ordered:
        props = queues[logical_id].get("Properties", {})
        attributes = {}
        if "VisibilityTimeout" in props:
            attributes["VisibilityTimeout"] = str(props["VisibilityTimeout"])
        if "MessageRetentionPeriod" in props:
            attributes["MessageRetentionPeriod"] = str(props["MessageRetentionPeriod"])
        redrive = props.get("RedrivePolicy")
        if redrive:
            target = redrive["deadLetterTargetArn"]["Fn::GetAtt"][0]
            attributes["RedrivePolicy"] = json.dumps(
                {
                    "deadLetterTargetArn": queue_arns[target],
                    "maxReceiveCount": int(resolve(redrive["maxReceiveCount"], params, names)),
                }
            )
        url = sqs.create_queue(QueueName=logical_id, Attributes=attributes)["QueueUrl"]
        queue_arns[logical_id] = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]
        names[logical_id] = url
        print(f"  queue {logical_id}: {url}", file=sys.stderr)

    for logical_id, res in resources.items():
        if res.get("Type") != "AWS::SecretsManager::Secret":
            continue
        value = secret_values.get(logical_id, "local-placeholder")
        try:
            sm.create_secret(Name=logical_id, SecretString=value)
            print(f"  secret {logical_id}: created", file=sys.stderr)
        except ClientError as e:
            if e.response["Error"]["Code"] != "ResourceExistsException":
                raise
            # Keep what is stored (e.g. a cached token) unless the developer supplied a value:
            # a key exported after the emulators started takes effect at the next `make dev`.
            if os.environ.get(SUPPLIED_BY.get(logical_id, "")):
                sm.put_secret_value(SecretId=logical_id, SecretString=value)
                print(f"  secret {logical_id}: updated from {SUPPLIED_BY[logical_id]}", file=sys.stderr)
            else:
                print(f"  secret {logical_id}: exists", file=sys.stderr)
        names[logical_id] = logical_id

    # Buckets by their logical id in lower case (bucket names allow no capitals).
    for logical_id, res in resources.items():
        if res.get("Type") != "AWS::S3::Bucket":
            continue
        bucket = logical_id.lower()
        try:
            s3.create_bucket(Bucket=bucket)
            print(f"  bucket {bucket}: created", file=sys.stderr)
        except ClientError as e:
            if e.response["Error"]["Code"] not in ("BucketAlreadyOwnedByYou", "BucketAlreadyExists"):
                raise
            print(f"  bucket {bucket}: exists", file=sys.stderr)
        names[logical_id] = bucket

    env = {
        "AWS_ENDPOINT_URL_DYNAMODB": args.dynamodb,
        "AWS_ENDPOINT_URL_SQS": args.moto,
        "AWS_ENDPOINT_URL_SECRETS_MANAGER": args.moto,
        "AWS_ENDPOINT_URL_S3": args.moto,
        "AWS_ACCESS_KEY_ID": os.environ.get("AWS_ACCESS_KEY_ID", "local"),
        "AWS_SECRET_ACCESS_KEY": os.environ.get("AWS_SECRET_ACCESS_KEY", "local"),
        "AWS_REGION": region,
        "AWS_DEFAULT_REGION": region,
        "TOOL_DLQ_URL": names.get("ToolDeadLetterQueue", ""),
        # kb-ingest publishes the index snapshot here and kb-retrieve loads it.
        "KB_SNAPSHOT_BUCKET": names.get("KbSnapshotBucket", ""),
        "KB_SNAPSHOT_PREFIX": params.get("KbSnapshotPrefix", {}).get("Default", "kb-index/"),
    }
    variables = template.get("Globals", {}).get("Function", {}).get("Environment", {}).get("Variables", {})
    for var, value in variables.items():
        resolved = resolve(value, params, names, template.get("Conditions", {}))
        if resolved is not None and var != "RUST_LOG":
            env[var] = resolved
    with open(args.env_file, "w", encoding="utf-8") as f:
        f.write("# Written by infra/local/provision.py; points the project at the local emulators.\n")
        for key, value in env.items():
            f.write(f"export {key}={shlex.quote(value)}\n")
    print(f"wrote {args.env_file}", file=sys.stderr)


if __name__ == "__main__":
    main()
