//! Gantry's own process and environment against what it runs (issue 21),
//! through the real binary (`gantry session`): a confined command cannot
//! read Gantry's `/proc/PID/environ` or `mem`, its `cmdline` holds no
//! token, and Gantry's secrets reach no shell command, kernel cell or
//! debuggee; programs planted under names Gantry runs (`python3`, `node`,
//! `dlv`, `lldb-dap`) in a writable cache folder early on `PATH`, with
//! `NODE_OPTIONS` and `PYTHONSTARTUP` set by the user's policy, run only
//! confined. Needs Landlock (GANTRY_SKIP_SANDBOX=1 skips on request);
//! the debuggee's part needs debugpy (GANTRY_SKIP_DAP=1).

// Tests build their fixtures directly.
#![allow(clippy::disallowed_methods)]

mod common;

use std::path::Path;

use gantry_core::testing::{Payload, skip_requested};
use serde_json::{Value, json};

const TOKEN: &str = "planted-http-token-5d1e";
const KEY: &str = "planted-api-key-9c2b";

fn sandbox_here() -> bool {
    !skip_requested(
        "GANTRY_SKIP_SANDBOX",
        "the test, which needs Landlock to confine commands",
    )
}

/// Python that reports, for process `pid`, whether its `environ`,
/// `cmdline` and writable memory could be read and held [`TOKEN`].
fn reader(pid: u32) -> String {
    format!(
        r#"
token = b"{TOKEN}"
for part in ("environ", "cmdline"):
    try:
        data = open("/proc/{pid}/" + part, "rb").read()
        print(part, "read", "TOKEN-FOUND" if token in data else "no token")
    except OSError as e:
        print(part, "refused:", e.strerror)
try:
    found = False
    with open("/proc/{pid}/mem", "rb") as mem:
        for line in open("/proc/{pid}/maps"):
            span, perms = line.split()[:2]
            start, end = (int(x, 16) for x in span.split("-"))
            if perms.startswith("rw"):
                try:
                    mem.seek(start)
                    found = found or token in mem.read(min(end - start, 1 << 24))
                except OSError:
                    pass
    print("mem", "TOKEN-FOUND" if found else "read, no token")
except OSError as e:
    print("mem refused:", e.strerror)
"#
    )
}

/// The text of a reply, every part of it; `ok: false` shows as the error.
fn text(reply: &Value) -> String {
    if reply["ok"] != true {
        return format!("ERROR: {reply}");
    }
    reply["result"]["llm_content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|part| part["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

fn with_secrets(command: &mut std::process::Command) {
    command
        .env("GANTRY_HTTP_TOKEN", TOKEN)
        .env("BRAVE_API_KEY", KEY)
        .env("MY_SERVICE_API_KEY", KEY);
}

#[test]
fn gantrys_process_and_secrets_are_out_of_reach_of_what_it_runs() {
    if !sandbox_here() {
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let debuggee = !skip_requested(
        "GANTRY_SKIP_DAP",
        "the debuggee's part of the test, which needs debugpy",
    );
    std::fs::write(ws.path().join("requirements.txt"), "").unwrap();
    std::fs::write(
        ws.path().join("show.py"),
        format!("import os\nprint('debuggee sees', sorted(k for k, v in os.environ.items() if k.endswith('_KEY') or k == 'GANTRY_HTTP_TOKEN' or v in ({TOKEN:?}, {KEY:?})))\n"),
    )
    .unwrap();
    let reader_file = ws.path().join("reader.py");
    let mut command = common::gantry(ws.path(), state.path());
    with_secrets(&mut command);
    let replies = common::session_knowing_pid(command, ws.path(), |pid| {
        std::fs::write(&reader_file, reader(pid)).unwrap();
        let mut requests = vec![
            json!({"tool": "shell", "args": {"command": "python3 reader.py; env"}}),
            json!({"tool": "eval", "args": {"description": "show the secrets this cell can see", "code": format!("import os\nsorted(k for k, v in os.environ.items() if k.endswith('_KEY') or k == 'GANTRY_HTTP_TOKEN' or v in ({TOKEN:?}, {KEY:?}))")}}),
        ];
        if debuggee {
            requests.push(json!({"tool": "debug", "args": {"op": "launch", "program": "show.py", "wait_ms": 30000}}));
        }
        requests
    });
    let shell = text(&replies[0]);
    assert!(!shell.contains("TOKEN-FOUND"), "{shell}");
    assert!(!shell.contains(TOKEN) && !shell.contains(KEY), "{shell}");
    assert!(shell.contains("mem"), "the reader ran: {shell}");
    let cell = text(&replies[1]);
    assert!(cell.starts_with("[]"), "{cell}");
    if debuggee {
        let launched = text(&replies[2]);
        assert!(launched.contains("debuggee sees []"), "{launched}");
    }
    eprintln!("confined, the reader said:\n{shell}");
}

/// A `PATH` whose first folder is `bin`, then the test's own.
fn path_with(bin: &Path) -> std::ffi::OsString {
    let mut dirs = vec![bin.to_path_buf()];
    dirs.extend(std::env::split_paths(&std::env::var_os("PATH").unwrap()));
    std::env::join_paths(dirs).unwrap()
}

#[test]
fn programs_planted_early_on_path_in_a_writable_cache_run_only_confined() {
    if !sandbox_here() {
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    // A cache folder commands may write (XDG_CACHE_HOME is one of the
    // sandbox's default caches), first on PATH.
    let cache = state.path().join("cache");
    let bin = cache.join("bin");
    let payload = Payload::new(ws.path());
    for name in ["python3", "python", "node", "dlv", "lldb-dap"] {
        let then = match gantry_process::program::on_path(name) {
            Some(real) => format!("exec '{}' \"$@\"", real.display()),
            None => "exit 1".into(),
        };
        payload.plant_script(&bin.join(name), name, &then);
    }
    // Start-up hooks the user's policy names (as a trusted workspace's
    // could): they run in what takes the policy, confined.
    let hooks = state.path().join("hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    std::fs::write(hooks.join("startup.py"), payload.python("PYTHONSTARTUP")).unwrap();
    std::fs::write(
        hooks.join("hook.js"),
        format!(
            "for (const f of [{:?}, {:?}]) {{ try {{ require('fs').appendFileSync(f, 'NODE_OPTIONS\\n') }} catch {{}} }}\n",
            payload.outside().join("NODE_OPTIONS").display().to_string(),
            ws.path().join("planted-ran").display().to_string()
        ),
    )
    .unwrap();
    std::fs::create_dir_all(state.path().join("home")).unwrap();
    std::fs::write(
        state.path().join("home/settings.json"),
        json!({"shellEnvironmentPolicy": {"set": {
            "NODE_OPTIONS": format!("--require {}", hooks.join("hook.js").display()),
            "PYTHONSTARTUP": hooks.join("startup.py"),
        }}})
        .to_string(),
    )
    .unwrap();
    for marker in ["requirements.txt", "go.mod", "Cargo.toml"] {
        std::fs::write(ws.path().join(marker), "").unwrap();
    }
    let mut command = common::gantry(ws.path(), state.path());
    command
        .env("XDG_CACHE_HOME", &cache)
        .env("PATH", path_with(&bin));
    let status = {
        let mut status = common::gantry(ws.path(), state.path());
        status
            .env("XDG_CACHE_HOME", &cache)
            .env("PATH", path_with(&bin))
            .arg("status");
        status.output().unwrap()
    };
    assert!(status.status.success(), "{status:?}");
    let replies = common::session_with(
        command,
        ws.path(),
        &[
            json!({"tool": "debug", "args": {"op": "adapters"}}),
            json!({"tool": "eval", "args": {"description": "a python cell through the planted path", "code": "1 + 1"}}),
            json!({"tool": "eval", "args": {"description": "a javascript cell through the planted path", "code": "1 + 1", "language": "javascript"}}),
            json!({"tool": "shell", "args": {"command": "python3 -c 'print(7 * 6)'"}}),
        ],
    );
    let said: Vec<String> = replies.iter().map(text).collect();
    assert_eq!(payload.landed_outside(), Vec::<String>::new(), "{said:#?}");
    assert!(said[1].starts_with('2'), "{}", said[1]);
    assert!(said[2].starts_with('2'), "{}", said[2]);
    assert!(said[3].contains("42"), "{}", said[3]);
    // They did run (confined): the planted python3 made the kernel's
    // environment, the planted node ran the JavaScript kernel, with its
    // NODE_OPTIONS hook.
    let ran = payload.ran_inside();
    for name in ["python3", "node", "NODE_OPTIONS"] {
        assert!(ran.iter().any(|line| line == name), "{name}: {ran:?}");
    }
}
