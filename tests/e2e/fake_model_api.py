"""A Gemini-API-compatible model server on loopback, for driving a real
Gemini CLI headless: `python3 fake_model_api.py LOG`. It prints its port on
stdout once it listens, and appends every request it gets (path and JSON
body) to LOG, one JSON object a line.

Its "model" is a script: when the conversation has no function response
yet, it calls the MCP tool whose declared name ends in `read_file` (not
Gemini CLI's own `read_file`) on `app.py`; once the result is back, it
answers `done: ` and the text of that result. Requests that ask for JSON
(Gemini CLI's own helpers: routing, next-speaker checks) get an object
filling the schema's required fields.
"""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def function_responses(body: dict) -> list[dict]:
    return [
        part["functionResponse"]
        for content in body.get("contents", [])
        for part in content.get("parts", [])
        if "functionResponse" in part
    ]


def mcp_read_file(body: dict) -> str | None:
    names = [
        declaration["name"]
        for tool in body.get("tools", [])
        for declaration in tool.get("functionDeclarations", [])
    ]
    return next((n for n in names if n != "read_file" and n.endswith("read_file")), None)


def from_schema(schema: dict):
    """A value of `schema`: the first choice of an enum, an object with
    every required property."""
    kind = str(schema.get("type", "object")).lower()
    if "enum" in schema:
        return schema["enum"][0]
    if kind == "object":
        properties = schema.get("properties", {})
        return {name: from_schema(properties.get(name, {})) for name in schema.get("required", properties)}
    if kind == "array":
        return []
    if kind in ("integer", "number"):
        return 0
    if kind == "boolean":
        return False
    return "user"


def reply_parts(body: dict) -> list[dict]:
    config = body.get("generationConfig", {})
    schema = config.get("responseJsonSchema") or config.get("responseSchema")
    if schema:
        return [{"text": json.dumps(from_schema(schema))}]
    responses = function_responses(body)
    if responses:
        return [{"text": "done: " + json.dumps(responses[-1].get("response"))}]
    tool = mcp_read_file(body)
    if tool is None:
        return [{"text": "no MCP read_file tool was declared"}]
    return [{"functionCall": {"name": tool, "args": {"path": "app.py"}}}]


def response(body: dict) -> dict:
    return {
        "candidates": [
            {"content": {"role": "model", "parts": reply_parts(body)}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
        "modelVersion": "fake",
    }


class Handler(BaseHTTPRequestHandler):
    log_path = ""

    def log_message(self, *args) -> None:  # quiet: the log file says what came
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        with open(self.log_path, "a") as log:
            log.write(json.dumps({"path": self.path, "body": body}) + "\n")
        if ":countTokens" in self.path:
            self.send_json({"totalTokens": 10})
        elif ":streamGenerateContent" in self.path:
            data = ("data: " + json.dumps(response(body)) + "\r\n\r\n").encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        elif ":generateContent" in self.path:
            self.send_json(response(body))
        else:
            self.send_json({"error": {"code": 404, "message": f"not served: {self.path}"}}, 404)

    def send_json(self, value: dict, status: int = 200) -> None:
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


if __name__ == "__main__":
    Handler.log_path = sys.argv[1]
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()
