"""Gradual deployments in template.yaml, checked: every function (the deploy hooks aside)
publishes the alias `live` and has a DeploymentPreference whose type is the DeploymentType
parameter, whose rollback alarms exist and are about that function, and whose pre-traffic hook
is a deploy-hook function named CodeDeployHook_* that is given the function's new version and
may invoke exactly those versions. After SAM's transform, the Function URL, the API routes
(ToolsApi and the public ones), the permissions, the SQS mapping and the schedule call the
aliases, and each alias moves through CodeDeploy with automatic rollback. samconfig.toml
deploys dev all at once and prod as a canary.

Run: .local/venv/bin/python infra/tests/deploy.py (part of `make test`).
"""

import copy
import re
import sys
import tomllib
from pathlib import Path

from cfnlint.decode import decode_str
from cfnlint.template.transforms._sam import Transform

ROOT = Path(__file__).resolve().parents[2]
ALIAS = "live"
HOOK_BINARY = "deploy-hook"
HOOK_ACTIONS = {"codedeploy:PutLifecycleEventHookExecutionStatus", "lambda:InvokeFunction"}
# Traffic-shifting types the parameter must offer (docs/configuration.md).
TYPES = {"AllAtOnce", "Canary10Percent5Minutes", "Linear10PercentEvery1Minute"}
STAGE_TYPES = {"dev": "AllAtOnce", "prod": "Canary10Percent5Minutes"}


def ref(value):
    """The name a `!Ref` (or `{"Ref": …}`) points at, else None."""
    return value.get("Ref") if isinstance(value, dict) else None


def as_list(value):
    return value if isinstance(value, list) else [value]


def binary(fn):
    return fn.get("Metadata", {}).get("BuildProperties", {}).get("Binary")


def alarm_subjects(alarm):
    """What an alarm's metrics are about: function names by `!Ref`, and the `function`
    dimension of the functions' own (EMF) metrics."""
    props = alarm["Properties"]
    dims = list(props.get("Dimensions", []))
    for metric in props.get("Metrics", []):
        dims += metric.get("MetricStat", {}).get("Metric", {}).get("Dimensions", [])
    return {ref(d["Value"]) or d["Value"] for d in dims if d.get("Name") in ("FunctionName", "function")}


def hook_variables():
    """The `*_VERSION` variables deploy-hook reads (`Target::variable` in checks.rs)."""
    source = (ROOT / "functions/deploy-hook/src/checks.rs").read_text()
    return set(re.findall(r'"([A-Z_]+_VERSION)"', source))


def check_source(template):
    resources = template["Resources"]
    functions = {n: r for n, r in resources.items() if r["Type"] == "AWS::Serverless::Function"}
    alarms = {n: r for n, r in resources.items() if r["Type"] == "AWS::CloudWatch::Alarm"}
    hooks = {n for n, fn in functions.items() if binary(fn) == HOOK_BINARY}
    failures = []
    param = template["Parameters"].get("DeploymentType", {})
    if param.get("Default") != "AllAtOnce" or not TYPES <= set(param.get("AllowedValues", [])):
        failures.append(f"DeploymentType: default {param.get('Default')}, allowed "
                        f"{param.get('AllowedValues')}; expected default AllAtOnce and {sorted(TYPES)}")
    if template.get("Globals", {}).get("Function", {}).get("AutoPublishAlias") != ALIAS:
        failures.append(f"Globals.Function.AutoPublishAlias is not {ALIAS}")
    if not hooks:
        failures.append(f"no function builds {HOOK_BINARY}")
    known = hook_variables()
    hooked = {}
    for name, fn in functions.items():
        props = fn["Properties"]
        if props.get("AutoPublishAlias", ALIAS) != ALIAS:
            failures.append(f"{name}: AutoPublishAlias {props['AutoPublishAlias']}, not {ALIAS}")
        if name in hooks:
            if "DeploymentPreference" in props:
                failures.append(f"{name}: a deploy hook with a DeploymentPreference of its own")
            continue
        pref = props.get("DeploymentPreference")
        if not pref:
            failures.append(f"{name}: no DeploymentPreference")
            continue
        if ref(pref.get("Type")) != "DeploymentType":
            failures.append(f"{name}: DeploymentPreference.Type is not the DeploymentType parameter")
        named = [ref(a) for a in pref.get("Alarms", [])]
        if not named:
            failures.append(f"{name}: no rollback alarms")
        for alarm in named:
            if alarm not in alarms:
                failures.append(f"{name}: rollback alarm {alarm} is not an alarm of the template")
            elif not alarm_subjects(alarms[alarm]) & {name, binary(fn)}:
                failures.append(f"{name}: rollback alarm {alarm} is about {alarm_subjects(alarms[alarm])}")
        own_error_rate = [a for a, r in alarms.items()
                          if "Metrics" in r["Properties"] and name in alarm_subjects(r)]
        if not set(own_error_rate) & set(named):
            failures.append(f"{name}: its error-rate alarm {own_error_rate} is no rollback trigger")
        hook = ref(pref.get("Hooks", {}).get("PreTraffic"))
        if hook not in hooks:
            failures.append(f"{name}: PreTraffic hook {hook} is not a {HOOK_BINARY} function")
            continue
        hooked.setdefault(hook, set()).add(name)
    for hook in hooks:
        props = functions[hook]["Properties"]
        fn_name = props.get("FunctionName", {})
        text = fn_name.get("Fn::Sub", "") if isinstance(fn_name, dict) else str(fn_name)
        if not text.startswith("CodeDeployHook_"):
            failures.append(f"{hook}: FunctionName {fn_name} does not start with CodeDeployHook_ "
                            "(CodeDeploy's role may not invoke it)")
        variables = props.get("Environment", {}).get("Variables", {})
        given = {}
        for var, value in variables.items():
            target = ref(value) or ""
            if var.endswith("_VERSION"):
                if var not in known:
                    failures.append(f"{hook}: {var} is not a variable deploy-hook reads ({sorted(known)})")
                if not target.endswith(".Version"):
                    failures.append(f"{hook}: {var} is not a function's new version (!Ref X.Version)")
                given[target.removesuffix(".Version")] = var
        wanted = hooked.get(hook, set())
        if set(given) != wanted:
            failures.append(f"{hook}: checks {sorted(given)}, but is the hook of {sorted(wanted)}")
        actions, invokable = set(), set()
        for policy in props.get("Policies", []):
            if set(policy) != {"Statement"}:
                failures.append(f"{hook}: policy {list(policy)}; only inline statements")
                continue
            for statement in as_list(policy["Statement"]):
                stmt_actions = set(as_list(statement["Action"]))
                actions |= stmt_actions
                if "lambda:InvokeFunction" in stmt_actions:
                    invokable |= {ref(r) for r in as_list(statement["Resource"])}
        if actions != HOOK_ACTIONS:
            failures.append(f"{hook}: actions {sorted(actions)}, expected {sorted(HOOK_ACTIONS)}")
        if invokable != {f"{fn}.Version" for fn in wanted}:
            failures.append(f"{hook}: may invoke {sorted(map(str, invokable))}, expected the new versions of {sorted(wanted)}")
    return functions, hooks, failures


def check_transformed(template, functions, hooks):
    """After SAM's transform: everything that calls a function calls its alias."""
    transform = Transform("template.yaml", copy.deepcopy(template), "us-east-1")
    problems = transform.transform_template()
    if problems:
        return [f"SAM transform failed: {problems}"]
    resources = transform.template()["Resources"]
    aliases = {f"{name}Alias{ALIAS}": name for name in functions}
    checked = set(functions) - hooks
    failures = []

    def target(value):
        """The function an ARN-valued property names, and whether through its alias."""
        name = ref(value) or (value.get("Fn::GetAtt", [None])[0] if isinstance(value, dict) else None)
        if name in aliases:
            return aliases[name], True
        return name, False

    for name in checked:
        alias = resources.get(f"{name}Alias{ALIAS}")
        if not alias or alias["Type"] != "AWS::Lambda::Alias":
            failures.append(f"{name}: no alias {ALIAS} after the transform")
            continue
        update = alias.get("UpdatePolicy", {}).get("CodeDeployLambdaAliasUpdate", {})
        if ref(update.get("BeforeAllowTrafficHook")) not in hooks:
            failures.append(f"{name}: its alias moves without the pre-traffic hook")
        group = resources.get(f"{name}DeploymentGroup", {}).get("Properties", {})
        rollback = group.get("AutoRollbackConfiguration", {})
        if not rollback.get("Enabled") or "DEPLOYMENT_STOP_ON_ALARM" not in rollback.get("Events", []):
            failures.append(f"{name}: its deployment group does not roll back on an alarm")
        if not group.get("AlarmConfiguration", {}).get("Enabled"):
            failures.append(f"{name}: its deployment group watches no alarms")
    callers = {
        "AWS::Lambda::Url": "TargetFunctionArn",
        "AWS::Lambda::Permission": "FunctionName",
        "AWS::Lambda::EventSourceMapping": "FunctionName",
        "AWS::ApiGatewayV2::Integration": "IntegrationUri",
    }
    seen = set()
    for rname, resource in resources.items():
        props = resource.get("Properties", {})
        values = []
        if resource["Type"] in callers:
            values.append(props.get(callers[resource["Type"]]))
        if resource["Type"] == "AWS::Events::Rule":
            values += [t.get("Arn") for t in props.get("Targets", [])]
        for value in values:
            fn, via_alias = target(value)
            if fn in checked:
                seen.add(resource["Type"])
                if not via_alias:
                    failures.append(f"{rname} ({resource['Type']}): calls {fn} itself, not its alias")
    missing = set(callers) - seen
    failures += [f"no {t} calls a function: the check would pass vacuously" for t in sorted(missing)]
    body = str(resources["ToolsApi"]["Properties"].get("Body", {}))
    uris = re.findall(r"functions/\$\{(\w+)\}/invocations", body)
    if not uris:
        failures.append("ToolsApi: no Lambda integrations found in its body")
    for uri in uris:
        if uri not in aliases:
            failures.append(f"ToolsApi: a route calls {uri}, not an alias")
    return failures


def check_samconfig():
    failures = []
    config = tomllib.loads((ROOT / "samconfig.toml").read_text())
    for env, wanted in STAGE_TYPES.items():
        overrides = config.get(env, {}).get("deploy", {}).get("parameters", {}).get("parameter_overrides", "")
        if f"DeploymentType={wanted}" not in overrides.split():
            failures.append(f"samconfig.toml [{env}.deploy.parameters]: DeploymentType is not {wanted}")
    return failures


def main():
    template, problems = decode_str((ROOT / "template.yaml").read_text())
    if problems:
        sys.exit(f"template.yaml does not decode: {problems}")
    functions, hooks, failures = check_source(template)
    failures += check_transformed(template, functions, hooks)
    failures += check_samconfig()
    if failures:
        sys.exit("deployment check failed:\n  " + "\n  ".join(failures))
    print(f"deployment check: {len(functions) - len(hooks)} functions shift traffic on alias "
          f"{ALIAS} by the DeploymentType parameter, roll back on their own alarms and pass "
          f"{len(hooks)} CodeDeployHook_ pre-traffic hooks first; URL, routes, permissions, "
          "queue and schedule call the aliases; dev all at once, prod canary")


if __name__ == "__main__":
    main()
