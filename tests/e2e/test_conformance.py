"""The official MCP conformance suite (`@modelcontextprotocol/conformance`)
against `gantry mcp --http`: every server scenario that applies to a
tools-only server must pass. The others need fixture tools, resources or
prompts a real tool server does not have (`test_simple_text`, ...).

The suite is installed by scripts/test.sh (scripts/install-conformance.sh);
its bin directory comes in GANTRY_CONFORMANCE_BIN. Set
GANTRY_SKIP_CONFORMANCE=1 to skip these tests explicitly."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from conftest import REPO

SCENARIOS = [
    "server-initialize",
    "ping",
    "tools-list",
    "server-sse-multiple-streams",
    "server-sse-polling",
    "dns-rebinding-protection",
]


def conformance_bin() -> Path:
    if os.environ.get("GANTRY_SKIP_CONFORMANCE") == "1":
        pytest.skip("GANTRY_SKIP_CONFORMANCE=1: the MCP conformance suite was skipped on request")
    given = os.environ.get("GANTRY_CONFORMANCE_BIN")
    if given:
        return Path(given)
    out = subprocess.run(
        [str(REPO / "scripts" / "install-conformance.sh")],
        check=True, capture_output=True, text=True, timeout=600,
    )
    return Path(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_conformance_scenario(scenario: str, http_server):
    bin_dir = conformance_bin()
    # The suite sends no credentials: this is the `--no-token` path.
    url = http_server("--no-token", token=None).url
    env = dict(os.environ)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    run = subprocess.run(
        [str(bin_dir / "conformance"), "server", "--url", url, "--scenario", scenario],
        capture_output=True, text=True, timeout=300, env=env,
    )
    report = run.stdout + run.stderr
    assert run.returncode == 0, report[-3000:]
    assert " 0 failed" in report, report[-3000:]
