//! What commands run through `shell` inherit of Gantry's environment
//! (`shellEnvironmentPolicy`), through the real binary: Gantry is started
//! with secrets in its environment, `env` runs as the model would run it,
//! and what it prints is checked. The user level is `$GANTRY_HOME/settings.json`,
//! the workspace level the root's `.gantry/settings.json`.

// Tests build their fixtures directly.
#![allow(clippy::disallowed_methods)]

mod common;

use std::collections::BTreeMap;

use serde_json::{Value, json};

/// Variables Gantry is started with: its own secrets, two of the user's,
/// two plain ones and one of the core set (`LC_*`).
const STARTED_WITH: &[(&str, &str)] = &[
    ("LC_GANTRY_TEST", "core-1"),
    ("GANTRY_HTTP_TOKEN", "gantry-token-1"),
    ("BRAVE_API_KEY", "brave-key-1"),
    ("MY_API_KEY", "my-key-1"),
    ("DB_SECRET_X", "db-secret-1"),
    ("PLAIN_VISIBLE", "plain-1"),
    ("OTHER_PLAIN", "other-1"),
];

/// What bash and the shell tool set themselves, whatever the policy.
const ALWAYS_THERE: &[&str] = &[
    "PWD",
    "SHLVL",
    "_",
    "OLDPWD",
    "PAGER",
    "GIT_PAGER",
    "GIT_TERMINAL_PROMPT",
];

/// The sandbox's proxy, announced to every command with a network of its
/// own (not inherited: the sandbox's own).
fn proxy_variable(name: &str) -> bool {
    gantry_process::network::proxy::environment()
        .iter()
        .any(|(variable, _)| *variable == name)
}

struct Setup {
    ws: tempfile::TempDir,
    state: tempfile::TempDir,
}

impl Setup {
    fn new() -> Setup {
        Setup {
            ws: tempfile::tempdir().unwrap(),
            state: tempfile::tempdir().unwrap(),
        }
    }

    /// Writes the user level.
    fn user(&self, settings: Value) -> &Self {
        let home = self.state.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(home.join("settings.json"), settings.to_string()).unwrap();
        self
    }

    /// Writes the workspace level.
    fn workspace(&self, settings: Value) -> &Self {
        let dir = self.ws.path().join(".gantry");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("settings.json"), settings.to_string()).unwrap();
        self
    }

    fn gantry(&self) -> std::process::Command {
        let mut command = common::gantry(self.ws.path(), self.state.path());
        command.envs(STARTED_WITH.iter().copied());
        command
    }

    /// What `env` prints when the model runs it, by name.
    fn env(&self) -> BTreeMap<String, String> {
        let request = json!({"tool": "shell", "args": {"command": "env"}});
        let reply = common::session_with(self.gantry(), self.ws.path(), &[request]).remove(0);
        assert_eq!(reply["ok"], true, "{reply}");
        let text = reply["result"]["llm_content"][0]["text"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(text.contains("[exit code 0"), "{text}");
        text.lines()
            .filter_map(|line| line.split_once('='))
            .filter(|(name, _)| {
                !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            })
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect()
    }

    /// What `gantry status` prints.
    fn status(&self) -> String {
        let output = self.gantry().arg("status").output().unwrap();
        assert!(output.status.success(), "{output:?}");
        String::from_utf8(output.stdout).unwrap()
    }
}

fn has(env: &BTreeMap<String, String>, name: &str) -> bool {
    env.contains_key(name)
}

#[test]
fn by_default_no_secret_reaches_a_command() {
    let setup = Setup::new();
    let env = setup.env();
    for secret in [
        "GANTRY_HTTP_TOKEN",
        "BRAVE_API_KEY",
        "MY_API_KEY",
        "DB_SECRET_X",
    ] {
        assert!(!has(&env, secret), "{secret} reached the command: {env:?}");
    }
    assert_eq!(env["PLAIN_VISIBLE"], "plain-1");
    assert!(has(&env, "PATH"), "{env:?}");
    let status = setup.status();
    assert!(
        status.contains("command environment: inherit all; excluding *TOKEN*"),
        "{status}"
    );
}

#[test]
fn gantry_secrets_go_even_when_every_exclude_is_dropped() {
    let setup = Setup::new();
    setup.user(json!({"shellEnvironmentPolicy": {
        "inherit": "all", "ignoreDefaultExcludes": true, "exclude": [],
    }}));
    let env = setup.env();
    assert!(!has(&env, "GANTRY_HTTP_TOKEN"), "{env:?}");
    assert!(!has(&env, "BRAVE_API_KEY"), "{env:?}");
    // The user's own keys are theirs to pass on.
    assert_eq!(env["MY_API_KEY"], "my-key-1");
    assert_eq!(env["DB_SECRET_X"], "db-secret-1");
}

#[test]
fn inherit_core_leaves_only_the_core_set_and_what_is_set() {
    let setup = Setup::new();
    setup.user(json!({"shellEnvironmentPolicy": {
        "inherit": "core", "set": {"CI": "1", "HOME": "/nowhere"},
    }}));
    let env = setup.env();
    let core = [
        "HOME", "LOGNAME", "PATH", "SHELL", "USER", "USERNAME", "TMPDIR", "TEMP", "TMP", "LANG",
        "TERM",
    ];
    for name in env.keys() {
        assert!(
            core.contains(&name.as_str())
                || name.starts_with("LC_")
                || name == "CI"
                || ALWAYS_THERE.contains(&name.as_str())
                || proxy_variable(name),
            "{name} is not in the core set: {env:?}"
        );
    }
    assert!(has(&env, "PATH"), "{env:?}");
    assert_eq!(env["LC_GANTRY_TEST"], "core-1");
    assert_eq!(env["CI"], "1");
    assert_eq!(env["HOME"], "/nowhere", "set wins over what is inherited");
}

#[test]
fn include_only_and_exclude_are_case_insensitive_globs_and_set_wins() {
    let setup = Setup::new();
    setup.user(json!({"shellEnvironmentPolicy": {
        "includeOnly": ["path", "*_plain", "plain_*"],
        "exclude": ["*visible"],
        "set": {"OTHER_PLAIN": "from-set"},
    }}));
    let env = setup.env();
    assert!(has(&env, "PATH"), "{env:?}");
    assert!(!has(&env, "PLAIN_VISIBLE"), "excluded: {env:?}");
    assert_eq!(env["OTHER_PLAIN"], "from-set");
    assert!(!has(&env, "HOME"), "not included: {env:?}");
}

#[test]
fn a_workspace_may_tighten_but_not_loosen_unless_trusted() {
    let setup = Setup::new();
    setup
        .user(json!({"shellEnvironmentPolicy": {"inherit": "core"}}))
        .workspace(json!({"shellEnvironmentPolicy": {
            "inherit": "all", "exclude": ["lc_gantry_*"], "set": {"PLAIN_VISIBLE": "from-workspace"},
        }}));
    let env = setup.env();
    assert!(!has(&env, "PLAIN_VISIBLE"), "{env:?}");
    assert!(!has(&env, "OTHER_PLAIN"), "{env:?}");
    assert!(
        !has(&env, "LC_GANTRY_TEST"),
        "the workspace's exclude tightens: {env:?}"
    );
    assert!(has(&env, "PATH"), "{env:?}");
    let status = setup.status();
    assert!(
        status.contains("command environment: inherit core"),
        "{status}"
    );
    assert!(
        status.contains("`shellEnvironmentPolicy` inherit: all (wider than the user's `core`)")
            && status.contains("set: PLAIN_VISIBLE")
            && status.contains("trustedFolders"),
        "{status}"
    );

    // Trusted, the workspace's settings win, and still no secret passes.
    setup.user(json!({
        "shellEnvironmentPolicy": {"inherit": "core"},
        "trustedFolders": [setup.ws.path()],
    }));
    common::trust(setup.ws.path(), setup.state.path());
    let env = setup.env();
    assert_eq!(env["PLAIN_VISIBLE"], "from-workspace");
    assert_eq!(env["OTHER_PLAIN"], "other-1");
    assert!(
        !has(&env, "MY_API_KEY") && !has(&env, "GANTRY_HTTP_TOKEN"),
        "{env:?}"
    );
    let status = setup.status();
    assert!(
        status.contains("command environment: inherit all"),
        "{status}"
    );
    assert!(!status.contains("ignored"), "{status}");
}
