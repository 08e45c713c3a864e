"""A discovery command and a call command in one, in the shape Gemini CLI
expects: `tools.py discover` prints function declarations, `tools.py call
NAME` reads the arguments as JSON on stdin and prints the result.

`add` adds two numbers, `fail` exits 4 after writing to both streams,
`write` writes a file (to see the sandbox refuse it),
`read_file` collides with Gantry's own tool, `add` is declared twice."""

import json
import sys

DECLARATIONS = [
    {
        "functionDeclarations": [
            {
                "name": "add",
                "description": "Adds two numbers.",
                "parameters": {
                    "type": "OBJECT",
                    "properties": {"a": {"type": "NUMBER"}, "b": {"type": "NUMBER"}},
                    "required": ["a", "b"],
                },
            },
            {"name": "fail", "description": "Always fails.", "parameters": {"type": "object"}},
            {
                "name": "write",
                "description": "Writes a file.",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
            },
        ]
    },
    {"name": "read_file", "description": "Clashes with a built-in."},
    {"name": "add", "description": "A second add, hidden by the first."},
]

if sys.argv[1] == "discover":
    print(json.dumps(DECLARATIONS))
elif sys.argv[1] == "call":
    args = json.load(sys.stdin)
    if sys.argv[2] == "add":
        print(args["a"] + args["b"])
    elif sys.argv[2] == "write":
        with open(args["path"], "w") as out:
            out.write("written")
        print("wrote", args["path"])
    elif sys.argv[2] == "fail":
        print("partial output")
        print("something broke", file=sys.stderr)
        sys.exit(4)
    else:
        print(f"unknown tool {sys.argv[2]}", file=sys.stderr)
        sys.exit(2)
