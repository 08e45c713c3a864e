//! The environment `shell` gives its commands, from the run's settings,
//! with real bash processes. The layering of user and workspace settings,
//! and Gantry's own secrets, are tried through the binary
//! (`crates/cli/tests/environment.rs`), where the environment Gantry starts
//! with can be chosen.

use std::collections::BTreeSet;

use gantry_core::testing::{err, ok};
use gantry_core::{Run, Settings, Workspace};
use serde_json::{Value, json};

fn run_with(dir: &std::path::Path, settings: Value) -> Run {
    let builder = Run::builder(Workspace::new(dir).unwrap())
        .settings(Settings::from_value(settings).unwrap());
    gantry_shell::register(builder).build()
}

#[tokio::test]
async fn inherit_none_gives_a_command_only_what_is_set() {
    let dir = tempfile::tempdir().unwrap();
    let run = run_with(
        dir.path(),
        json!({"shellEnvironmentPolicy": {"inherit": "none", "set": {"ONLY": "this one"}}}),
    );
    let text = ok(&run, "shell", json!({"command": "env"})).await;
    let names: BTreeSet<&str> = text
        .lines()
        .filter_map(|line| line.split_once('=').map(|(name, _)| name))
        .collect();
    // What bash sets itself, the shell tool's guards against prompts, and
    // the sandbox's proxy (the way out of the command's own network).
    let proxy = gantry_process::network::proxy::environment();
    let expected: BTreeSet<&str> = [
        "ONLY",
        "PWD",
        "SHLVL",
        "_",
        "PAGER",
        "GIT_PAGER",
        "GIT_TERMINAL_PROMPT",
    ]
    .into_iter()
    .chain(proxy.iter().map(|(name, _)| *name))
    .collect();
    assert_eq!(names, expected, "{text}");
    assert!(text.contains("ONLY=this one"), "{text}");
}

#[tokio::test]
async fn a_policy_the_settings_get_wrong_stops_commands_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    for (policy, says) in [
        (json!({"inherit": "some"}), "unknown variant `some`"),
        (json!({"exclude": ["a[b"]}), "exclude: "),
    ] {
        let run = run_with(dir.path(), json!({"shellEnvironmentPolicy": policy}));
        let message = err(&run, "shell", json!({"command": "true"})).await;
        assert!(
            message.contains("was not run: the sandbox settings cannot be read")
                && message.contains("settings `shellEnvironmentPolicy`")
                && message.contains(says),
            "{message}"
        );
    }
}
