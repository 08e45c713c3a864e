//! A real child given an exact environment: nothing of ours inherited,
//! what a policy keeps or a server's settings name (with `$VAR` expanded
//! from our own environment) passed.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::time::Duration;

use gantry_process::{
    Command, EnvPolicy, EnvPolicySettings, Inherit, Sandbox, Stdout, expand, expand_env,
};

const BOUND: Duration = Duration::from_secs(10);

/// The `NAME=value` lines `env` prints when started with `vars` only
/// (in a sandbox with the whole network: the proxy's variables are the
/// network tests' matter).
async fn env_of(vars: Vec<(OsString, OsString)>) -> BTreeSet<String> {
    let sandbox = Sandbox::new(
        gantry_process::sandbox::Policy {
            network: gantry_process::network::Network::Allow,
            ..Default::default()
        },
        &[],
    );
    let nothing = EnvPolicy::new(EnvPolicySettings {
        inherit: Some(Inherit::None),
        ..EnvPolicySettings::default()
    })
    .unwrap();
    let child = Command::new("/usr/bin/env", &sandbox)
        .inherit(nothing)
        .envs(vars)
        .stdout(Stdout::Capture {
            head: 1 << 16,
            tail: 0,
        })
        .spawn()
        .unwrap();
    let status = tokio::time::timeout(BOUND, child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success());
    let output = child.output().unwrap();
    tokio::time::timeout(BOUND, output.finished())
        .await
        .unwrap();
    output.lock().text().lines().map(String::from).collect()
}

#[tokio::test]
async fn a_configured_server_gets_exactly_what_its_settings_name() {
    let path = std::env::var_os("PATH").expect("tests run with a PATH");
    let path = path.to_str().expect("a UTF-8 PATH");
    let vars = vec![
        ("FROM_OURS".into(), expand_env("$PATH").unwrap()),
        (
            "WITH_DEFAULT".into(),
            expand("${GANTRY_TEST_UNSET:-fallback}/x", |_| None).unwrap(),
        ),
    ];
    let env = env_of(vars).await;
    assert_eq!(
        env,
        BTreeSet::from([
            format!("FROM_OURS={path}"),
            "WITH_DEFAULT=fallback/x".to_string(),
        ])
    );
}

#[tokio::test]
async fn a_policy_environment_is_the_whole_environment() {
    let policy = EnvPolicy::new(EnvPolicySettings {
        inherit: Some(gantry_process::Inherit::None),
        set: Some([("ONLY".to_string(), "1".to_string())].into()),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(
        env_of(policy.environment()).await,
        BTreeSet::from(["ONLY=1".to_string()])
    );
}
