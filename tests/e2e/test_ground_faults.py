"""Faults of the ground a run stands on (issue 26): a full disk under the
workspace and under the state directory during a multi-file apply, a
read-only workspace, too few file descriptors, a workspace deleted during
a call. Each server runs in a mount namespace of its own (`unshare -Urm`,
no privilege needed) where a small tmpfs or a read-only bind stands in
for the failing disk; the test reaches that view through
`/proc/PID/root`."""

from __future__ import annotations

import os
import random
import shlex
import shutil
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from conftest import env_for, gantry_bin, text_of
from test_client_faults import wait_for_process
from test_faults import process_table

pytestmark = pytest.mark.anyio

FILES = {"a.txt": "one\n", "b.txt": "two\n", "c.txt": "three\n"}
# Changes a.txt and b.txt a little and c.txt by 256 KiB: the last file
# of the apply is the one that no longer fits.
BIG = "".join(f"line {i:06} of the text that fills the disk\n" for i in range(6000))
PATCH = (
    "*** Begin Patch\n"
    "*** Update File: a.txt\n@@\n-one\n+uno\n"
    "*** Update File: b.txt\n@@\n-two\n+dos\n"
    "*** Update File: c.txt\n@@\n-three\n+tres\n"
    + "".join(f"+{line}\n" for line in BIG.splitlines())
    + "*** End Patch"
)
FULL = ("No space left on device", "disk is full")


@asynccontextmanager
async def grounded(tmp_path: Path, setup: str, *args: str, limit_files: int | None = None):
    """`gantry mcp` on tmp_path/ws in a mount namespace of its own, after
    `setup` (shell, with $WS and $STATE) ran there. Yields the session and
    the workspace as the test sees it (through /proc/PID/root)."""
    workspace = tmp_path / "ws"
    state = tmp_path / "state"
    workspace.mkdir(exist_ok=True)
    state.mkdir(exist_ok=True)
    limit = f"ulimit -n {limit_files} && " if limit_files else ""
    script = (f"set -e; WS={shlex.quote(str(workspace))}; STATE={shlex.quote(str(state))}; {setup}; "
              f"{limit}exec {shlex.quote(gantry_bin())} mcp --root \"$WS\" {' '.join(args)}")
    params = StdioServerParameters(command="unshare", args=["-Urm", "--propagation", "private", "sh", "-c", script],
                                   env=env_for(tmp_path))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            with anyio.fail_after(60):
                await session.initialize()
            pid = next(pid for pid, (_, _, command) in process_table().items()
                       if f"mcp --root {workspace}" in command)
            yield session, Path(f"/proc/{pid}/root{workspace}")


async def call(session, tool: str, arguments: dict):
    with anyio.fail_after(60):
        return await session.call_tool(tool, arguments)


def fill(path: Path, leave: int) -> Path:
    """Fills the file system of `path` but `leave` bytes."""
    stat = os.statvfs(path)
    filler = path / "filler"
    filler.write_bytes(b"\0" * max(stat.f_bavail * stat.f_frsize - leave, 0))
    return filler


def contents(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(root.iterdir()) if p.name != "filler"}


def put_files(root: Path) -> None:
    for name, text in FILES.items():
        (root / name).write_text(text)


async def refused_while_full_then_applied(session, ws: Path, full: Path, leave: int) -> None:
    """Fills the disk of `full` but `leave` bytes: PATCH is refused saying
    the disk is full and changes no file; once space is freed it applies."""
    put_files(ws)
    filler = fill(full, leave)
    before = contents(ws)
    refused = await call(session, "apply_patch", {"patch": PATCH})
    assert refused.is_error and any(word in text_of(refused) for word in FULL), text_of(refused)
    # All or nothing: every file as it was, no temp file left.
    assert contents(ws) == before
    filler.unlink()
    applied = await call(session, "apply_patch", {"patch": PATCH})
    assert not applied.is_error, text_of(applied)


async def test_a_full_workspace_disk_changes_no_file_and_the_write_after_freeing_works(tmp_path: Path):
    async with grounded(tmp_path, 'mount -t tmpfs -o size=1m tmpfs "$WS"') as (session, ws):
        await refused_while_full_then_applied(session, ws, ws, 16 * 1024)
        assert (ws / "a.txt").read_text() == "uno\n" and (ws / "c.txt").read_text().startswith("tres\nline 000000")


async def test_a_full_state_disk_refuses_the_apply_before_it_touches_a_file(tmp_path: Path):
    async with grounded(tmp_path, 'mount -t tmpfs -o size=64k tmpfs "$STATE"') as (session, ws):
        await refused_while_full_then_applied(session, ws, ws.parent / "state", 0)
        assert (ws / "b.txt").read_text() == "dos\n"


async def test_a_read_only_workspace_is_read_and_every_write_refused_saying_why(tmp_path: Path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    put_files(workspace)
    setup = 'mount --bind "$WS" "$WS" && mount -o remount,bind,ro "$WS"'
    async with grounded(tmp_path, setup) as (session, ws):
        read = await call(session, "read_file", {"path": "a.txt"})
        assert "one" in text_of(read) and not read.is_error
        for tool, arguments in [
            ("write_file", {"path": "a.txt", "content": "changed\n"}),
            ("write_file", {"path": "new.txt", "content": "new\n"}),
            ("edit", {"path": "a.txt", "old_string": "one", "new_string": "uno"}),
            ("apply_patch", {"patch": PATCH}),
        ]:
            refused = await call(session, tool, arguments)
            assert refused.is_error and "Read-only file system" in text_of(refused), (tool, text_of(refused))
        assert contents(ws) == {name: text.encode() for name, text in FILES.items()}


async def test_too_few_file_descriptors_fail_calls_clearly_and_the_server_lives_on(tmp_path: Path):
    workspace = tmp_path / "ws"
    for i in range(300):
        (workspace / f"d{i % 30}").mkdir(parents=True, exist_ok=True)
        (workspace / f"d{i % 30}" / f"f{i}.txt").write_text(f"needle {i}\n")
    async with grounded(tmp_path, "true", limit_files=40) as (session, ws):
        outcomes = []
        for tool, arguments in [
            ("grep", {"pattern": "needle"}),
            ("glob", {"pattern": "**/*.txt"}),
            ("read_many_files", {"paths": ["**/*.txt"]}),
            ("shell", {"command": "ls d0 | wc -l"}),
        ]:
            result = await call(session, tool, arguments)
            text = text_of(result)
            # Either it worked within the limit, or it said which limit.
            assert not result.is_error or "Too many open files" in text or "file descriptors" in text, (tool, text)
            outcomes.append(result.is_error)
        read = await call(session, "read_file", {"path": "d0/f0.txt"})
        assert "needle 0" in text_of(read), text_of(read)


async def test_a_workspace_deleted_during_a_call_ends_it_clearly_and_the_server_lives_on(tmp_path: Path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    put_files(workspace)
    duration = f"{2 + random.randint(1, 10**6) / 10**7:.7f}"
    async with grounded(tmp_path, "true") as (session, ws):
        server = int(ws.parts[2])
        async with anyio.create_task_group() as group:
            outcome = {}

            async def long_call():
                outcome["shell"] = await call(session, "shell", {"command": f"sleep {duration}; ls"})

            group.start_soon(long_call)
            # Deleted once the command runs.
            await anyio.to_thread.run_sync(wait_for_process, server, f"sleep {duration}")
            shutil.rmtree(ws)
        shell = outcome["shell"]
        assert shell.is_error or "exit code" in text_of(shell), text_of(shell)
        for tool, arguments in [
            ("read_file", {"path": "a.txt"}),
            ("write_file", {"path": "a.txt", "content": "x\n"}),
            ("grep", {"pattern": "one"}),
            ("ls", {}),
        ]:
            result = await call(session, tool, arguments)
            # A failure, or an answer about nothing, says the folder is gone.
            assert "workspace folder" in text_of(result) and "was deleted" in text_of(result), (tool, text_of(result))
        # Nothing recreated it behind the user's back.
        assert not ws.exists()


def fat_wheel(path: Path, size: int) -> Path:
    """A wheel of the package `fat` holding `size` random bytes: built by
    hand (a wheel is a zip with its metadata), so no build backend and no
    index is needed to install it."""
    import base64
    import hashlib
    import zipfile

    files = {
        "fat/__init__.py": b"import pathlib\nSIZE = (pathlib.Path(__file__).parent / 'blob.bin').stat().st_size\n",
        "fat/blob.bin": os.urandom(size),
        "fat-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: fat\nVersion: 1.0\n",
        "fat-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: gantry-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for name, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append("fat-1.0.dist-info/RECORD,,")
    wheel = path / "fat-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
        archive.writestr("fat-1.0.dist-info/RECORD", "\n".join(record) + "\n")
    return wheel


def cell(code: str) -> dict:
    return {"code": code, "description": "a cell of the full-disk test"}


async def test_a_full_state_disk_fails_a_kernels_pip_install_whole_and_the_next_works(tmp_path: Path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    fat_wheel(workspace, 4 * 1024 * 1024)
    async with grounded(tmp_path, 'mount -t tmpfs -o size=256m tmpfs "$STATE"') as (session, ws):
        # The kernel's environment, and pip in it, while there is room.
        ready = await call(session, "eval", cell("%pip --version"))
        assert not ready.is_error, text_of(ready)
        filler = fill(ws.parent / "state", 1024 * 1024)
        install = "%pip install --no-index --no-deps ./fat-1.0-py3-none-any.whl"
        refused = await call(session, "eval", cell(install))
        assert refused.is_error and any(word in text_of(refused) for word in FULL), text_of(refused)
        # Nothing half-installed: the package is not there at all.
        absent = await call(session, "eval", cell("import importlib.util\nimportlib.util.find_spec('fat') is None"))
        assert "True" in text_of(absent), text_of(absent)
        filler.unlink()
        installed = await call(session, "eval", cell(install))
        assert not installed.is_error, text_of(installed)
        size = await call(session, "eval", cell("import fat\nfat.SIZE"))
        assert str(4 * 1024 * 1024) in text_of(size), text_of(size)
