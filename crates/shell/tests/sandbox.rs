//! `shell` in the run's sandbox, through the real pipeline, with real bash
//! processes and the real kernel's Landlock and seccomp: writes outside the
//! writable places fail with a result that explains them and create
//! nothing; a real `cargo build` and `pip install --target` into the
//! workspace work; only `network: "allow"` reaches the host's loopback
//! (the default gives a command its own, `false` none); background jobs and their grandchildren are
//! confined; `sandbox: false` needs a person's yes; `mode: off` says so
//! once per run; an untrusted workspace cannot loosen the sandbox; the
//! workspace holds nothing the tool did not ask for.
//!
//! They need Landlock ABI 4 and fail without it, unless
//! `GANTRY_SKIP_SANDBOX=1` asks to skip them (scripts/test.sh says so).

// Tests build their fixtures directly.
#![allow(clippy::disallowed_methods)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use gantry_core::testing::{fails, ok, skip_requested};
use gantry_core::{
    Answer, ApprovalMode, CallErrorKind, Confirmation, Human, HumanError, Question, Run, Settings,
    Surface, Tier, Workspace, async_trait,
};
use gantry_process::sandbox::{NET_ABI, kernel_abi};
use serde_json::{Value, json};

/// Whether the test runs: always, unless skipped on request; a kernel
/// without what the sandbox needs fails it.
fn sandbox_here() -> bool {
    if skip_requested(
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

/// A directory outside the temp directory and the caches, so only a rule
/// of its own makes it writable.
fn scratch() -> tempfile::TempDir {
    gantry_core::testing::outside_the_writable_defaults()
}

fn run_with(dir: &Path, settings: Value, surface: Surface, human: Option<Arc<Person>>) -> Run {
    let mut builder = Run::builder(Workspace::new(dir).unwrap())
        .settings(Settings::from_value(settings).unwrap())
        .surface(surface);
    if let Some(human) = human {
        builder = builder.human(human);
    }
    gantry_shell::register(builder).build()
}

fn run_in(dir: &Path, settings: Value) -> Run {
    run_with(dir, settings, Surface::default(), None)
}

/// A person who answers `approve` and remembers what they were shown.
struct Person {
    approve: bool,
    shown: Mutex<Vec<Confirmation>>,
}

impl Person {
    fn new(approve: bool) -> Arc<Person> {
        Arc::new(Person {
            approve,
            shown: Mutex::new(Vec::new()),
        })
    }
}

#[async_trait]
impl Human for Person {
    async fn confirm(&self, _: &str, confirmation: &Confirmation) -> Result<bool, HumanError> {
        self.shown.lock().unwrap().push(confirmation.clone());
        Ok(self.approve)
    }

    async fn ask(&self, _: &Question) -> Result<Answer, HumanError> {
        Ok(Answer::Skipped)
    }
}

#[tokio::test]
async fn a_write_outside_fails_explained_and_a_write_inside_works() {
    if !sandbox_here() {
        return;
    }
    let workspace = scratch();
    let outside = scratch();
    let target = outside.path().join("escaped.txt");
    let run = run_in(workspace.path(), json!({}));
    let text = ok(
        &run,
        "shell",
        json!({"command": format!("echo in > inside.txt && echo out > {}", target.display())}),
    )
    .await;
    assert!(text.contains("Permission denied"), "{text}");
    assert!(text.contains("[exit code 1"), "{text}");
    assert!(
        text.contains(&format!(
            "The sandbox probably refused writing `{}`",
            target.display()
        )),
        "{text}"
    );
    assert!(text.contains("`sandbox.writableRoots`"), "{text}");
    assert!(text.contains("`sandbox: false`"), "{text}");
    assert!(!target.exists(), "{text}");
    assert_eq!(
        std::fs::read_to_string(workspace.path().join("inside.txt")).unwrap(),
        "in\n"
    );

    // The user's writableRoots widen it.
    let run = run_in(
        workspace.path(),
        json!({"sandbox": {"writableRoots": [outside.path()]}}),
    );
    let text = ok(
        &run,
        "shell",
        json!({"command": format!("echo out > {}", target.display())}),
    )
    .await;
    assert!(text.contains("[exit code 0"), "{text}");
    assert!(target.exists());
}

#[tokio::test]
async fn a_background_job_and_its_grandchildren_are_confined() {
    if !sandbox_here() {
        return;
    }
    let workspace = scratch();
    let outside = scratch();
    let (a, b) = (outside.path().join("a"), outside.path().join("b"));
    let run = run_in(workspace.path(), json!({}));
    let started = ok(
        &run,
        "shell",
        json!({
            "command": format!(
                "(sh -c 'touch {a}'; echo grandchild:$?) & wait; setsid sh -c 'touch {b}; echo setsid:$?' & wait; echo done > done.txt",
                a = a.display(), b = b.display()
            ),
            "is_background": true
        }),
    )
    .await;
    assert!(started.contains("bg_1"), "{started}");
    let mut report = String::new();
    for _ in 0..200 {
        let polled = ok(&run, "shell", json!({"handle": "bg_1"})).await;
        report.push_str(&polled);
        if polled.contains("exit code") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(report.contains("grandchild:1"), "{report}");
    assert!(report.contains("setsid:1"), "{report}");
    assert!(
        report.contains("The sandbox probably refused writing"),
        "{report}"
    );
    assert!(!a.exists() && !b.exists());
    assert!(workspace.path().join("done.txt").exists(), "{report}");
}

#[tokio::test]
async fn only_network_allow_reaches_the_hosts_loopback() {
    if !sandbox_here() {
        return;
    }
    let workspace = scratch();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let command = json!({"command": format!("echo hello > /dev/tcp/127.0.0.1/{port} && echo made it | tr a-z A-Z")});

    let open = run_in(workspace.path(), json!({"sandbox": {"network": "allow"}}));
    let (text, accepted) = tokio::join!(ok(&open, "shell", command.clone()), listener.accept());
    assert!(text.contains("MADE IT"), "{text}");
    assert!(accepted.is_ok());

    // The default: the command's own loopback, where nothing listens.
    let own = run_in(workspace.path(), json!({}));
    let text = ok(&own, "shell", command.clone()).await;
    assert!(
        !text.contains("MADE IT") && text.contains("Connection refused"),
        "{text}"
    );
    assert!(
        text.contains("[sandbox] The command has a network of its own")
            && text.contains("`sandbox.network.hostPorts`"),
        "{text}"
    );

    let closed = run_in(workspace.path(), json!({"sandbox": {"network": false}}));
    let text = ok(&closed, "shell", command).await;
    assert!(!text.contains("MADE IT"), "{text}");
    assert!(
        text.contains("a network connection (`sandbox.network: false`"),
        "{text}"
    );
    let nothing = tokio::time::timeout(Duration::from_millis(200), listener.accept()).await;
    assert!(nothing.is_err(), "a connection got through");
}

#[tokio::test]
async fn cargo_build_and_pip_install_target_work_in_the_workspace() {
    if !sandbox_here() {
        return;
    }
    let workspace = scratch();
    let root = workspace.path();
    std::fs::create_dir_all(root.join("hello/src")).unwrap();
    std::fs::write(
        root.join("hello/Cargo.toml"),
        "[package]\nname = \"hello\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .unwrap();
    std::fs::write(
        root.join("hello/src/main.rs"),
        "fn main() { println!(\"hello from the sandbox\"); }\n",
    )
    .unwrap();
    std::fs::create_dir_all(root.join("pkg/tinypkg")).unwrap();
    std::fs::write(root.join("pkg/tinypkg/__init__.py"), "ANSWER = 42\n").unwrap();
    std::fs::write(
        root.join("pkg/setup.py"),
        "from setuptools import setup\nsetup(name='tinypkg', version='1.0', packages=['tinypkg'])\n",
    )
    .unwrap();
    let run = run_in(root, json!({}));

    let text = ok(
        &run,
        "shell",
        json!({"command": "cargo run --offline --quiet", "directory": "hello", "timeout": 300}),
    )
    .await;
    assert!(text.contains("hello from the sandbox"), "{text}");
    assert!(text.contains("[exit code 0"), "{text}");
    assert!(!text.contains("[sandbox]"), "{text}");

    // The interpreter itself, not a pyenv shim: a shim rehashes after
    // `pip install`, writing ~/.pyenv/shims, which the sandbox rightly
    // refuses (and explains); the install is what this checks.
    let text = ok(
        &run,
        "shell",
        json!({"command": "PY=$(python3 -c 'import sys; print(sys.executable)') && \"$PY\" -m pip install --no-index --no-build-isolation --disable-pip-version-check --target site ./pkg && PYTHONPATH=site \"$PY\" -c 'import tinypkg; print(\"answer\", tinypkg.ANSWER)'", "timeout": 300}),
    )
    .await;
    assert!(text.contains("answer 42"), "{text}");
    assert!(text.contains("[exit code 0"), "{text}");
}

#[tokio::test]
async fn sandbox_false_needs_a_persons_yes() {
    if !sandbox_here() {
        return;
    }
    let workspace = scratch();
    let outside = scratch();
    let target = outside.path().join("unconfined.txt");
    let call = json!({
        "command": format!("echo out > {}", target.display()),
        "sandbox": false
    });
    let confirming = Surface::new(Tier::Exec, ApprovalMode::Default);

    // Declined: nothing runs.
    let person = Person::new(false);
    let run = run_with(
        workspace.path(),
        json!({}),
        confirming,
        Some(person.clone()),
    );
    let error = fails(&run, "shell", call.clone(), CallErrorKind::Refused).await;
    assert!(error.message.contains("declined"), "{}", error.message);
    let shown = person.shown.lock().unwrap().clone();
    assert_eq!(shown.len(), 1);
    assert!(
        shown[0].summary.contains("OUTSIDE THE SANDBOX"),
        "{shown:?}"
    );
    assert!(!target.exists());

    // Under yolo no one is asked, so it is refused.
    let yolo = run_with(
        workspace.path(),
        json!({}),
        Surface::new(Tier::Exec, ApprovalMode::Yolo),
        None,
    );
    let error = fails(&yolo, "shell", call.clone(), CallErrorKind::Failed).await;
    assert!(
        error.message.contains("approval mode `yolo`"),
        "{}",
        error.message
    );
    assert!(!target.exists());

    // Approved: it runs unconfined, and the result says so.
    let run = run_with(
        workspace.path(),
        json!({}),
        confirming,
        Some(Person::new(true)),
    );
    let text = ok(&run, "shell", call.clone()).await;
    assert!(text.contains("[exit code 0"), "{text}");
    assert!(text.contains("run outside the sandbox"), "{text}");
    assert!(target.exists());

    // Under client, the client's own prompt was the yes.
    std::fs::remove_file(&target).unwrap();
    let client = run_in(workspace.path(), json!({}));
    let text = ok(&client, "shell", call).await;
    assert!(text.contains("run outside the sandbox"), "{text}");
    assert!(target.exists());
}

#[tokio::test]
async fn mode_off_runs_unconfined_and_says_so_once_per_run() {
    if !sandbox_here() {
        return;
    }
    let workspace = scratch();
    let outside = scratch();
    let target = outside.path().join("off.txt");
    let run = run_in(workspace.path(), json!({"sandbox": {"mode": "off"}}));
    let call = json!({"command": format!("echo out > {}", target.display())});
    let first = ok(&run, "shell", call.clone()).await;
    assert!(
        first.contains("[run notice] the sandbox is off: `sandbox.mode` is `off`"),
        "{first}"
    );
    assert!(target.exists());
    let second = ok(&run, "shell", call).await;
    assert!(!second.contains("sandbox is off"), "{second}");
    // A new run says it again.
    let again = run_in(workspace.path(), json!({"sandbox": {"mode": "off"}}));
    assert!(
        ok(&again, "shell", json!({"command": "true"}))
            .await
            .contains("the sandbox is off")
    );
}

#[tokio::test]
async fn an_untrusted_workspace_cannot_loosen_the_sandbox_and_status_says_so() {
    if !sandbox_here() {
        return;
    }
    let home = scratch();
    let workspace = scratch();
    let outside = scratch();
    let target = outside.path().join("loosened.txt");
    std::fs::create_dir(workspace.path().join(".gantry")).unwrap();
    std::fs::write(
        workspace.path().join(".gantry/settings.json"),
        json!({"sandbox": {"mode": "off", "writableRoots": [outside.path()]}}).to_string(),
    )
    .unwrap();
    let user = home.path().join("settings.json");
    std::fs::write(&user, "{}").unwrap();
    let settings = Settings::load_from(&user, workspace.path()).unwrap();
    let run = gantry_shell::register(
        Run::builder(Workspace::new(workspace.path()).unwrap()).settings(settings),
    )
    .build();
    let text = ok(
        &run,
        "shell",
        json!({"command": format!("echo out > {}", target.display())}),
    )
    .await;
    assert!(text.contains("The sandbox probably refused"), "{text}");
    assert!(!target.exists());

    let family: &dyn gantry_core::Family = &gantry_shell::FAMILY;
    let status = family.status(&run).await.join("\n");
    assert!(
        status.contains("sandbox: workspace-write (Landlock ABI"),
        "{status}"
    );
    assert!(
        status.contains("no exemption: every process Gantry starts runs in it"),
        "{status}"
    );
    assert!(
        status.contains("ignored from the workspace's settings: mode: off"),
        "{status}"
    );
    let warnings = family.check_settings(run.settings()).join("\n");
    assert!(warnings.contains("writableRoots"), "{warnings}");
}

/// Every file in `dir`, recursively, with its content.
fn tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path.clone());
                found.push((path, Vec::new()));
            } else {
                let bytes = std::fs::read(&path).unwrap();
                found.push((path, bytes));
            }
        }
    }
    found.sort();
    found
}

#[tokio::test]
async fn the_workspace_holds_only_what_the_commands_wrote() {
    if !sandbox_here() {
        return;
    }
    let workspace = scratch();
    std::fs::write(workspace.path().join("a.txt"), "a").unwrap();
    let before = tree(workspace.path());
    let run = run_in(workspace.path(), json!({"sandbox": {"network": false}}));
    ok(
        &run,
        "shell",
        json!({"command": "cat a.txt; ls -la; touch /nope 2>&1"}),
    )
    .await;
    ok(
        &run,
        "shell",
        json!({"command": "sleep 0", "is_background": true}),
    )
    .await;
    run.shutdown().await;
    assert_eq!(tree(workspace.path()), before);
}

/// A tool that calls `shell` from inside itself, as a kernel cell's
/// bridge does: the nested call goes through the real pipeline.
struct Outer;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct OuterParams {
    /// What to pass to `shell`.
    args: Value,
}

#[async_trait]
impl gantry_core::Tool for Outer {
    type Params = OuterParams;

    fn spec(&self) -> gantry_core::ToolSpec {
        gantry_core::ToolSpec::new(
            "outer",
            "Outer",
            Tier::Exec,
            "Calls shell on its caller's behalf.",
        )
    }

    fn describe(&self, _: &OuterParams) -> String {
        "call shell".into()
    }

    async fn execute(
        &self,
        params: OuterParams,
        ctx: gantry_core::ToolContext,
    ) -> Result<gantry_core::ToolResult, gantry_core::ToolError> {
        ctx.caller()
            .call("shell", params.args)
            .await
            .map_err(|e| gantry_core::ToolError::failed(e.message))
    }
}

#[tokio::test]
async fn under_client_a_nested_sandbox_false_is_refused() {
    if !sandbox_here() {
        return;
    }
    let workspace = scratch();
    let outside = scratch();
    let target = outside.path().join("nested.txt");
    let run = gantry_shell::register(
        Run::builder(Workspace::new(workspace.path()).unwrap()).settings(Settings::default()),
    )
    .tool(Outer)
    .build();
    let shell_args =
        json!({"command": format!("echo out > {}", target.display()), "sandbox": false});
    let error = fails(
        &run,
        "outer",
        json!({"args": shell_args}),
        CallErrorKind::Failed,
    )
    .await;
    assert!(
        error
            .message
            .contains("the client approved the call this one was made from"),
        "{}",
        error.message
    );
    assert!(!target.exists());
    // Confined, the same nested call runs.
    let text = ok(
        &run,
        "outer",
        json!({"args": {"command": "echo nested-ok"}}),
    )
    .await;
    assert!(text.contains("nested-ok"), "{text}");
}
