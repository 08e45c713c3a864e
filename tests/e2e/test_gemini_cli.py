"""Gemini CLI, a real MCP client nobody here wrote, driving `gantry mcp
--http` headless: its model is a Gemini-API-compatible server on loopback
(fake_model_api.py, a separate process), which calls Gantry's `read_file`
and must find the file's text in its second request.

Gemini CLI is installed by scripts/test.sh (scripts/install-gemini-cli.sh);
its bin directory comes in GANTRY_GEMINI_BIN. Set GANTRY_SKIP_GEMINI=1 to
skip this test explicitly."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

HERE = Path(__file__).resolve().parent


def gemini_bin() -> Path:
    if os.environ.get("GANTRY_SKIP_GEMINI") == "1":
        pytest.skip("GANTRY_SKIP_GEMINI=1: the Gemini CLI test was skipped on request")
    given = os.environ.get("GANTRY_GEMINI_BIN")
    if given:
        return Path(given)
    out = subprocess.run(
        [str(REPO / "scripts" / "install-gemini-cli.sh")],
        check=True, capture_output=True, text=True, timeout=900,
    )
    return Path(out.stdout.strip().splitlines()[-1])


@pytest.fixture
def model_api(tmp_path: Path):
    """The fake model server: its base URL and the log of its requests."""
    log = tmp_path / "model-requests.jsonl"
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "fake_model_api.py"), str(log)],
        stdout=subprocess.PIPE, text=True,
    )
    # It prints its port once it listens; a dead server prints nothing.
    port = proc.stdout.readline().strip()
    if not port:
        proc.kill()
        raise RuntimeError("fake_model_api.py did not start")
    yield f"http://127.0.0.1:{port}", log
    proc.terminate()
    proc.wait(timeout=10)


def test_gemini_cli_reads_a_file_through_gantry_over_http(workspace: Path, tmp_path: Path, http_server, model_api):
    """Over HTTP with protocol 2025-06-18, Gemini CLI 0.61 used to see the
    server as disconnected and declare none of its tools (an empty priming
    event): now its model is offered `mcp_gantry_read_file`, calls it, and
    gets the file's text back."""
    bin_dir = gemini_bin()
    base_url, log = model_api
    (workspace / "app.py").write_text('MARKER = "zebra-42"\n')
    server = http_server()
    home = tmp_path / "gemini-home"
    (home / ".gemini").mkdir(parents=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps({
        "mcpServers": {"gantry": {
            "httpUrl": server.url,
            "headers": {"Authorization": f"Bearer {server.token}"},
            "trust": True,
        }},
        "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
    }))
    env = {
        **os.environ,
        "HOME": str(home),
        "GEMINI_API_KEY": "not-a-key",
        "GOOGLE_GEMINI_BASE_URL": base_url,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
    }
    run = subprocess.run(
        [str(bin_dir / "gemini"), "-p", "What is MARKER in app.py?", "--yolo", "-m", "gemini-2.5-flash"],
        cwd=workspace, env=env, capture_output=True, text=True, timeout=300,
    )
    report = f"exit {run.returncode}\nstdout:\n{run.stdout}\nstderr:\n{run.stderr[-3000:]}"
    assert run.returncode == 0, report
    requests = [json.loads(line)["body"] for line in log.read_text().splitlines()]
    chats = [r for r in requests if r.get("tools")]
    declared = {d["name"] for tool in chats[0]["tools"] for d in tool.get("functionDeclarations", [])}
    assert "mcp_gantry_read_file" in declared, (sorted(declared), report)
    # The second request of the conversation carries Gantry's answer.
    responses = [
        part["functionResponse"]
        for content in chats[-1]["contents"]
        for part in content.get("parts", [])
        if "functionResponse" in part
    ]
    assert [r["name"] for r in responses] == ["mcp_gantry_read_file"], (responses, report)
    assert 'MARKER = "zebra-42"' in responses[0]["response"]["output"], responses
    assert "zebra-42" in run.stdout, report
