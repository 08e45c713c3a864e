#!/usr/bin/env python3
"""What the network sandbox costs, side by side in one run: `shell` commands
of two `gantry mcp` servers, one whose commands have the host's whole
network (`sandbox.network: "allow"`) and one whose commands have a network
of their own, out only through Gantry's proxy to an allowed host (the
default mode), calls interleaved. A loopback HTTPS server stands in for
the host (its name mapped to loopback for the proxy).

- a 50 MB download (curl's own timing; goal: throughput within 10 %);
- a new HTTPS connection, to the end of the TLS handshake (curl's
  `time_appconnect`; goal: within 2 ms of direct).

    bench/network.py --gantry target/release/gantry [--rounds 15]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from mcp_client import StdioClient  # noqa: E402

HOST = "pkg.example.org"

SERVE = r"""
import functools, http.server, ssl, sys
handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])
http.server.SimpleHTTPRequestHandler.log_message = lambda *args: None
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(sys.argv[2], sys.argv[3])
server.socket = context.wrap_socket(server.socket, server_side=True)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


def server(gantry: str, root: Path, home: Path, network) -> StdioClient:
    home.mkdir(parents=True)
    (home / "settings.json").write_text(json.dumps({"sandbox": {"network": network}}))
    env = dict(os.environ)
    env.update(
        GANTRY_HOME=str(home),
        GANTRY_STATE_DIR=str(home / "state"),
        GANTRY_NETWORK_MAP=f"{HOST}=127.0.0.1",
    )
    client = StdioClient([gantry, "mcp", "--root", str(root)], str(root), env)
    client.initialize()
    return client


def curl(client: StdioClient, args: str) -> list[float]:
    result = client.request("tools/call", {"name": "shell", "arguments": {"command": f"curl -sS {args}"}})
    text = result["content"][0]["text"]
    for line in text.splitlines():
        if line.startswith("timing "):
            return [float(x) for x in line.split()[1:]]
    raise RuntimeError(text)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gantry", required=True)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    args.gantry = str(Path(args.gantry).resolve())
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        served = tmp / "served"
        served.mkdir()
        (served / "big").write_bytes(os.urandom(50 * 1024 * 1024))
        (served / "small").write_text("x\n")
        cert, key = tmp / "cert.pem", tmp / "key.pem"
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
             "-subj", f"/CN={HOST}", "-addext", f"subjectAltName=DNS:{HOST},IP:127.0.0.1",
             "-keyout", str(key), "-out", str(cert)],
            check=True, stderr=subprocess.DEVNULL,
        )
        stand_in = subprocess.Popen(
            [sys.executable, "-u", "-c", SERVE, str(served), str(cert), str(key)],
            stdout=subprocess.PIPE, text=True,
        )
        port = int(stand_in.stdout.readline())
        root = tmp / "ws"
        root.mkdir()
        sides = {
            "whole network (direct)": (
                server(args.gantry, root, tmp / "direct", "allow"),
                f"https://127.0.0.1:{port}",
            ),
            "own network (proxy)": (
                server(args.gantry, root, tmp / "proxy", {"allow": [f"{HOST}:{port}"], "ask": False}),
                f"https://{HOST}:{port}",
            ),
        }
        timing = "-w 'timing %{time_appconnect} %{speed_download}\\n'"
        throughput = {side: [] for side in sides}
        handshake = {side: [] for side in sides}
        try:
            for round in range(args.rounds + 2):
                for side, (client, url) in sides.items():
                    _, speed = curl(client, f"--cacert {cert} -o /dev/null {timing} {url}/big")
                    appconnect, _ = curl(client, f"--cacert {cert} -o /dev/null {timing} {url}/small")
                    if round >= 2:
                        throughput[side].append(speed / 1e6)
                        handshake[side].append(appconnect * 1000)
        finally:
            for client, _ in sides.values():
                client.close()
            stand_in.kill()
        direct, proxied = sides
        print(f"{args.rounds} rounds, interleaved, {os.cpu_count()} cores")
        for side in sides:
            print(
                f"  {side:24} download 50 MB: {statistics.median(throughput[side]):8.1f} MB/s   "
                f"new HTTPS connection: {statistics.median(handshake[side]):6.2f} ms"
            )
        ratio = statistics.median(throughput[proxied]) / statistics.median(throughput[direct])
        extra = statistics.median(handshake[proxied]) - statistics.median(handshake[direct])
        print(f"throughput, proxy / direct: {ratio:.3f} (goal >= 0.90)")
        print(f"new HTTPS connection, proxy - direct: {extra:+.2f} ms (goal <= 2 ms)")


if __name__ == "__main__":
    main()
