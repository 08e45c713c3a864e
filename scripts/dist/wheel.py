"""Writes a wheel that carries Gantry's prebuilt binaries, so that `pip
install`, `pipx run` and `uvx` give a working `gantry`.

The binaries go in the wheel's `.data/scripts`, which installers put on
PATH as they are (maturin's `bin` bindings do the same). Written here
rather than with maturin because maturin builds the crate itself: the
wheel must carry the very binaries scripts/dist.sh checked, from its one
release build. The wheel format is a zip with three metadata files
(PEP 427, PEP 491); nothing beyond the standard library is needed.
"""

import argparse
import base64
import hashlib
import os
import zipfile

NAME = "gantry-mcp"
SUMMARY = "Gantry: one registry of tools for coding agents, served over MCP"


def record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return f"{path},sha256={digest.decode()},{len(data)}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--version", required=True)
    parser.add_argument("--platform", required=True, help="e.g. manylinux_2_34_x86_64")
    parser.add_argument("--out", required=True)
    parser.add_argument("binaries", nargs="+")
    args = parser.parse_args()

    dist = NAME.replace("-", "_")
    data_dir = f"{dist}-{args.version}.data/scripts"
    info_dir = f"{dist}-{args.version}.dist-info"
    with open("README.md", encoding="utf-8") as readme:
        description = readme.read()
    metadata = (
        "Metadata-Version: 2.1\n"
        f"Name: {NAME}\n"
        f"Version: {args.version}\n"
        f"Summary: {SUMMARY}\n"
        "License: MIT OR Apache-2.0\n"
        "Requires-Python: >=3.8\n"
        "Description-Content-Type: text/markdown\n"
        "\n" + description
    )
    wheel = (
        "Wheel-Version: 1.0\n"
        "Generator: gantry scripts/dist/wheel.py\n"
        "Root-Is-Purelib: false\n"
        f"Tag: py3-none-{args.platform}\n"
    )
    entries = []
    for binary in args.binaries:
        with open(binary, "rb") as file:
            entries.append((f"{data_dir}/{os.path.basename(binary)}", file.read(), 0o755))
    entries.append((f"{info_dir}/METADATA", metadata.encode(), 0o644))
    entries.append((f"{info_dir}/WHEEL", wheel.encode(), 0o644))
    record = [record_line(path, data) for path, data, _ in entries]
    record.append(f"{info_dir}/RECORD,,")
    entries.append((f"{info_dir}/RECORD", ("\n".join(record) + "\n").encode(), 0o644))

    os.makedirs(args.out, exist_ok=True)
    target = os.path.join(args.out, f"{dist}-{args.version}-py3-none-{args.platform}.whl")
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path, data, mode in entries:
            # A fixed date: the same binaries give the same wheel.
            info = zipfile.ZipInfo(path, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    print(target)


if __name__ == "__main__":
    main()
