"""What template.yaml decides, as JSON for the generated tables of the docs (`make docs`,
tools/docs-check/tests/integration/generated.rs): each function with its log group,
alarms and IAM permissions, each secret with the variable that names it and the functions
that may read it, and each environment variable with the template parameters it comes from.

Run: .local/venv/bin/python infra/docs/template_facts.py (the local virtualenv has cfn-lint,
whose decoder understands !Ref, !GetAtt, !Sub and !If).
"""

import json
import re
import sys
from pathlib import Path

from cfnlint.decode import decode_str

ROOT = Path(__file__).resolve().parents[2]


def ref(value):
    """The name a `!Ref` (or `{"Ref": …}`) points at, else None."""
    return value.get("Ref") if isinstance(value, dict) else None


def names_in(value):
    """The resources and parameters an expression refers to, in order of appearance."""
    found = []
    if isinstance(value, dict):
        if "Ref" in value:
            found.append(value["Ref"])
        elif "Fn::GetAtt" in value:
            target = value["Fn::GetAtt"]
            found.append(target[0] if isinstance(target, list) else target.split(".")[0])
        elif "Fn::Sub" in value:
            text = value["Fn::Sub"]
            text = text[0] if isinstance(text, list) else text
            found += [n.split(".")[0] for n in re.findall(r"\$\{([^}!]+)\}", text)]
        else:
            for inner in value.values():
                found += names_in(inner)
    elif isinstance(value, list):
        for inner in value:
            found += names_in(inner)
    return [n for n in dict.fromkeys(found) if not n.startswith("AWS::")]


def resource_text(value, known):
    """Policy resources as the docs name them: the template resources and parameters they are
    built from."""
    names = [n for n in dict.fromkeys(names_in(value)) if n in known]
    if not names:
        return "`*`" if value == "*" else "other ARNs"
    text = ", ".join(f"`{n}`" for n in names)
    if "index" in json.dumps(value):
        text += " (and its indexes)"
    return text


def statements(policy, resources, condition=None):
    """One line per permission of a function's policy entry."""
    suffix = f" (if `{condition}`)" if condition else ""
    if isinstance(policy, str):
        return [f"managed policy `{policy}`{suffix}"]
    if "Fn::If" in policy:
        cond, then, otherwise = policy["Fn::If"]
        lines = [] if ref(then) == "AWS::NoValue" else statements(then, resources, cond)
        if ref(otherwise) != "AWS::NoValue":
            lines += statements(otherwise, resources, f"not {cond}")
        return lines
    if "Statement" in policy:
        lines = []
        for statement in policy["Statement"]:
            actions = statement.get("Action", [])
            actions = [actions] if isinstance(actions, str) else actions
            targets = statement.get("Resource", [])
            targets = targets if isinstance(targets, list) else [targets]
            where = resource_text(targets, resources)
            services = {a.split(":")[0] for a in actions}
            if len(services) == 1:
                acts = f"{services.pop()} " + ", ".join(f"`{a.split(':', 1)[1]}`" for a in actions)
            else:
                acts = ", ".join(f"`{a}`" for a in actions)
            lines.append(f"{where}: {acts}{suffix}")
        return lines
    lines = []
    for template, args in policy.items():
        lines.append(f"{resource_text(args, resources)}: `{template}`{suffix}")
    return lines


def binary(fn):
    return fn.get("Metadata", {}).get("BuildProperties", {}).get("Binary")


def facts(template):
    resources = template["Resources"]
    parameters = set(template.get("Parameters", {}))
    of_type = lambda t: {n: r for n, r in resources.items() if r["Type"] == t}
    functions = of_type("AWS::Serverless::Function")
    groups = of_type("AWS::Logs::LogGroup")
    alarms = of_type("AWS::CloudWatch::Alarm")
    secrets = of_type("AWS::SecretsManager::Secret")
    hooks = {
        ref(hook)
        for fn in functions.values()
        for hook in fn["Properties"].get("DeploymentPreference", {}).get("Hooks", {}).values()
    }
    globals_env = template.get("Globals", {}).get("Function", {}).get("Environment", {}).get("Variables", {})

    out_functions = []
    variables = {}
    for name, value in globals_env.items():
        variables.setdefault(name, set()).update(n for n in names_in(value) if n in parameters)
    for name, fn in functions.items():
        props = fn["Properties"]
        env = props.get("Environment", {}).get("Variables", {})
        for var, value in env.items():
            variables.setdefault(var, set()).update(n for n in names_in(value) if n in parameters)
        group = ref(props.get("LoggingConfig", {}).get("LogGroup"))
        group_name = groups.get(group, {}).get("Properties", {}).get("LogGroupName")
        if isinstance(group_name, dict):
            group_name = group_name.get("Fn::Sub")
        about = sorted(a for a, alarm in alarms.items() if name in names_in(alarm["Properties"].get("Dimensions", [])) or name in names_in(alarm["Properties"].get("Metrics", [])))
        permissions = []
        known = set(resources) | parameters
        for policy in props.get("Policies", []):
            permissions += statements(policy, known)
        defaults = template.get("Globals", {}).get("Function", {})
        memory = props.get("MemorySize", defaults.get("MemorySize"))
        timeout = props.get("Timeout", defaults.get("Timeout"))
        out_functions.append({
            "resource": name,
            "binary": binary(fn) or name,
            "memory": f"{memory} MB",
            "timeout": f"`{ref(timeout)}`" if ref(timeout) else f"{timeout} s",
            "hook": name in hooks,
            "log_group": group_name.replace("${AWS::StackName}", "<stack>") if isinstance(group_name, str) else None,
            "alarms": about,
            "permissions": permissions,
        })
    out_secrets = []
    all_env = dict(globals_env)
    for fn in functions.values():
        all_env.update(fn["Properties"].get("Environment", {}).get("Variables", {}))
    for name, secret in secrets.items():
        secret_name = secret["Properties"].get("Name", name)
        if isinstance(secret_name, dict):
            secret_name = secret_name.get("Fn::Sub", name).replace("${AWS::StackName}/", "")
        # Who may read it, and under which condition of the template.
        readers = []
        for entry in out_functions:
            for line in entry["permissions"]:
                if f"`{name}`" not in line or "GetSecretValue" not in line:
                    continue
                condition = re.search(r"\(if `([^`]+)`\)", line)
                reader = entry["binary"] + (f" (`{condition.group(1)}`)" if condition else "")
                if reader not in readers:
                    readers.append(reader)
        out_secrets.append({
            "resource": name,
            "name": secret_name,
            "variables": sorted(var for var, value in all_env.items() if name in names_in(value)),
            "readable_by": readers,
        })
    return {
        "functions": out_functions,
        "secrets": out_secrets,
        "variables": {k: sorted(v) for k, v in sorted(variables.items())},
    }


def main():
    path = ROOT / (sys.argv[1] if len(sys.argv) > 1 else "template.yaml")
    template, matches = decode_str(path.read_text())
    if matches:
        print(f"{path}: {matches}", file=sys.stderr)
        sys.exit(1)
    json.dump(facts(template), sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
