"""Makes the scratch tree's parent directory its workspace root (infra/tests/add-a-tool.sh).

Cargo names a workspace crate's artifacts after its path relative to the workspace root. In
a plain copy the scratch's `shared` would be `shared` as in the checkout, and the two would
overwrite each other's artifacts in the shared target directory (and either could take the
other's as up to date). One level down, it is `tree/shared`: its own artifacts, while the
registry dependencies, named the same in both, are reused.

Usage: workspace.py TREE | workspace.py undo TREE
"""

import re
import subprocess
import sys
from pathlib import Path


def undo(tree):
    """Back to the tree's own layout (its Cargo.lock as the build left it)."""
    (tree.parent / "Cargo.lock").rename(tree / "Cargo.lock")
    (tree.parent / "Cargo.toml").unlink()
    subprocess.run(["git", "-C", str(tree), "checkout", "-q", "Cargo.toml"], check=True)


def main():
    tree = Path(sys.argv[-1])
    if sys.argv[1] == "undo":
        undo(tree)
        return
    manifest = (tree / "Cargo.toml").read_text()
    prefix = tree.name + "/"
    # The members and the workspace's path dependencies, relative to the new root.
    # (The list may span lines.)
    manifest = re.sub(r"^members = \[(.*?)\]$",
                      lambda m: "members = [" + re.sub(r'"([^"]+)"', lambda q: f'"{prefix}{q.group(1)}"', m.group(1)) + "]",
                      manifest, count=1, flags=re.M | re.S)
    manifest = re.sub(r'path = "([^"]+)"', lambda m: f'path = "{prefix}{m.group(1)}"', manifest)
    (tree.parent / "Cargo.toml").write_text(manifest)
    (tree / "Cargo.toml").unlink()
    (tree / "Cargo.lock").rename(tree.parent / "Cargo.lock")


if __name__ == "__main__":
    main()
