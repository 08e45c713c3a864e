//! The sandbox through the real binary: `gantry status` says what it does
//! (that nothing is exempt, the namespaces, and what an untrusted workspace
//! asked for in vain); `gantry session` runs `shell` confined, explains a
//! refused write and creates nothing outside; `mode: off` is said once per
//! run. Needs Landlock ABI 4, unless `GANTRY_SKIP_SANDBOX=1`.

// Tests build their fixtures directly.
#![allow(clippy::disallowed_methods)]

mod common;

use std::path::Path;

use gantry_process::sandbox::{NET_ABI, kernel_abi};
use serde_json::{Value, json};

fn sandbox_here() -> bool {
    if gantry_core::testing::skip_requested(
        "GANTRY_SKIP_SANDBOX",
        "the test, which needs Landlock ABI 4",
    ) {
        return false;
    }
    let abi = kernel_abi();
    assert!(
        abi >= NET_ABI,
        "this kernel offers Landlock ABI {abi}; the sandbox tests need {NET_ABI} (set \
         GANTRY_SKIP_SANDBOX=1 to skip them on purpose)"
    );
    true
}

fn write_settings(dir: &Path, settings: Value) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("settings.json"), settings.to_string()).unwrap();
}

fn status(ws: &Path, state: &Path) -> String {
    let output = common::gantry(ws, state).arg("status").output().unwrap();
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout).unwrap()
}

/// The text of each reply of one `gantry session`, every part of it.
fn texts(ws: &Path, state: &Path, commands: &[String]) -> Vec<String> {
    let requests: Vec<Value> = commands
        .iter()
        .map(|command| json!({"tool": "shell", "args": {"command": command}}))
        .collect();
    common::session(ws, state, &requests)
        .into_iter()
        .map(|reply| {
            assert_eq!(reply["ok"], true, "{reply}");
            reply["result"]["llm_content"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|part| part["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .collect()
}

/// A workspace, Gantry's home and state, and a file outside every
/// writable root that a confined command must fail to write.
struct Scene {
    ws: tempfile::TempDir,
    state: tempfile::TempDir,
    /// Holds `target`'s folder for the test's life.
    _outside: tempfile::TempDir,
    target: std::path::PathBuf,
}

impl Scene {
    /// A scene, where the sandbox tests run (see [`sandbox_here`]).
    fn if_sandbox_here() -> Option<Scene> {
        if !sandbox_here() {
            return None;
        }
        let outside = gantry_core::testing::outside_the_writable_defaults();
        Some(Scene {
            ws: tempfile::tempdir().unwrap(),
            state: tempfile::tempdir().unwrap(),
            target: outside.path().join("escaped.txt"),
            _outside: outside,
        })
    }
}

#[test]
fn status_and_session_show_the_sandbox() {
    let Some(scene) = Scene::if_sandbox_here() else {
        return;
    };
    let Scene {
        ws, state, target, ..
    } = &scene;

    let text = status(ws.path(), state.path());
    assert!(
        text.contains(&format!(
            "sandbox: workspace-write (Landlock ABI {}), network through the run's proxy (no \
             host allowed; others asked about where a person can answer)",
            kernel_abi()
        )),
        "{text}"
    );
    assert!(!text.contains("exempt:"), "{text}");
    assert!(
        text.contains("no exemption: every process Gantry starts"),
        "{text}"
    );
    assert!(
        text.contains("its own user, mount, PID and IPC namespaces"),
        "{text}"
    );
    assert!(text.contains(".git/config"), "{text}");

    let replies = texts(
        ws.path(),
        state.path(),
        &[format!("echo out > {}", target.display())],
    );
    assert!(
        replies[0].contains(&format!(
            "The sandbox probably refused writing `{}`",
            target.display()
        )),
        "{}",
        replies[0]
    );
    assert!(!target.exists());

    // An untrusted workspace cannot turn it off; status says what it ignored.
    write_settings(
        &ws.path().join(".gantry"),
        json!({"sandbox": {"mode": "off"}}),
    );
    let text = status(ws.path(), state.path());
    assert!(text.contains("sandbox: workspace-write"), "{text}");
    assert!(
        text.contains("ignored from the workspace's settings: mode: off"),
        "{text}"
    );
    std::fs::remove_dir_all(ws.path().join(".gantry")).unwrap();

    // The user can, and each run hears of it once.
    write_settings(
        &state.path().join("home"),
        json!({"sandbox": {"mode": "off"}}),
    );
    let text = status(ws.path(), state.path());
    assert!(
        text.contains("sandbox: off: `sandbox.mode` is `off`"),
        "{text}"
    );
    let command = format!("echo out > {}", target.display());
    let replies = texts(ws.path(), state.path(), &[command.clone(), command]);
    assert!(
        replies[0].contains("[run notice] the sandbox is off"),
        "{}",
        replies[0]
    );
    assert!(!replies[1].contains("sandbox is off"), "{}", replies[1]);
    assert!(target.exists());
}

/// The escape a trusted folder leaves open to a confined command: its
/// `.gantry/settings.json` is in the workspace, which the command may
/// write, and could turn the sandbox off for the next run. Trust is by
/// content: the file the command wrote is not one the user approved, so
/// the folder's trust is withheld until the user approves it with `gantry
/// trust`.
#[test]
fn a_settings_file_changed_during_a_run_is_trusted_only_once_confirmed() {
    let Some(scene) = Scene::if_sandbox_here() else {
        return;
    };
    let Scene {
        ws, state, target, ..
    } = &scene;
    let escape = format!("echo x > '{}' && echo WROTE-$((1+1))", target.display());
    write_settings(
        &state.path().join("home"),
        json!({"trustedFolders": [ws.path()]}),
    );

    let written = texts(
        ws.path(),
        state.path(),
        &["mkdir -p .gantry && echo '{\"sandbox\": {\"mode\": \"off\"}}' > .gantry/settings.json && echo written".into()],
    );
    assert!(written[0].contains("written"), "{}", written[0]);
    // A protected path a command creates is taken out of the workspace.
    assert!(
        written[0].contains("which is protected") && written[0].contains(".gantry"),
        "{}",
        written[0]
    );
    assert!(!ws.path().join(".gantry").exists());
    // Written by another hand (a `git pull`, say): not trusted until the
    // user approves what is there now.
    std::fs::create_dir_all(ws.path().join(".gantry")).unwrap();
    std::fs::write(
        ws.path().join(".gantry/settings.json"),
        r#"{"sandbox": {"mode": "off"}}"#,
    )
    .unwrap();

    // The next run is still confined, and says why.
    let refused = texts(ws.path(), state.path(), std::slice::from_ref(&escape));
    assert!(!refused[0].contains("WROTE-2"), "{}", refused[0]);
    assert!(
        !target.exists(),
        "the changed settings turned the sandbox off"
    );
    let output = common::gantry(ws.path(), state.path())
        .arg("status")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(
        said.contains("is not what you approved") && said.contains("gantry trust"),
        "{said}"
    );

    // Confirmed by the user, the folder's settings count again.
    let output = common::gantry(ws.path(), state.path())
        .arg("trust")
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let confirmed = texts(ws.path(), state.path(), std::slice::from_ref(&escape));
    assert!(confirmed[0].contains("WROTE-2"), "{}", confirmed[0]);
    assert!(target.exists());
}
