"""Which workspace crates a change touches (`make check`, infra/local/check.sh).

Reads changed paths (relative to the repository root) on stdin and prints cargo's package
selection: `-p a -p b ...` for the crates that hold a changed file and every workspace crate
that depends on one of them, `--workspace` when a change is outside every crate and could
affect them all, nothing when no crate is affected.

Usage: touched_crates.py [--all] < paths
"""

import json
import subprocess
import sys
from pathlib import Path

# Outside every crate but read by all of them: the build's settings.
WHOLE_WORKSPACE = ("Cargo.toml", "Cargo.lock", ".cargo/", ".config/", "rust-toolchain")
# Pages the tests of these crates read (docs-check compares tables with the code; openapi
# keeps docs/openapi.json current).
DOCS = ("README.md", "docs/")
DOCS_READERS = ("docs-check", "openapi")


def workspace(root):
    meta = json.loads(subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--no-deps", "--offline"],
        cwd=root, check=True, capture_output=True, text=True).stdout)
    crates = {}
    for package in meta["packages"]:
        directory = Path(package["manifest_path"]).parent.relative_to(root)
        deps = {d["name"] for d in package["dependencies"] if d.get("path")}
        crates[package["name"]] = (directory, deps)
    return crates


def owner(path, crates):
    """The crate whose directory holds `path` (the deepest, as crates nest under shared/)."""
    best = None
    for name, (directory, _) in crates.items():
        if directory != Path(".") and (path == directory or directory in path.parents):
            if best is None or len(directory.parts) > len(crates[best][0].parts):
                best = name
    return best


def main():
    root = Path(subprocess.run(["git", "rev-parse", "--show-toplevel"], check=True,
                               capture_output=True, text=True).stdout.strip())
    if "--all" in sys.argv[1:]:
        print("--workspace")
        return
    crates = workspace(root)
    touched = set()
    for line in sys.stdin:
        path = line.strip()
        if not path:
            continue
        if path.startswith(WHOLE_WORKSPACE):
            print("--workspace")
            return
        if path.startswith(DOCS):
            touched.update(DOCS_READERS)
            continue
        name = owner(Path(path), crates)
        if name:
            touched.add(name)
    # Every crate that depends on a touched one, directly or not.
    grew = True
    while grew:
        grew = False
        for name, (_, deps) in crates.items():
            if name not in touched and deps & touched:
                touched.add(name)
                grew = True
    if touched >= set(crates) - {"workspace-hack"}:
        print("--workspace")
    elif touched:
        print(" ".join(f"-p {name}" for name in sorted(touched)))


if __name__ == "__main__":
    main()
