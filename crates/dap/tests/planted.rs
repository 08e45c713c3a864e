//! A checkout that plants programs for the debug adapters (issue 21):
//! its `.venv/bin/python3`, `node_modules/.bin/dlv` and `lldb-dap`, its
//! own `debugpy/` package, `sitecustomize.py` and `.lldbinit`. What the
//! `debug` tool runs of them runs confined (each payload's marker outside
//! the writable roots never lands), and what must never run at all (the
//! checkout's `debugpy/` in the adapter or its probe) leaves no marker in
//! the workspace either; the adapters still work.

// Tests build their fixtures directly.
#![allow(clippy::disallowed_methods)]

mod common;

use std::path::PathBuf;

use common::{build, debug, debugpy, fixture, lldb, on_path, project, project_with};
use gantry_core::testing::Payload;
use serde_json::json;

const WAIT: u64 = 30_000;

/// The interpreter that has debugpy: what a planted `.venv/bin/python3`
/// hands over to, so the adapter still works through it.
fn real_python() -> PathBuf {
    let out = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("running python3");
    PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
}

/// `exec` of `binary` when it is installed, else a failing exit, as the
/// end of a planted script.
fn hand_over(binary: Option<PathBuf>) -> String {
    match binary {
        Some(binary) => format!("exec '{}' \"$@\"", binary.display()),
        None => "exit 1".into(),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn adapters_probes_the_projects_planted_binaries_confined() {
    if !debugpy() {
        return;
    }
    let mut files = fixture("python");
    for marker in ["go.mod", "Cargo.toml", "pubspec.yaml"] {
        files.push((marker.into(), b"".to_vec()));
    }
    let (dir, run) = project(&files, json!({}));
    let ws = dir.path();
    let payload = Payload::new(ws);
    let python = hand_over(Some(real_python()));
    payload.plant_script(&ws.join(".venv/bin/python3"), "venv-python3", &python);
    payload.plant_script(&ws.join(".venv/bin/python"), "venv-python", &python);
    let planted = [
        ("dlv", hand_over(on_path("dlv"))),
        ("lldb-dap", hand_over(on_path("lldb-dap"))),
        ("dart", hand_over(on_path("dart"))),
    ];
    for (name, then) in &planted {
        payload.plant_script(&ws.join("node_modules/.bin").join(name), name, then);
    }

    let said = debug(&run, json!({"op": "adapters"})).await;
    assert_eq!(payload.landed_outside(), Vec::<String>::new(), "{said}");
    // Probes run read-only: not even the workspace is written.
    assert_eq!(payload.ran_inside(), Vec::<String>::new(), "{said}");
    // Still told which adapters are usable, through the planted ones.
    let venv = ws.join(".venv/bin/python3");
    assert!(
        said.contains(&format!(
            "debugpy: usable (`python3 -I -m debugpy.adapter`, root ., binary {})",
            venv.display()
        )),
        "{said}"
    );
    for (name, adapter) in [("dlv", "delve"), ("lldb-dap", "lldb")] {
        let line = said
            .lines()
            .find(|line| line.starts_with(adapter))
            .unwrap_or_else(|| panic!("no {adapter} line in {said}"));
        if on_path(name).is_some() {
            let binary = ws.join("node_modules/.bin").join(name);
            assert!(
                line.contains("usable (`") && line.contains(&binary.display().to_string()),
                "{line}"
            );
        } else {
            assert!(line.contains("found but not usable"), "{line}");
        }
    }
    run.shutdown().await;
}

/// A `debugpy` package of the checkout's own, whose every module leaves
/// the markers: what `import debugpy.adapter` would run if the probe or
/// the adapter took the workspace's folder on `sys.path`.
fn plant_debugpy(files: &mut Vec<(String, Vec<u8>)>, payload: &Payload) {
    for module in [
        "debugpy/__init__.py",
        "debugpy/__main__.py",
        "debugpy/adapter/__init__.py",
        "debugpy/adapter/__main__.py",
        "debugpy/launcher/__init__.py",
        "debugpy/launcher/__main__.py",
    ] {
        files.push((module.into(), payload.python(module).into_bytes()));
    }
}

/// A launch of the fixture that stops at line 13 and runs to the end.
async fn launch_and_finish(run: &gantry_core::Run) {
    debug(
        run,
        json!({"op": "breakpoints", "file": "app.py", "lines": [13]}),
    )
    .await;
    let stop = debug(
        run,
        json!({"op": "launch", "program": "app.py", "wait_ms": WAIT}),
    )
    .await;
    assert!(stop.contains("at app.py:13 in main"), "{stop}");
    let end = debug(run, json!({"op": "continue", "wait_ms": WAIT})).await;
    assert!(end.contains("exited with code 0"), "{end}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_checkouts_own_debugpy_is_never_imported() {
    if !debugpy() {
        return;
    }
    let scratch = tempfile::tempdir().unwrap();
    let payload = Payload::new(scratch.path());
    let mut files = fixture("python");
    plant_debugpy(&mut files, &payload);
    let (dir, run) = project(&files, json!({}));
    // The markers go to the workspace itself.
    let payload_here = Payload::new(dir.path());
    let mut planted = Vec::new();
    plant_debugpy(&mut planted, &payload_here);
    for (name, content) in planted {
        std::fs::write(dir.path().join(name), content).unwrap();
    }

    let said = debug(&run, json!({"op": "adapters"})).await;
    assert!(said.contains("debugpy: usable"), "{said}");
    launch_and_finish(&run).await;
    run.shutdown().await;
    assert_eq!(payload_here.ran_inside(), Vec::<String>::new());
    assert_eq!(payload_here.landed_outside(), Vec::<String>::new());
    assert_eq!(payload.landed_outside(), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread")]
async fn python_start_up_hooks_run_only_in_the_confined_debuggee() {
    if !debugpy() {
        return;
    }
    // Start-up hooks in a folder of the temp directory (where a confined
    // command can plant them), put on PYTHONPATH with a start-up file by
    // the command environment policy (a trusted workspace's, here the
    // user's own): the adapter and its probe, isolated, honour none of
    // them; the debuggee, confined, may.
    let hooks = tempfile::tempdir().unwrap();
    let payload = Payload::new(hooks.path());
    for name in [
        "sitecustomize.py",
        "usercustomize.py",
        "startup.py",
        "planted.pth",
    ] {
        let code = payload.python(name).replace(
            &format!("{name:?} + '\\n'"),
            &format!("{name:?} + ' isolated=%d\\n' % __import__('sys').flags.isolated"),
        );
        let code = if name.ends_with(".pth") {
            // A .pth runs its `import` lines, one statement each.
            format!("import sys; exec({code:?})\n")
        } else {
            code
        };
        std::fs::write(hooks.path().join(name), code).unwrap();
    }
    let mut files = fixture("python");
    for name in ["sitecustomize.py", "usercustomize.py"] {
        let code = std::fs::read(hooks.path().join(name)).unwrap();
        files.push((name.into(), code));
    }
    let policy = json!({"shellEnvironmentPolicy": {"set": {
        "PYTHONPATH": hooks.path(),
        "PYTHONSTARTUP": hooks.path().join("startup.py"),
    }}});
    let (_dir, run) = project_with(&files, json!({}), policy);
    let said = debug(&run, json!({"op": "adapters"})).await;
    assert!(said.contains("debugpy: usable"), "{said}");
    launch_and_finish(&run).await;
    run.shutdown().await;
    assert_eq!(payload.landed_outside(), Vec::<String>::new());
    let ran = payload.ran_inside();
    // The hooks work: the debuggee (and debugpy's launcher) ran them.
    assert!(
        ran.iter().any(|line| line == "sitecustomize.py isolated=0"),
        "{ran:?}"
    );
    let isolated: Vec<&String> = ran.iter().filter(|l| l.ends_with("isolated=1")).collect();
    assert!(isolated.is_empty(), "a hook ran in the adapter: {ran:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_lldbinit_in_the_checkout_runs_nothing_outside() {
    if !lldb() {
        return;
    }
    let (dir, run) = project(&fixture("c"), json!({}));
    let ws = dir.path();
    build(ws);
    let payload = Payload::new(ws);
    // lldb's `platform shell` runs a command; an init file in the current
    // directory (the root, where the adapter starts) is what lldb sources
    // when it is told to trust one.
    let script = ws.join("payload.sh");
    payload.plant_script(&script, "lldbinit", "exit 0");
    std::fs::write(
        ws.join(".lldbinit"),
        format!("platform shell {}\n", script.display()),
    )
    .unwrap();
    let stop = debug(
        &run,
        json!({"op": "launch", "program": "build/app", "wait_ms": WAIT}),
    )
    .await;
    assert!(stop.contains("launched build/app under lldb"), "{stop}");
    run.shutdown().await;
    assert_eq!(payload.landed_outside(), Vec::<String>::new(), "{stop}");
    // Whether lldb sourced it, confined (it does not by default: its
    // `target.load-cwd-lldbinit` is `warn`), is recorded, not required.
    eprintln!("lldbinit ran inside: {:?}", payload.ran_inside());
}
