"""README.md's clean-up step ("7. **Remove it**"), run as written against the local emulators:
it must empty the knowledge-base snapshot bucket before `sam delete` (CloudFormation cannot
delete a bucket with objects, so the stack would end DELETE_FAILED), then leave no table and no
secret of the stack behind.

The test builds a scratch stack with names of its own (so it never touches what other tests
use), modelled on template.yaml: ChatsTable (kept, DeletionPolicy Retain) and RateLimitsTable
(deleted with the stack) in DynamoDB Local; KbSnapshotBucket with index snapshots under
kb-index/, and the stack's openai-api-key, seatsaero-api-key and duffel-token secrets in moto.
It runs the README block with bash, after what the earlier steps define ($REGION, $POOL_ID, and
step 5's `out`), with `aws` and `sam` on PATH being this file in shim mode
(`cleanup.py --shim aws|sam ...`, boto3):
  * S3, DynamoDB and Secrets Manager calls go to the emulators; a destructive call on anything
    outside the scratch stack is refused, and list-secrets answers with its secrets only;
  * `aws cloudformation describe-stacks` / `describe-stack-resources` answer from the scratch
    stack; `sam delete` deletes its resources as CloudFormation does (Retain kept, secrets
    scheduled for deletion, the bucket by DeleteBucket, which S3 refuses while it holds
    objects: the stack then ends DELETE_FAILED and `sam delete` exits 1);
  * `aws cognito-idp delete-user-pool` only records the call; unknown commands or options fail.
Every call is recorded (arguments, exit code, output), so the test checks the order. A second
run of the block without its `aws s3 rm` line must see `sam delete` fail: the check can fail.

RateLimitsTable has no DeletionPolicy, so `sam delete` deletes it: the block asks
(`describe-table`) before it deletes a table, and only that question may fail.

Needs the emulators (`make dev`, or `make test`, which runs this):
    .local/venv/bin/python infra/tests/cleanup.py
"""

import io
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import textwrap
import time
import tomllib
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENV_FILE = ROOT / ".local" / "run" / "env"
# The scratch stack's resources, by their logical IDs in template.yaml.
TABLES = ("ChatsTable", "RateLimitsTable")
BUCKET = "KbSnapshotBucket"
SECRETS = ("OpenAiApiKeySecret", "SeatsAeroApiKeySecret", "DuffelTokenSecret")
# Snapshot objects as kb-ingest writes them (shared/knowledge/src/kb/snapshots.rs): a folder
# per version and write; the older version superseded, not yet expired.
SNAPSHOT_KEYS = (
    "kb-index/v000000000001-1767225600000/index.kbs",
    "kb-index/v000000000002-1767312000000/index.kbs",
    "kb-index/v000000000002-1767312000000/rescore.kbs",
)


# --- the shims: `aws` and `sam`, one process per call ----------------------------------------


class Fail(Exception):
    """A shimmed command's failure: its message (stderr) and exit code."""

    def __init__(self, message, code):
        super().__init__(message)
        self.code = code


def parse(args, valued=(), flags=(), positional=0):
    """`--name value` / `--flag` options and positional arguments; anything else is refused
    the way the AWS CLI refuses an unknown option (exit 252)."""
    valued = set(valued) | {"region", "query", "output"}
    opts, rest, i = {}, [], 0
    while i < len(args):
        arg = args[i]
        name = arg[2:] if arg.startswith("--") else None
        if name in valued and i + 1 < len(args):
            opts[name] = args[i + 1]
            i += 2
        elif name in flags:
            opts[name] = True
            i += 1
        elif name is None and len(rest) < positional:
            rest.append(arg)
            i += 1
        else:
            raise Fail(f"Unknown options: {' '.join(args[i:])} (not shimmed by infra/tests/cleanup.py)", 252)
    if len(rest) != positional:
        raise Fail(f"expected {positional} positional argument(s), got {rest}", 252)
    return opts, rest


def shorthand(value):
    """The CLI's shorthand `Key=name,Values=a,b` as {"Key": "name", "Values": ["a", "b"]}."""
    out, key = {}, None
    for part in value.split(","):
        if "=" in part:
            key, part = part.split("=", 1)
            out[key] = [part] if key == "Values" else part
        elif key == "Values":
            out[key].append(part)
        else:
            raise Fail(f"cannot parse shorthand {value!r}", 252)
    return out


def text_output(value):
    """The CLI's `--output text` for what the README's queries return: scalars and lists."""
    if value is None:
        return "None"
    if isinstance(value, list):
        if all(not isinstance(v, (list, dict)) for v in value):
            return "\t".join(str(v) for v in value)
        return "\n".join(text_output(v) for v in value)
    if isinstance(value, dict):
        raise Fail("text output of an object is not shimmed; add a --query", 252)
    return str(value)


def emit(response, opts, out):
    """Prints `response` as the CLI would, after `--query`."""
    import jmespath

    response = {k: v for k, v in response.items() if k != "ResponseMetadata"}
    if "query" in opts:
        response = jmespath.search(opts["query"], response)
    if opts.get("output", "json") == "text":
        rendered = text_output(response)
    else:
        rendered = json.dumps(response, indent=4, default=str)
    if rendered:
        out.write(rendered + "\n")


def stack_of(state, name, region, operation="DescribeStacks"):
    """The scratch stack if `name` in `region` is it and it still exists."""
    stack = state["stack"]
    if name != stack["name"] or region != state["region"] or stack["status"] == "DELETE_COMPLETE":
        raise Fail(
            f"\nAn error occurred (ValidationError) when calling the {operation} operation: "
            f"Stack with id {name} does not exist\n",
            254,
        )
    return stack


def owned(state, kind, name):
    """Refuses a destructive call on anything outside the scratch stack."""
    for res in state["stack"]["resources"]:
        if res["type"] == kind and name in (res["physical"], res.get("arn")):
            return
    raise Fail(f"refused by the shim: {kind} {name} is not part of the scratch stack", 254)


def client(service, region):
    import boto3

    return boto3.client(service, region_name=region)


def aws(args, state, out):
    if len(args) < 2:
        raise Fail("usage: aws <service> <command> ...", 252)
    service, command, args = args[0], args[1], args[2:]
    if (service, command) == ("cloudformation", "describe-stacks"):
        opts, _ = parse(args, valued=["stack-name"])
        stack = stack_of(state, opts.get("stack-name"), opts.get("region"))
        outputs = [{"OutputKey": k, "OutputValue": v} for k, v in stack["outputs"].items()]
        described = {"StackName": stack["name"], "StackStatus": stack["status"], "Outputs": outputs}
        emit({"Stacks": [described]}, opts, out)
    elif (service, command) == ("cloudformation", "describe-stack-resources"):
        opts, _ = parse(args, valued=["stack-name"])
        stack = stack_of(state, opts.get("stack-name"), opts.get("region"), "DescribeStackResources")
        resources = [
            {
                "StackName": stack["name"],
                "LogicalResourceId": r["logical"],
                "PhysicalResourceId": r["physical"],
                "ResourceType": r["type"],
                "ResourceStatus": r["status"],
            }
            for r in stack["resources"]
        ]
        emit({"StackResources": resources}, opts, out)
    elif (service, command) == ("s3", "rm"):
        opts, (url,) = parse(args, flags=["recursive"], positional=1)
        bucket, _, prefix = url.removeprefix("s3://").partition("/")
        if not url.startswith("s3://") or not bucket:
            raise Fail(f"\nfatal error: not an S3 URL: {url}\n", 252)
        owned(state, "AWS::S3::Bucket", bucket)
        s3 = client("s3", opts.get("region"))
        if opts.get("recursive"):
            pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
            keys = [o["Key"] for page in pages for o in page.get("Contents", [])]
        else:
            keys = [prefix]
        for key in keys:
            s3.delete_object(Bucket=bucket, Key=key)
            out.write(f"delete: s3://{bucket}/{key}\n")
    elif (service, command) == ("dynamodb", "describe-table"):
        opts, _ = parse(args, valued=["table-name"])
        emit(client("dynamodb", opts.get("region")).describe_table(TableName=opts["table-name"]), opts, out)
    elif (service, command) == ("dynamodb", "delete-table"):
        opts, _ = parse(args, valued=["table-name"])
        owned(state, "AWS::DynamoDB::Table", opts.get("table-name"))
        emit(client("dynamodb", opts.get("region")).delete_table(TableName=opts["table-name"]), opts, out)
    elif (service, command) == ("secretsmanager", "list-secrets"):
        opts, _ = parse(args, valued=["filters"], flags=["include-planned-deletion"])
        sm = client("secretsmanager", opts.get("region"))
        params = {"IncludePlannedDeletion": bool(opts.get("include-planned-deletion"))}
        if "filters" in opts:
            params["Filters"] = [shorthand(opts["filters"])]
        pages = sm.get_paginator("list_secrets").paginate(**params)
        found = [s for page in pages for s in page["SecretList"]]
        # Only the scratch stack's: a same-prefixed secret of another run stays out of reach.
        ours = {r.get("arn") for r in state["stack"]["resources"]}
        emit({"SecretList": [s for s in found if s["ARN"] in ours]}, opts, out)
    elif (service, command) == ("secretsmanager", "delete-secret"):
        opts, _ = parse(
            args, valued=["secret-id", "recovery-window-in-days"], flags=["force-delete-without-recovery"]
        )
        owned(state, "AWS::SecretsManager::Secret", opts.get("secret-id"))
        params = {"SecretId": opts["secret-id"]}
        if opts.get("force-delete-without-recovery"):
            params["ForceDeleteWithoutRecovery"] = True
        if "recovery-window-in-days" in opts:
            params["RecoveryWindowInDays"] = int(opts["recovery-window-in-days"])
        emit(client("secretsmanager", opts.get("region")).delete_secret(**params), opts, out)
    elif (service, command) == ("cognito-idp", "delete-user-pool"):
        # No Cognito emulator: the call is recorded (by shim_main) and checked by the test.
        opts, _ = parse(args, valued=["user-pool-id"])
        if "user-pool-id" not in opts:
            raise Fail("the following arguments are required: --user-pool-id", 252)
    else:
        raise Fail(f"aws {service} {command}: not shimmed by infra/tests/cleanup.py", 252)
    return 0


def sam(args, state, out):
    """`sam delete`: the stack's resources deleted as CloudFormation deletes them."""
    from botocore.exceptions import ClientError

    if args[:1] != ["delete"]:
        raise Fail(f"sam {' '.join(args)}: not shimmed by infra/tests/cleanup.py", 2)
    opts, _ = parse(args[1:], valued=["config-env", "stack-name", "config-file"], flags=["no-prompts"])
    if not opts.get("no-prompts"):
        raise Fail("Error: sam delete would prompt; the shim needs --no-prompts", 2)
    config = tomllib.loads(Path(opts.get("config-file", "samconfig.toml")).read_text())
    env = config.get(opts.get("config-env", "default"), {})
    sections = [env.get(cmd, {}).get("parameters", {}) for cmd in ("delete", "global")]
    name = opts.get("stack-name") or next((p["stack_name"] for p in sections if "stack_name" in p), None)
    region = opts.get("region")
    try:
        stack = stack_of(state, name, region)
    except Fail:
        raise Fail(f"Error: The input stack {name} does not exist on Cloudformation", 1)
    out.write(f"\t- Deleting Cloudformation stack {name}\n")
    failed = []
    for res in reversed(stack["resources"]):
        if res["status"] in ("DELETE_COMPLETE", "DELETE_SKIPPED"):
            continue
        if res["retain"]:
            res["status"] = "DELETE_SKIPPED"
            continue
        try:
            if res["type"] == "AWS::DynamoDB::Table":
                client("dynamodb", region).delete_table(TableName=res["physical"])
            elif res["type"] == "AWS::SecretsManager::Secret":
                # Scheduled for deletion, with Secrets Manager's default recovery window.
                client("secretsmanager", region).delete_secret(SecretId=res["arn"])
            elif res["type"] == "AWS::S3::Bucket":
                client("s3", region).delete_bucket(Bucket=res["physical"])
            res["status"] = "DELETE_COMPLETE"
        except ClientError as e:
            res["status"] = "DELETE_FAILED"
            error = e.response["Error"]
            failed.append(f"{res['logical']}: {error['Message']} ({error['Code']})")
    if failed:
        stack["status"] = "DELETE_FAILED"
        raise Fail(
            f"Error: Failed to delete stack {name}: Waiter StackDeleteComplete failed: stack status "
            f"DELETE_FAILED. The following resource(s) failed to delete: {'; '.join(failed)}",
            1,
        )
    stack["status"] = "DELETE_COMPLETE"
    out.write("\nDeleted successfully\n")
    return 0


def shim_main(tool, args):
    """One shimmed call: runs it against the emulators and the scratch stack's state file,
    records it, and exits as the real tool would."""
    from botocore.exceptions import ClientError

    state_file = Path(os.environ["CLEANUP_SHIM_STATE"])
    state = json.loads(state_file.read_text())
    out, err = io.StringIO(), io.StringIO()
    try:
        code = (aws if tool == "aws" else sam)(args, state, out)
    except Fail as e:
        err.write(f"{e}\n")
        code = e.code
    except ClientError as e:
        op, error = e.operation_name, e.response["Error"]
        prefix = "fatal error: " if args[:1] == ["s3"] else ""
        err.write(
            f"\n{prefix}An error occurred ({error['Code']}) when calling the {op} operation: {error['Message']}\n"
        )
        code = 1 if prefix else 254
    state_file.write_text(json.dumps(state))
    record = {"tool": tool, "argv": args, "rc": code, "stdout": out.getvalue(), "stderr": err.getvalue()}
    with open(os.environ["CLEANUP_SHIM_LOG"], "a", encoding="utf-8") as log:
        log.write(json.dumps(record) + "\n")
    sys.stdout.write(out.getvalue())
    sys.stderr.write(err.getvalue())
    return code


# --- the test ---------------------------------------------------------------------------------


def emulator_env():
    """The `export` lines of .local/run/env (endpoints, region, dummy credentials)."""
    if not ENV_FILE.exists():
        sys.exit(f"cleanup: {ENV_FILE.relative_to(ROOT)} is missing; start the emulators (make dev)")
    env = {}
    for line in ENV_FILE.read_text().splitlines():
        if line.startswith("export "):
            key, _, value = line.removeprefix("export ").partition("=")
            env[key] = shlex.split(value)[0] if value else ""
    return env


def readme_block(readme, step):
    """The first ```sh aws block after the numbered step starting with `step`, dedented."""
    start = readme.index(step)
    match = re.compile(r"^[ \t]*```sh aws\n(.*?)^[ \t]*```$", re.M | re.S).search(readme, start)
    return textwrap.dedent(match.group(1))


def scratch_stack(template, name, region):
    """The state the shims share: a stack named `name` with unique physical names."""
    run = uuid.uuid4().hex[:12]
    resources = template["Resources"]
    stack = {"name": name, "status": "CREATE_COMPLETE", "resources": [], "outputs": {}}
    for logical in TABLES + (BUCKET,) + SECRETS:
        res = resources[logical]
        if res["Type"] == "AWS::DynamoDB::Table":
            physical = f"{name}-{logical}-{run.upper()}"
        elif res["Type"] == "AWS::S3::Bucket":
            physical = f"{name}-{logical.lower()}-{run}"
        else:
            secret = res["Properties"]["Name"]["Fn::Sub"].replace("${AWS::StackName}", name)
            physical = f"{secret}-{run}"
        stack["resources"].append(
            {
                "logical": logical,
                "type": res["Type"],
                "physical": physical,
                "retain": res.get("DeletionPolicy") == "Retain",
                "status": "CREATE_COMPLETE",
            }
        )
    physical = {r["logical"]: r["physical"] for r in stack["resources"]}
    for key, output in template.get("Outputs", {}).items():
        value = output.get("Value")
        if isinstance(value, dict) and value.get("Ref") in physical:
            stack["outputs"][key] = physical[value["Ref"]]
    return {"region": region, "stack": stack}


def create(state):
    """Creates the scratch stack's resources in the emulators."""
    import boto3

    region = state["region"]
    for res in state["stack"]["resources"]:
        if res["type"] == "AWS::DynamoDB::Table":
            ddb = boto3.client("dynamodb", region_name=region)
            ddb.create_table(
                TableName=res["physical"],
                KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                BillingMode="PAY_PER_REQUEST",
            )
            ddb.put_item(TableName=res["physical"], Item={"pk": {"S": "USER#demo"}})
        elif res["type"] == "AWS::S3::Bucket":
            s3 = boto3.client("s3", region_name=region)
            s3.create_bucket(Bucket=res["physical"])
            for key in SNAPSHOT_KEYS:
                s3.put_object(Bucket=res["physical"], Key=key, Body=b"snapshot")
        else:
            sm = boto3.client("secretsmanager", region_name=region)
            res["arn"] = sm.create_secret(Name=res["physical"], SecretString="replace-me")["ARN"]


def leftovers(state):
    """What of the scratch stack still exists in the emulators, as readable strings."""
    import boto3
    from botocore.exceptions import ClientError

    region, left = state["region"], []
    for res in state["stack"]["resources"]:
        try:
            if res["type"] == "AWS::DynamoDB::Table":
                boto3.client("dynamodb", region_name=region).describe_table(TableName=res["physical"])
                left.append(f"table {res['logical']}")
            elif res["type"] == "AWS::S3::Bucket":
                s3 = boto3.client("s3", region_name=region)
                count = s3.list_objects_v2(Bucket=res["physical"]).get("KeyCount", 0)
                left.append(f"bucket {res['logical']} ({count} objects)")
            else:
                boto3.client("secretsmanager", region_name=region).describe_secret(SecretId=res["arn"])
                left.append(f"secret {res['physical']}")
        except ClientError as e:
            if e.response["Error"]["Code"] not in ("ResourceNotFoundException", "NoSuchBucket", "404"):
                raise
    return left


def remove(state):
    """Deletes whatever of the scratch stack a run left behind."""
    import boto3
    from botocore.exceptions import ClientError

    region = state["region"]
    for res in state["stack"]["resources"]:
        try:
            if res["type"] == "AWS::DynamoDB::Table":
                boto3.client("dynamodb", region_name=region).delete_table(TableName=res["physical"])
            elif res["type"] == "AWS::S3::Bucket":
                bucket = boto3.resource("s3", region_name=region).Bucket(res["physical"])
                bucket.objects.all().delete()
                bucket.delete()
            elif "arn" in res:
                boto3.client("secretsmanager", region_name=region).delete_secret(
                    SecretId=res["arn"], ForceDeleteWithoutRecovery=True
                )
        except ClientError:
            pass


def run_block(block, earlier, state, env):
    """Runs `earlier` + `block` with bash, the shims first on PATH; returns the exit code,
    the output and the recorded calls."""
    with tempfile.TemporaryDirectory(prefix="cleanup-test-") as tmp:
        tmp = Path(tmp)
        (tmp / "bin").mkdir()
        for tool in ("aws", "sam"):
            shim = tmp / "bin" / tool
            this = shlex.quote(str(Path(__file__).resolve()))
            shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} {this} --shim {tool} "$@"\n')
            shim.chmod(0o755)
        (tmp / "state.json").write_text(json.dumps(state))
        (tmp / "block.sh").write_text(earlier + block)
        env = {
            **env,
            "PATH": f"{tmp / 'bin'}{os.pathsep}{env['PATH']}",
            "CLEANUP_SHIM_STATE": str(tmp / "state.json"),
            "CLEANUP_SHIM_LOG": str(tmp / "calls.jsonl"),
        }
        run = subprocess.run(
            ["bash", str(tmp / "block.sh")],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=180,
        )
        log = tmp / "calls.jsonl"
        calls = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
        state.update(json.loads((tmp / "state.json").read_text()))
    return run.returncode, run.stdout, calls


def command(call):
    """`aws s3 rm`, `sam delete`: the tool and its first words."""
    words = call["argv"][:1] if call["tool"] == "sam" else call["argv"][:2]
    return " ".join([call["tool"], *words])


def transcript(output, calls):
    lines = [f"  $ {call['tool']} {shlex.join(call['argv'])}  -> {call['rc']}" for call in calls]
    shown = textwrap.indent(output or "(none)", "  ")
    return f"block output:\n{shown}\nshimmed calls:\n" + "\n".join(lines)


def main():
    from cfnlint.decode import decode_str

    template, problems = decode_str((ROOT / "template.yaml").read_text())
    if problems:
        sys.exit(f"template.yaml does not decode: {problems}")
    readme = (ROOT / "README.md").read_text()
    block = readme_block(readme, "7. **Remove it**")
    step5 = readme_block(readme, "5. **The knowledge base.**")
    out_fn = re.search(r"^out\(\) \{.*?; \}$", step5, re.M | re.S)
    if out_fn is None:
        sys.exit("cleanup: README.md step 5 no longer defines `out() { ...; }`")
    samconfig = tomllib.loads((ROOT / "samconfig.toml").read_text())
    stack_name = samconfig["dev"]["global"]["parameters"]["stack_name"]

    env = {**os.environ, **emulator_env()}
    os.environ.update(env)
    region = env["AWS_REGION"]
    pool_id = f"{region}_CleanupTest"
    # What steps 2 and 5 define: the region, the user pool's ID and `out`.
    earlier = f"REGION={shlex.quote(region)}\nPOOL_ID={shlex.quote(pool_id)}\n{out_fn.group(0)}\n"

    failures = []

    def expect(label, condition):
        if not condition:
            failures.append(label)

    started = time.monotonic()
    # The README's block as written.
    state = scratch_stack(template, stack_name, region)
    try:
        create(state)
    except Exception as e:  # the emulators are down or refuse: say so, not a traceback
        remove(state)
        sys.exit(f"cleanup: cannot create the scratch stack in the emulators ({e}); are they running?")
    try:
        code, output, calls = run_block(block, earlier, state, env)
        before = len(failures)
        names = [command(c) for c in calls]
        bucket = state["stack"]["outputs"].get("KbSnapshotBucketName")
        expect("the block exits 0", code == 0)
        both = "aws s3 rm" in names and "sam delete" in names
        expect("the block calls `aws s3 rm` and `sam delete`", both)
        if both:
            rm, delete = calls[names.index("aws s3 rm")], calls[names.index("sam delete")]
            in_order = names.index("aws s3 rm") < names.index("sam delete")
            expect("the bucket is emptied before `sam delete`", in_order)
            expect(
                f"`aws s3 rm --recursive` empties s3://{bucket} ({len(SNAPSHOT_KEYS)} objects)",
                rm["rc"] == 0 and f"s3://{bucket}" in rm["argv"] and "--recursive" in rm["argv"]
                and rm["stdout"].count("delete: ") == len(SNAPSHOT_KEYS),
            )
            expect("`sam delete` succeeds", delete["rc"] == 0)
        # Every call succeeds, but for the describe-table of a table the stack deletion removed
        # (the block asks before it deletes).
        tables = [r for r in state["stack"]["resources"] if r["type"] == "AWS::DynamoDB::Table"]
        gone = {r["physical"] for r in tables if not r["retain"]}
        already_gone = [
            c for c in calls
            if c["rc"] != 0 and command(c) == "aws dynamodb describe-table"
            and "ResourceNotFoundException" in c["stderr"] and set(c["argv"]) & gone
        ]
        failed = [c for c in calls if c["rc"] != 0 and c not in already_gone]
        expect("every shimmed call succeeds", not failed)
        retained = [r["physical"] for r in state["stack"]["resources"] if r["retain"]]
        deleted_tables = {
            c["argv"][c["argv"].index("--table-name") + 1]
            for c in calls if command(c) == "aws dynamodb delete-table" and c["rc"] == 0
        }
        expect("the block deletes the retained table", set(retained) <= deleted_tables)
        forced = [c for c in calls if command(c) == "aws secretsmanager delete-secret" and c["rc"] == 0]
        expect(f"the block force-deletes the {len(SECRETS)} secrets", len(forced) == len(SECRETS))
        pools = [c for c in calls if command(c) == "aws cognito-idp delete-user-pool"]
        expect(
            "the block deletes the user pool $POOL_ID in $REGION",
            len(pools) == 1 and pools[0]["argv"][2:] == ["--region", region, "--user-pool-id", pool_id],
        )
        left = leftovers(state)
        expect(f"nothing of the stack is left (left: {left})", not left)
        if len(failures) > before:
            failures.append(transcript(output, calls))
    finally:
        remove(state)

    # The same block without `aws s3 rm`: `sam delete` must fail on the bucket.
    lines = block.splitlines(keepends=True)
    without_rm = "".join(line for line in lines if not line.startswith("aws s3 rm "))
    expect("the block has exactly one `aws s3 rm` line", len(lines) - len(without_rm.splitlines()) == 1)
    state = scratch_stack(template, stack_name, region)
    create(state)
    try:
        code, output, calls = run_block(without_rm, earlier, state, env)
        before = len(failures)
        deletes = [c for c in calls if command(c) == "sam delete"]
        expect(
            "without `aws s3 rm`, `sam delete` fails: DELETE_FAILED, bucket not empty",
            len(deletes) == 1 and deletes[0]["rc"] != 0
            and "DELETE_FAILED" in deletes[0]["stderr"] and "not empty" in deletes[0]["stderr"],
        )
        left = leftovers(state)
        expect(
            f"without `aws s3 rm`, the bucket and its objects stay (left: {left})",
            f"bucket {BUCKET} ({len(SNAPSHOT_KEYS)} objects)" in left,
        )
        if len(failures) > before:
            failures.append(transcript(output, calls))
    finally:
        remove(state)

    if failures:
        sys.exit("README clean-up check failed:\n- " + "\n- ".join(failures))
    print(
        f"README clean-up: the block ran against the emulators in {time.monotonic() - started:.1f} s;"
        f" {len(SNAPSHOT_KEYS)} snapshot objects removed before `sam delete`, which succeeded;"
        f" {len(TABLES)} tables, the bucket and {len(SECRETS)} secrets gone, the user pool's deletion called;"
        " without `aws s3 rm`, `sam delete` fails DELETE_FAILED (bucket not empty)"
    )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--shim"]:
        sys.exit(shim_main(sys.argv[2], sys.argv[3:]))
    main()
