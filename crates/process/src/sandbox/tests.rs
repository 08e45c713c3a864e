use super::*;

fn section(json: serde_json::Value) -> Option<SandboxSettings> {
    Some(serde_json::from_value(json).unwrap())
}

#[test]
fn an_untrusted_workspace_only_tightens() {
    let user = section(serde_json::json!({"mode": "workspace-write", "caches": ["/c/a", "/c/b"]}));
    let workspace = section(serde_json::json!({
        "mode": "off",
        "writableRoots": ["/etc"],
        "network": false,
        "caches": ["/c/a", "/c/z"]
    }));
    let Layered { policy, ignored } =
        Policy::layered(user.clone(), workspace.clone(), false).unwrap();
    assert_eq!(policy.mode, Mode::WorkspaceWrite);
    assert!(policy.writable_roots.is_empty());
    assert_eq!(
        policy.network,
        Network::Deny,
        "network: false tightens, so it is honoured"
    );
    assert_eq!(policy.caches, vec![PathBuf::from("/c/a")]);
    assert_eq!(ignored.len(), 3, "{ignored:?}");
    assert!(ignored[0].starts_with("mode: off"), "{ignored:?}");
    assert!(ignored[1].starts_with("writableRoots: /etc"), "{ignored:?}");
    assert!(ignored[2].starts_with("caches: /c/z"), "{ignored:?}");

    // A stricter mode is honoured, and counts as chosen.
    let stricter = section(serde_json::json!({"mode": "read-only"}));
    let layered = Policy::layered(None, stricter, false).unwrap();
    assert_eq!(layered.policy.mode, Mode::ReadOnly);
    assert!(layered.policy.mode_chosen && layered.ignored.is_empty());

    // The user's network: false is not undone.
    let user = section(serde_json::json!({"network": false}));
    let workspace = section(serde_json::json!({"network": true}));
    let layered = Policy::layered(user, workspace, false).unwrap();
    assert_eq!(layered.policy.network, Network::Deny);
    assert_eq!(layered.ignored.len(), 1);
}

#[test]
fn a_trusted_workspace_wins_field_by_field() {
    let user = section(serde_json::json!({"network": false}));
    let workspace = section(serde_json::json!({
        "mode": "off", "writableRoots": ["/srv/x"], "network": true
    }));
    let Layered { policy, ignored } = Policy::layered(user, workspace, true).unwrap();
    assert_eq!(policy.mode, Mode::Off);
    assert_eq!(policy.writable_roots, vec![PathBuf::from("/srv/x")]);
    assert_eq!(policy.network, Network::Allow);
    assert!(ignored.is_empty());
}

#[test]
fn defaults_and_home_paths() {
    let Layered { policy, .. } = Policy::layered(None, None, false).unwrap();
    assert_eq!(policy, Policy::default());
    assert!(!policy.mode_chosen);
    assert_eq!(policy.caches, default_caches());
    let home = dirs::home_dir().unwrap();
    assert!(policy.caches.contains(&home.join(".npm")));
    let user = section(serde_json::json!({"writableRoots": ["~/work"], "caches": []}));
    let Layered { policy, .. } = Policy::layered(user, None, false).unwrap();
    assert_eq!(policy.writable_roots, vec![home.join("work")]);
    assert!(policy.caches.is_empty());
    let wrong: Result<SandboxSettings, _> =
        serde_json::from_value(serde_json::json!({"mode": "sometimes"}));
    assert!(wrong.unwrap_err().to_string().contains("unknown variant"));
}

#[test]
fn what_each_kernel_gets() {
    let roots = [PathBuf::from("/nonexistent-root")];
    let chosen = |mode| Policy {
        mode,
        mode_chosen: true,
        ..Policy::default()
    };
    // off is off everywhere, and says why.
    let off = Sandbox::on_kernel(chosen(Mode::Off), &roots, 7);
    assert!(!off.confines() && off.refusal().is_none());
    assert!(off.status()[0].contains("`sandbox.mode` is `off`"));
    // An old kernel: the default gives way, a chosen mode refuses.
    let old = Sandbox::on_kernel(Policy::default(), &roots, 2);
    assert!(!old.confines() && old.refusal().is_none());
    assert!(old.status()[0].contains("ABI 2 only"), "{:?}", old.status());
    let refused = Sandbox::on_kernel(chosen(Mode::ReadOnly), &roots, 2);
    let why = refused.refusal().unwrap();
    assert!(
        why.contains("`sandbox.mode: read-only` needs Landlock ABI 3"),
        "{why}"
    );
    assert!(why.contains("offers 2"), "{why}");
    // The writable places of each mode.
    let write = Sandbox::on_kernel(chosen(Mode::WorkspaceWrite), &roots, 0);
    assert!(write.writable().contains(&roots[0]));
    assert!(write.writable().contains(&std::env::temp_dir()));
    let read = Sandbox::on_kernel(chosen(Mode::ReadOnly), &roots, 0);
    assert!(read.writable().is_empty());
}

#[test]
fn relative_places_are_warned_about_and_never_writable() {
    let settings = Settings::from_value(serde_json::json!({
        "sandbox": {"writableRoots": ["target", "/abs"], "caches": ["cache"]}
    }))
    .unwrap();
    let warnings = check(&settings);
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings[0].contains("`target` is not an absolute path"),
        "{warnings:?}"
    );
    assert!(warnings[1].contains("`cache`"), "{warnings:?}");
}
