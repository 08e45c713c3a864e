"""Checks that `cargo binstall` would find the archive scripts/dist.sh made:
the crate's `package.metadata.binstall` templates, filled in for this
version and target, name the archive in dist/ and a binary inside it.

Usage: python3 binstall.py ARCHIVE VERSION TARGET
"""

import json
import os
import subprocess
import sys
import tarfile


def fill(template: str, values: dict) -> str:
    for key, value in values.items():
        template = template.replace("{ " + key + " }", value)
    return template


def main() -> None:
    archive, version, target = sys.argv[1:]
    metadata = json.loads(subprocess.run(
        ["cargo", "metadata", "--no-deps", "--format-version", "1"],
        check=True, capture_output=True, text=True,
    ).stdout)
    package = next(p for p in metadata["packages"] if p["name"] == "gantry")
    binstall = package["metadata"]["binstall"]
    values = {"repo": package["repository"], "version": version, "target": target,
              "bin": "gantry", "binary-ext": ""}
    url = fill(binstall["pkg-url"], values)
    if os.path.basename(url) != os.path.basename(archive):
        sys.exit(f"binstall: pkg-url names {os.path.basename(url)}, dist/ holds {archive}")
    inside = fill(binstall["bin-dir"], values)
    with tarfile.open(archive) as tar:
        if inside not in tar.getnames():
            sys.exit(f"binstall: bin-dir {inside} is not in {archive}")
    print(f"binstall: {url} holds {inside}")


if __name__ == "__main__":
    main()
