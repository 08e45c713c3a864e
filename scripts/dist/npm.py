"""Writes Gantry's npm packages, in the shape esbuild, biome and ast-grep
use: a small launcher package (`gantry-mcp`, whose `gantry` command is
scripts/dist/npm/gantry.js) and one package per platform holding the
binaries, named in the launcher's `optionalDependencies` with `os` and
`cpu` set, so npm installs only the one that fits.

`npm pack` makes the tarballs; nothing is published from here.
"""

import argparse
import json
import os
import shutil
import subprocess

LAUNCHER = "gantry-mcp"
SCOPE = "@gantry-mcp"
PLATFORMS = [("linux", "x64"), ("linux", "arm64")]
COMMON = {
    "license": "MIT OR Apache-2.0",
    "repository": {"type": "git", "url": "git+https://github.com/gantry-dev/gantry.git"},
}


def write_package(folder: str, manifest: dict) -> None:
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "package.json"), "w", encoding="utf-8") as file:
        json.dump({**manifest, **COMMON}, file, indent=2)
        file.write("\n")
    shutil.copy("README.md", folder)


def pack(folder: str, out: str) -> str:
    done = subprocess.run(
        ["npm", "pack", "--silent", "--pack-destination", os.path.abspath(out)],
        cwd=folder, check=True, capture_output=True, text=True,
    )
    return os.path.join(out, done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--version", required=True)
    parser.add_argument("--os", required=True)
    parser.add_argument("--cpu", required=True)
    parser.add_argument("--stage", required=True, help="a scratch folder")
    parser.add_argument("--out", required=True)
    parser.add_argument("binaries", nargs="+")
    args = parser.parse_args()

    platform = os.path.join(args.stage, "platform")
    write_package(platform, {
        "name": f"{SCOPE}/{args.os}-{args.cpu}",
        "version": args.version,
        "description": f"Gantry's binaries for {args.os} {args.cpu} (installed by {LAUNCHER})",
        "os": [args.os],
        "cpu": [args.cpu],
        "files": ["bin/"],
        "preferUnplugged": True,
    })
    os.makedirs(os.path.join(platform, "bin"), exist_ok=True)
    for binary in args.binaries:
        target = os.path.join(platform, "bin", os.path.basename(binary))
        shutil.copy(binary, target)
        os.chmod(target, 0o755)

    launcher = os.path.join(args.stage, "launcher")
    write_package(launcher, {
        "name": LAUNCHER,
        "version": args.version,
        "description": "Gantry: one registry of tools for coding agents, served over MCP",
        "bin": {"gantry": "bin/gantry.js"},
        "files": ["bin/"],
        "engines": {"node": ">=18"},
        "optionalDependencies": {
            f"{SCOPE}/{os_name}-{cpu}": args.version for os_name, cpu in PLATFORMS
        },
    })
    os.makedirs(os.path.join(launcher, "bin"), exist_ok=True)
    script = os.path.join(launcher, "bin", "gantry.js")
    shutil.copy(os.path.join(os.path.dirname(__file__), "npm", "gantry.js"), script)
    os.chmod(script, 0o755)

    os.makedirs(args.out, exist_ok=True)
    for folder in (platform, launcher):
        print(pack(folder, args.out))


if __name__ == "__main__":
    main()
