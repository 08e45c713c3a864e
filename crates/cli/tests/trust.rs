//! Trust by content through the real binary (SPEC §3): `gantry trust`
//! approves a workspace's `.gantry/settings.json` as it is, a folder
//! `trustedFolders` lists is trusted only while the file keeps that
//! content, and every run says when it is not and the command that
//! approves it. The gated key used is `extraRoots`, which lets `read_file`
//! reach a folder outside the workspace: what trust changes is seen in
//! what a tool can do.

// Tests build their fixtures directly.
#![allow(clippy::disallowed_methods)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

const SECRET: &str = "the-secret-beyond-the-workspace";

/// A workspace whose settings widen its roots to `outside`, a user whose
/// `trustedFolders` lists it (or not), and Gantry's home and state.
struct Scene {
    ws: tempfile::TempDir,
    outside: tempfile::TempDir,
    state: tempfile::TempDir,
}

impl Scene {
    fn new(listed: bool) -> Scene {
        let scene = Scene {
            ws: tempfile::tempdir().unwrap(),
            outside: tempfile::tempdir().unwrap(),
            state: tempfile::tempdir().unwrap(),
        };
        std::fs::write(scene.outside.path().join("secret.txt"), SECRET).unwrap();
        scene.settings(scene.ws.path());
        let home = scene.state.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        let folders: Vec<&Path> = if listed {
            vec![scene.ws.path()]
        } else {
            vec![]
        };
        std::fs::write(
            home.join("settings.json"),
            json!({ "trustedFolders": folders }).to_string(),
        )
        .unwrap();
        scene
    }

    /// Writes the settings that widen the roots in `root`'s `.gantry`.
    fn settings(&self, root: &Path) {
        std::fs::create_dir_all(root.join(".gantry")).unwrap();
        std::fs::write(root.join(".gantry/settings.json"), self.widening()).unwrap();
    }

    fn widening(&self) -> String {
        json!({"extraRoots": [self.outside.path().canonicalize().unwrap()]}).to_string()
    }

    /// Whether `read_file` in a run at `root` reaches the secret outside.
    fn reaches_outside(&self, root: &Path) -> bool {
        let secret = self
            .outside
            .path()
            .canonicalize()
            .unwrap()
            .join("secret.txt");
        let request = json!({"tool": "read_file", "args": {"path": secret}});
        let reply = common::session(root, self.state.path(), &[request]).remove(0);
        let reached = reply["ok"] == true;
        assert_eq!(reached, reply.to_string().contains(SECRET), "{reply}");
        reached
    }

    /// `gantry ARGS` run in `root`, which must end within a bound (a
    /// FIFO must block nothing).
    fn gantry(&self, root: &Path, args: &[&str]) -> Output {
        let mut child = common::gantry(root, self.state.path())
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let started = Instant::now();
        while child.try_wait().unwrap().is_none() {
            if started.elapsed() > Duration::from_secs(60) {
                child.kill().unwrap();
                panic!("gantry {args:?} in {} did not end", root.display());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        child.wait_with_output().unwrap()
    }

    /// `gantry status` in `root`: its report and its warnings.
    fn status(&self, root: &Path) -> (String, String) {
        let output = self.gantry(root, &["status"]);
        assert!(output.status.success(), "{output:?}");
        (text(&output.stdout), text(&output.stderr))
    }

    /// `gantry trust ARGS` in the workspace: whether it succeeded, and
    /// all it said.
    fn trust(&self, args: &[&str]) -> (bool, String) {
        let output = self.gantry(self.ws.path(), &[&["trust"], args].concat());
        let said = format!("{}{}", text(&output.stdout), text(&output.stderr));
        (output.status.success(), said)
    }

    fn file(&self) -> PathBuf {
        self.ws.path().join(".gantry/settings.json")
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The line of `status` that says how far the workspace is trusted.
fn trust_line(status: &str) -> &str {
    status
        .lines()
        .find(|line| line.starts_with("workspace trust: "))
        .unwrap_or_else(|| panic!("no trust line in:\n{status}"))
}

/// The command a message says to run, from `gantry trust` to its end.
fn command_in(message: &str) -> Vec<String> {
    let at = message
        .find("run: gantry trust ")
        .unwrap_or_else(|| panic!("no command in: {message}"));
    let line = message[at + "run: ".len()..].lines().next().unwrap();
    line.split(' ').map(String::from).collect()
}

#[test]
fn trusted_after_gantry_trust_and_untrusted_after_a_one_byte_change() {
    let scene = Scene::new(true);
    let ws = scene.ws.path();
    assert!(!scene.reaches_outside(ws), "listed, never approved");
    let (status, warnings) = scene.status(ws);
    assert!(trust_line(&status).contains("never approved"), "{status}");
    assert!(warnings.contains("is not trusted"), "{warnings}");

    let (ok, said) = scene.trust(&[]);
    assert!(ok && said.contains("sha256"), "{said}");
    assert!(scene.reaches_outside(ws));
    let (status, warnings) = scene.status(ws);
    assert!(
        trust_line(&status).starts_with("workspace trust: trusted"),
        "{status}"
    );
    assert!(!warnings.contains("not trusted"), "{warnings}");

    // One byte more, written by anyone: untrusted, said by every run with
    // the command that approves it, which then works as said.
    std::fs::write(scene.file(), format!("{}\n", scene.widening())).unwrap();
    assert!(!scene.reaches_outside(ws), "a changed file stayed trusted");
    let (status, warnings) = scene.status(ws);
    let line = trust_line(&status);
    assert!(line.contains("is not what you approved"), "{status}");
    assert!(warnings.contains("is not what you approved"), "{warnings}");
    let command = command_in(line);
    assert_eq!(command_in(&warnings), command);
    assert_eq!(command[..2], ["gantry", "trust"]);
    let output = scene.gantry(
        Path::new("/"),
        &command[1..].iter().map(String::as_str).collect::<Vec<_>>(),
    );
    assert!(output.status.success(), "{output:?}");
    assert!(scene.reaches_outside(ws));
}

#[test]
fn a_folder_trustedfolders_does_not_list_stays_untrusted_when_approved() {
    let scene = Scene::new(false);
    let (ok, said) = scene.trust(&[]);
    assert!(ok, "{said}");
    assert!(said.contains("stays untrusted until you add"), "{said}");
    assert!(!scene.reaches_outside(scene.ws.path()));
    let (status, _) = scene.status(scene.ws.path());
    assert!(
        trust_line(&status).contains("not in the `trustedFolders`"),
        "{status}"
    );
}

#[test]
fn a_symlinked_settings_file_or_gantry_folder_is_never_trusted() {
    let scene = Scene::new(true);
    let ws = scene.ws.path();
    // Approved as a regular file, then the same bytes behind a link.
    assert!(scene.trust(&[]).0);
    std::fs::rename(scene.file(), ws.join("real.json")).unwrap();
    std::os::unix::fs::symlink("../real.json", scene.file()).unwrap();
    assert!(!scene.reaches_outside(ws), "a linked file was trusted");
    let (status, _) = scene.status(ws);
    assert!(trust_line(&status).contains("is a symlink"), "{status}");
    let (ok, said) = scene.trust(&[]);
    assert!(!ok && said.contains("never trusted"), "{said}");

    std::fs::remove_file(scene.file()).unwrap();
    std::fs::rename(ws.join(".gantry"), ws.join("config")).unwrap();
    std::fs::rename(ws.join("real.json"), ws.join("config/settings.json")).unwrap();
    std::os::unix::fs::symlink("config", ws.join(".gantry")).unwrap();
    assert!(!scene.reaches_outside(ws), "a linked .gantry was trusted");
    let (ok, said) = scene.trust(&[]);
    assert!(!ok && said.contains("reached through one"), "{said}");
}

#[test]
fn a_fifo_or_directory_at_the_settings_path_blocks_nothing_and_is_never_trusted() {
    let scene = Scene::new(true);
    let ws = scene.ws.path();
    std::fs::remove_file(scene.file()).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(scene.file())
        .status()
        .unwrap();
    assert!(made.success());
    let (status, warnings) = scene.status(ws);
    assert!(trust_line(&status).contains("FIFO"), "{status}");
    assert!(warnings.contains("not a regular file"), "{warnings}");
    let (ok, said) = scene.trust(&[]);
    assert!(!ok && said.contains("never trusted"), "{said}");

    std::fs::remove_file(scene.file()).unwrap();
    std::fs::create_dir(scene.file()).unwrap();
    let (status, _) = scene.status(ws);
    assert!(trust_line(&status).contains("a directory"), "{status}");
    assert!(!scene.trust(&[]).0);
}

#[test]
fn unreadable_approvals_trust_nothing() {
    let scene = Scene::new(true);
    let ws = scene.ws.path();
    assert!(scene.trust(&[]).0);
    assert!(scene.reaches_outside(ws));
    // The approvals folder made a file (the tests may run as root, whom a
    // mode would not stop).
    let approvals = scene.state.path().join("home/trusted");
    std::fs::remove_dir_all(&approvals).unwrap();
    std::fs::write(&approvals, "").unwrap();
    assert!(
        !scene.reaches_outside(ws),
        "trusted without readable approvals"
    );
    let (status, _) = scene.status(ws);
    assert!(trust_line(&status).contains("cannot be read"), "{status}");
    let (ok, said) = scene.trust(&[]);
    assert!(!ok && said.contains("cannot record the approval"), "{said}");
}

#[test]
fn a_nested_settings_file_is_trusted_only_by_its_own_approval() {
    let scene = Scene::new(true);
    let ws = scene.ws.path();
    let sub = ws.join("sub");
    scene.settings(&sub);
    assert!(scene.trust(&[]).0);
    assert!(scene.reaches_outside(ws));
    assert!(
        !scene.reaches_outside(&sub),
        "trusted by the parent's approval"
    );

    let (ok, said) = scene.trust(&["sub"]);
    assert!(ok, "{said}");
    assert!(scene.reaches_outside(&sub));
    std::fs::write(
        sub.join(".gantry/settings.json"),
        format!(" {}", scene.widening()),
    )
    .unwrap();
    assert!(!scene.reaches_outside(&sub));
    assert!(scene.reaches_outside(ws), "each file by its own approval");
    let (ok, said) = scene.trust(&["sub/.gantry/settings.json"]);
    assert!(ok, "{said}");
    assert!(scene.reaches_outside(&sub));
}
