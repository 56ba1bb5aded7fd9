"""What an on-call engineer needs from template.yaml, checked: every function logs to a log
group of its own with a retention, has an error-rate and a throttle alarm, and may have
reserved concurrency; the dead-letter queue and the turn duration have alarms; every alarm
goes to the optional e-mail topic; the dashboard shows every function and every metric the
functions emit (`Metric` in shared/lambda-kit/src/metrics.rs), with alarms on the LLM error rate and the
turn duration; the router's CORS origins come from a parameter, never `*`. CodeDeploy's
pre-traffic hooks (functions/deploy-hook) run only during a deploy and report to CodeDeploy:
they need a log group with retention, no alarms, reserved concurrency or dashboard.

Run: .local/venv/bin/python infra/tests/ops.py (part of `make test`).
"""

import sys
from pathlib import Path

from cfnlint.decode import decode_str

ROOT = Path(__file__).resolve().parents[2]


def ref(value):
    """The name a `!Ref` (or `{"Ref": …}`) points at, else None."""
    return value.get("Ref") if isinstance(value, dict) else None


def alarm_subjects(alarm):
    """The function names an alarm's metrics are about (by `!Ref`)."""
    props = alarm["Properties"]
    dims = list(props.get("Dimensions", []))
    for metric in props.get("Metrics", []):
        dims += metric.get("MetricStat", {}).get("Metric", {}).get("Dimensions", [])
    return {ref(d["Value"]) for d in dims if ref(d.get("Value"))}


def emitted_metrics():
    """The metric names the functions emit: the variants of `Metric` in shared/lambda-kit/src/metrics.rs."""
    source = (ROOT / "shared/lambda-kit/src/metrics.rs").read_text()
    body = source.split("pub enum Metric {", 1)[1].split("\n}", 1)[0]
    return [line.strip().rstrip(",") for line in body.splitlines()
            if line.strip() and not line.strip().startswith("//")]


def deploy_hooks(functions):
    """The functions named as a `DeploymentPreference.Hooks` of another function."""
    hooks = set()
    for fn in functions.values():
        for hook in fn["Properties"].get("DeploymentPreference", {}).get("Hooks", {}).values():
            hooks.add(ref(hook))
    return hooks


def check(template):
    resources = template["Resources"]
    of_type = lambda t: {n: r for n, r in resources.items() if r["Type"] == t}
    functions = of_type("AWS::Serverless::Function")
    groups = of_type("AWS::Logs::LogGroup")
    alarms = of_type("AWS::CloudWatch::Alarm")
    failures = []
    hooks = deploy_hooks(functions)
    for name, fn in functions.items():
        props = fn["Properties"]
        group = ref(props.get("LoggingConfig", {}).get("LogGroup"))
        if group not in groups:
            failures.append(f"{name}: LoggingConfig.LogGroup is not a log group of the template")
        elif ref(groups[group]["Properties"].get("RetentionInDays")) != "LogRetentionDays":
            failures.append(f"{group}: RetentionInDays is not the LogRetentionDays parameter")
        if name in hooks:
            continue
        if "ReservedConcurrentExecutions" not in props:
            failures.append(f"{name}: no ReservedConcurrentExecutions (parameter)")
        about = [a for a in alarms.values() if name in alarm_subjects(a)]
        metrics = {a["Properties"].get("MetricName") for a in about}
        if "Throttles" not in metrics:
            failures.append(f"{name}: no throttle alarm")
        if not any("Metrics" in a["Properties"] for a in about):
            failures.append(f"{name}: no error-rate alarm")
    dlq = [a for a in alarms.values()
           if a["Properties"].get("Namespace") == "AWS/SQS"
           and any("ToolDeadLetterQueue" in str(d["Value"]) for d in a["Properties"].get("Dimensions", []))]
    if not dlq:
        failures.append("no alarm on the dead-letter queue")
    for name, alarm in alarms.items():
        actions = alarm["Properties"].get("AlarmActions")
        if not (isinstance(actions, dict) and "Fn::If" in actions
                and actions["Fn::If"][0] == "HasAlarmEmail"):
            failures.append(f"{name}: AlarmActions do not go to the alarm topic when AlarmEmail is set")
    boards = of_type("AWS::CloudWatch::Dashboard")
    body = str(boards)
    for name in set(functions) - hooks:
        if f"${{{name}}}" not in body:
            failures.append(f"the dashboard does not show {name}")
    text = "".join(str(b["Properties"]["DashboardBody"].get("Fn::Sub", "")) for b in boards.values())
    for metric in emitted_metrics():
        if f'MetricName=\\"{metric}\\"' not in text and f'"{metric}", "function"' not in text:
            failures.append(f"the dashboard does not show the metric {metric} (shared/lambda-kit/src/metrics.rs)")
    own = [a["Properties"] for a in alarms.values()]
    metric_names = {a.get("MetricName") for a in own}
    for props in own:
        for metric in props.get("Metrics", []):
            metric_names.add(metric.get("MetricStat", {}).get("Metric", {}).get("MetricName"))
    for needed in ("LlmErrors", "TurnDuration"):
        if needed not in metric_names:
            failures.append(f"no alarm on {needed}")
    variables = template.get("Globals", {}).get("Function", {}).get("Environment", {}).get("Variables", {})
    if "METRICS_NAMESPACE" not in variables:
        failures.append("Globals set no METRICS_NAMESPACE: the alarms and the dashboard would miss the metrics")
    cors = functions["ChatRouterFunction"]["Properties"]["FunctionUrlConfig"]["Cors"]["AllowOrigins"]
    if ref(cors) != "CorsAllowOrigins":
        failures.append(f"the router's CORS origins are {cors}, not the CorsAllowOrigins parameter")
    return functions, alarms, failures


def main():
    template, problems = decode_str((ROOT / "template.yaml").read_text())
    if problems:
        sys.exit(f"template.yaml does not decode: {problems}")
    functions, alarms, failures = check(template)
    if failures:
        sys.exit("operations check failed:\n  " + "\n  ".join(failures))
    hooks = deploy_hooks(functions)
    print(f"operations check: {len(functions) - len(hooks)} functions with log retention, error-rate and "
          f"throttle alarms and reserved concurrency, {len(hooks)} deploy hooks with log retention; "
          f"{len(alarms)} alarms to the alarm topic; "
          "dashboard of every function and EMF metric; CORS from a parameter")


if __name__ == "__main__":
    main()
