//! The sandbox's namespaces with the real kernel: protected paths stay as
//! they were (and git still works), a protected path a command creates is
//! taken out, an agent's socket and hidden paths are out of reach, a
//! command sees only its own processes, the build caches are each
//! workspace's own, a writable home keeps its profiles, and where
//! namespaces are refused Landlock holds alone and says so.
//!
//! These need Landlock ABI 4 and user namespaces; without them they fail,
//! unless `GANTRY_SKIP_SANDBOX=1` asks to skip them.

// Tests build their fixtures directly.
#![allow(clippy::disallowed_methods)]

use std::path::{Path, PathBuf};

use gantry_process::sandbox::{Mode, Policy};
use gantry_process::{Command, Sandbox};

mod confined;

use confined::{BOUND, landlock_here, run, scratch};

/// A sandbox that confines in namespaces (a failure where this machine
/// gives none: the sandbox tests are skipped only on request).
fn namespaced(policy: Policy, workspace: &Path) -> Sandbox {
    let sandbox = Sandbox::new(policy, &[workspace.to_path_buf()]);
    assert!(sandbox.confines(), "{:?}", sandbox.status());
    assert_eq!(sandbox.without_namespaces(), None, "{:?}", sandbox.status());
    sandbox
}

/// A git repository in a fresh workspace, with a hook and a config.
fn repository() -> tempfile::TempDir {
    let workspace = scratch();
    let git = |args: &[&str]| {
        let status = std::process::Command::new("git")
            .args(args)
            .current_dir(workspace.path())
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    };
    git(&["init", "-q"]);
    std::fs::create_dir_all(workspace.path().join(".git/modules/sub")).unwrap();
    std::fs::write(workspace.path().join(".git/modules/sub/config"), "[core]\n").unwrap();
    std::fs::write(
        workspace.path().join(".git/hooks/pre-commit"),
        "#!/bin/sh\n",
    )
    .unwrap();
    std::fs::create_dir(workspace.path().join(".vscode")).unwrap();
    std::fs::write(workspace.path().join(".vscode/settings.json"), "{}").unwrap();
    workspace
}

/// What git's config, its hooks and an editor's folder hold: what the
/// attacks below must leave as it was.
fn guarded(workspace: &Path) -> Vec<(PathBuf, Option<Vec<u8>>)> {
    [
        ".git/config",
        ".git/hooks/pre-commit",
        ".vscode/settings.json",
    ]
    .iter()
    .map(|name| {
        let path = workspace.join(name);
        let bytes = std::fs::read(&path).ok();
        (path, bytes)
    })
    .collect()
}

/// Every attack on what git and editors run later fails, and says why;
/// normal git work goes on.
#[tokio::test]
async fn protected_paths_stay_as_they_were_and_git_still_works() {
    if !landlock_here() {
        return;
    }
    let workspace = repository();
    let sandbox = namespaced(Policy::default(), workspace.path());
    let (code, output) = run(
        &sandbox,
        workspace.path(),
        "echo a > a.txt && git add a.txt && git -c user.name=t -c user.email=t@example.org \
         commit -q --no-verify -m one && git branch two && git checkout -q two && echo b > a.txt \
         && git stash -q && git stash pop -q && git log --oneline",
    )
    .await;
    assert_eq!(code, 0, "{output}");
    assert!(output.contains("one"), "{output}");
    let before = guarded(workspace.path());
    let attacks = [
        "git config core.fsmonitor 'touch /tmp/pwned'",
        "echo 'touch /tmp/pwned' >> .git/hooks/pre-commit",
        "echo x > .git/hooks/post-checkout",
        "rm -rf .git/hooks",
        "printf '\\tfsmonitor = x\\n' >> .git/modules/sub/config",
        "printf '[core]\\n\\tfsmonitor = x\\n' > .git/config",
        "mv .git .git-old && git init -q && git config core.fsmonitor x",
        "mv .git/config .git/config.old",
        "echo '{\"version\":\"2.0.0\"}' > .vscode/tasks.json",
        "mv .vscode .vscode-old",
        // Last: it takes the repository's other files with it (the
        // workspace is the command's to change), but not these.
        "rm -rf .git",
    ];
    for attack in attacks {
        let (code, output) = run(&sandbox, workspace.path(), attack).await;
        assert_ne!(code, 0, "`{attack}` succeeded: {output}");
        assert_eq!(
            guarded(workspace.path()),
            before,
            "`{attack}` changed: {output}"
        );
        assert!(
            sandbox
                .explain(&output)
                .is_some_and(|why| why.contains("protected")),
            "`{attack}` not explained: {output}"
        );
        assert!(!workspace.path().join(".git-old").exists());
    }
    // Started inside a protected folder: the command's directory is found
    // again beneath the mounts, not held from before them.
    for (dir, attack) in [
        (".git/hooks", "echo 'touch /tmp/pwned' >> pre-commit"),
        (".git", "printf '[core]\\n\\tfsmonitor = x\\n' >> config"),
        (".vscode", "echo '{}' > settings.json"),
    ] {
        let (code, output) = run(&sandbox, &workspace.path().join(dir), attack).await;
        assert_ne!(code, 0, "`{attack}` in {dir} succeeded: {output}");
        assert_eq!(
            guarded(workspace.path()),
            before,
            "`{attack}` in {dir} changed: {output}"
        );
    }
}

/// A protected path that did not exist cannot be guarded by a mount; what
/// the command creates there is taken out of the workspace when it ends.
#[tokio::test]
async fn a_protected_path_a_command_creates_is_taken_out() {
    if !landlock_here() {
        return;
    }
    let workspace = scratch();
    let sandbox = namespaced(Policy::default(), workspace.path());
    let child = Command::new("bash", &sandbox)
        .arg("-c")
        .arg("mkdir -p .claude && echo '{}' > .claude/settings.json && echo x > .envrc && echo ok > kept.txt")
        .current_dir(workspace.path())
        .spawn()
        .unwrap();
    let status = tokio::time::timeout(BOUND, child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success());
    let created = child.protected_created();
    assert_eq!(created.len(), 2, "{created:?}");
    let said = sandbox.quarantine(&created).unwrap();
    assert!(
        said.contains(".claude") && said.contains(".envrc"),
        "{said}"
    );
    assert!(!workspace.path().join(".claude").exists());
    assert!(!workspace.path().join(".envrc").exists());
    assert!(workspace.path().join("kept.txt").exists());
}

/// Hidden paths read as empty, even where the command may read and write
/// around them; a writable place beneath one stays as it is.
/// The sockets of services that act for whoever connects (the SSH agent,
/// the session bus that `systemd-run --user` drives, Docker's) are
/// hidden too: a command's own network does not cover a path's Unix
/// socket.
#[tokio::test]
async fn an_agents_socket_is_hidden() {
    if !landlock_here() {
        return;
    }
    let workspace = scratch();
    let agent = scratch();
    let socket = agent.path().join("agent.sock");
    let _listening = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    // SAFETY: read by `default_hidden` when the sandbox below is made;
    // no other test of this binary names an agent.
    unsafe { std::env::set_var("SSH_AUTH_SOCK", &socket) };
    let sandbox = namespaced(Policy::default(), workspace.path());
    unsafe { std::env::remove_var("SSH_AUTH_SOCK") };
    let connect = format!(
        "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{}'); \
         print('connected')\" 2>&1 | tail -1",
        socket.display()
    );
    let (_, output) = run(&sandbox, workspace.path(), &connect).await;
    assert!(!output.contains("connected"), "{output}");
    assert!(output.contains("ConnectionRefusedError"), "{output}");
    // Unconfined, the same connection is made: the socket is real.
    let off = Sandbox::new(
        Policy {
            mode: Mode::Off,
            ..Policy::default()
        },
        &[],
    );
    let (_, output) = run(&off, workspace.path(), &connect).await;
    assert!(output.contains("connected"), "{output}");
    let hidden = gantry_process::sandbox::default_hidden();
    let uid = rustix::process::getuid().as_raw();
    assert!(
        hidden.contains(&PathBuf::from(format!("/run/user/{uid}"))),
        "{hidden:?}"
    );
    assert!(
        hidden.contains(&PathBuf::from("/var/run/docker.sock")),
        "{hidden:?}"
    );
}

#[tokio::test]
async fn hidden_paths_read_as_empty() {
    if !landlock_here() {
        return;
    }
    let workspace = scratch();
    let secrets = scratch();
    std::fs::write(secrets.path().join("id_rsa"), "PRIVATE KEY").unwrap();
    std::fs::create_dir(secrets.path().join("kept")).unwrap();
    std::fs::write(secrets.path().join("kept/visible"), "visible").unwrap();
    let token = scratch();
    std::fs::write(token.path().join("token"), "TOKEN").unwrap();
    let policy = Policy {
        hide: vec![secrets.path().to_path_buf(), token.path().join("token")],
        ..Policy::default()
    };
    let sandbox = namespaced(policy, workspace.path()).also_writable(&secrets.path().join("kept"));
    let (_, output) = run(
        &sandbox,
        workspace.path(),
        &format!(
            "cat {0}/id_rsa; ls {0}; cat {0}/kept/visible; echo; cat {1}; echo end",
            secrets.path().display(),
            token.path().join("token").display()
        ),
    )
    .await;
    assert!(!output.contains("PRIVATE KEY"), "{output}");
    assert!(!output.contains("TOKEN"), "{output}");
    assert!(output.contains("visible"), "{output}");
    assert!(output.contains("end"), "{output}");
    // Gantry's own home and state are among the defaults.
    let hidden = gantry_process::sandbox::default_hidden();
    assert!(
        hidden.contains(&gantry_core::settings::state_dir()),
        "{hidden:?}"
    );
    assert!(
        hidden.contains(&gantry_core::settings::gantry_home()),
        "{hidden:?}"
    );
}

/// A command sees its own processes, and no other: not Gantry, not the
/// user's programs.
#[tokio::test]
async fn a_command_sees_its_own_processes_only() {
    if !landlock_here() {
        return;
    }
    let workspace = scratch();
    let sandbox = namespaced(Policy::default(), workspace.path());
    let gantry = std::process::id();
    let (code, output) = run(
        &sandbox,
        workspace.path(),
        &format!(
            "sleep 30 & ls /proc | grep -c '^[0-9]'; [ -e /proc/{gantry} ] && echo SEES-GANTRY; \
             kill -0 {gantry} 2>/dev/null && echo SIGNALLED; kill %1"
        ),
    )
    .await;
    assert_eq!(code, 0, "{output}");
    assert!(!output.contains("SIGNALLED"), "{output}");
    let count: usize = output.lines().next().unwrap().trim().parse().unwrap();
    // The namespace's init, bash, sleep, ls and grep: a handful, not the
    // machine's hundreds.
    assert!(count <= 8, "{output}");
    // Nothing in the namespace holds a way into the run's namespaces (the
    // user and mount namespaces every command's are made from, the
    // networks made ahead): not the command, not init.
    let (_, held) = run(
        &sandbox,
        workspace.path(),
        "for fd in /proc/1/fd/* /proc/self/fd/*; do readlink $fd; done; \
         echo READ",
    )
    .await;
    assert!(held.contains("READ"), "{held}");
    for namespace in ["user:[", "mnt:[", "net:["] {
        assert!(!held.contains(namespace), "{held}");
    }
}

/// What a command writes in a build cache never reaches the cache the
/// user's own tools read: a registry source edited inside (cargo never
/// checks extracted sources again) is unchanged outside, and a crate
/// built outside from that cache is the real one. Inside, the cache reads
/// as it is and takes writes, which the workspace's next command sees.
#[tokio::test]
async fn a_cache_a_command_writes_is_its_workspaces_own() {
    if !landlock_here() {
        return;
    }
    let workspace = scratch();
    let cache = scratch();
    let source = cache.path().join("registry/src/index/dep-1.0.0");
    std::fs::create_dir_all(source.join("src")).unwrap();
    std::fs::write(
        source.join("Cargo.toml"),
        "[package]\nname = \"dep\"\nversion = \"1.0.0\"\nedition = \"2021\"\n",
    )
    .unwrap();
    std::fs::write(source.join("src/lib.rs"), "pub fn answer() -> u32 { 42 }\n").unwrap();
    let policy = Policy {
        caches: vec![cache.path().to_path_buf()],
        ..Policy::default()
    };
    let sandbox = namespaced(policy, workspace.path());
    let (code, output) = run(
        &sandbox,
        workspace.path(),
        &format!(
            "cat {0}/src/lib.rs && printf 'fn main() {{ std::fs::write(\"/tmp/pwned\", \"\").ok(); }}\\n' \
             > {0}/build.rs && echo 'pub fn answer() -> u32 {{ 0 }}' > {0}/src/lib.rs && \
             mkdir -p {1}/downloads && echo crate > {1}/downloads/new.crate && echo edited",
            source.display(),
            cache.path().display()
        ),
    )
    .await;
    assert_eq!(code, 0, "{output}");
    assert!(
        output.contains("answer() -> u32 { 42 }"),
        "the cache reads as it is: {output}"
    );
    assert!(output.contains("edited"), "{output}");
    // Outside: as it was.
    assert!(
        !source.join("build.rs").exists(),
        "a build script was planted"
    );
    assert_eq!(
        std::fs::read_to_string(source.join("src/lib.rs")).unwrap(),
        "pub fn answer() -> u32 { 42 }\n"
    );
    assert!(!cache.path().join("downloads").exists());
    // The user's own cargo, unconfined, builds the crate as it really is.
    let user = scratch();
    std::fs::create_dir_all(user.path().join("src")).unwrap();
    std::fs::write(
        user.path().join("Cargo.toml"),
        format!(
            "[package]\nname = \"user\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n\n\
             [dependencies]\ndep = {{ path = \"{}\" }}\n",
            source.display()
        ),
    )
    .unwrap();
    std::fs::write(
        user.path().join("src/main.rs"),
        "fn main() { println!(\"{}\", dep::answer()); }\n",
    )
    .unwrap();
    let built = std::process::Command::new("cargo")
        .args(["run", "--offline", "--quiet"])
        .current_dir(user.path())
        .env("CARGO_TARGET_DIR", user.path().join("target"))
        .output()
        .unwrap();
    assert!(built.status.success(), "{built:?}");
    assert_eq!(String::from_utf8_lossy(&built.stdout).trim(), "42");
    // The workspace's next command finds what the last one wrote.
    let (_, output) = run(
        &sandbox,
        workspace.path(),
        &format!("cat {}/downloads/new.crate", cache.path().display()),
    )
    .await;
    assert!(output.contains("crate"), "{output}");
}

/// In a writable home, the shell profiles and git's own configuration
/// stay read-only: the user's next shell or `git` would run what a command
/// put there.
#[tokio::test]
async fn a_writable_home_keeps_its_profiles() {
    if !landlock_here() {
        return;
    }
    let home = dirs::home_dir().unwrap();
    assert!(
        [".bashrc", ".profile", ".gitconfig"]
            .iter()
            .any(|profile| home.join(profile).is_file()),
        "no profile in {} to attack",
        home.display()
    );
    let workspace = scratch();
    let policy = Policy {
        writable_roots: vec![home.clone()],
        ..Policy::default()
    };
    let sandbox = namespaced(policy, workspace.path());
    let probe = format!("gantry-profile-probe-{}", std::process::id());
    let (_, output) = run(
        &sandbox,
        workspace.path(),
        &format!(
            "for f in .bashrc .profile .gitconfig; do [ -e ~/$f ] && {{ echo 'touch /tmp/{probe}' >> ~/$f \
             && echo WROTE-$f; }}; done; touch ~/{probe} && echo home-writable; rm -f ~/{probe}"
        ),
    )
    .await;
    assert!(output.contains("home-writable"), "{output}");
    assert!(!output.contains("WROTE-"), "{output}");
    for profile in [".bashrc", ".profile", ".gitconfig"] {
        if let Ok(text) = std::fs::read_to_string(home.join(profile)) {
            assert!(!text.contains(&probe), "{profile} was changed");
        }
    }
}

/// Loopback inside a command works: a test server it starts, and its
/// clients.
#[tokio::test]
async fn a_test_server_on_loopback_inside_a_command_works() {
    if !landlock_here() {
        return;
    }
    let workspace = scratch();
    std::fs::write(workspace.path().join("index.html"), "served from inside").unwrap();
    let sandbox = namespaced(Policy::default(), workspace.path());
    let (code, output) = run(
        &sandbox,
        workspace.path(),
        "python3 -c '\nimport http.server, threading, urllib.request\n\
         server = http.server.ThreadingHTTPServer((\"127.0.0.1\", 0), http.server.SimpleHTTPRequestHandler)\n\
         threading.Thread(target=server.serve_forever, daemon=True).start()\n\
         print(urllib.request.urlopen(f\"http://127.0.0.1:{server.server_port}/index.html\").read().decode())\n'",
    )
    .await;
    assert_eq!(code, 0, "{output}");
    assert!(output.contains("served from inside"), "{output}");
}

/// Where the machine gives no user namespace, commands run under Landlock
/// alone, which says what is missing; `require` refuses them instead. Run
/// by [`where_namespaces_are_refused_landlock_holds_alone_and_says_so`] in
/// a user namespace of its own whose limit of nested ones is 0, as on a
/// machine that turned them off.
#[tokio::test]
#[ignore = "a helper: where_namespaces_are_refused_landlock_holds_alone_and_says_so runs it"]
async fn helper_without_user_namespaces() {
    if std::env::var_os("GANTRY_TEST_HELPER").is_none() || !landlock_here() {
        return;
    }
    let workspace = scratch();
    let outside = scratch();
    let sandbox = Sandbox::new(Policy::default(), &[workspace.path().to_path_buf()]);
    assert!(sandbox.confines(), "{:?}", sandbox.status());
    let why = sandbox.without_namespaces().expect("no namespaces here");
    assert!(why.contains("no user namespace"), "{why}");
    assert!(
        why.contains("protected paths") && why.contains("hidden paths"),
        "{why}"
    );
    assert!(
        sandbox.status().join("\n").contains("Landlock alone"),
        "{:?}",
        sandbox.status()
    );
    // Still confined by Landlock.
    let target = outside.path().join("escaped");
    let (_, output) = run(
        &sandbox,
        workspace.path(),
        &format!("touch {} 2>&1; echo ran", target.display()),
    )
    .await;
    assert!(output.contains("ran"), "{output}");
    assert!(!target.exists(), "{output}");
    // Required, refused with the reason and the ways forward.
    let required = Policy {
        require_namespaces: true,
        ..Policy::default()
    };
    let refused = Sandbox::new(required, &[workspace.path().to_path_buf()]);
    let error = Command::new("true", &refused).spawn().unwrap_err();
    let message = error.to_string();
    assert!(message.contains("sandbox.require"), "{message}");
    assert!(message.contains("no user namespace"), "{message}");
    println!("HELPER-PASSED");
}

#[tokio::test]
async fn where_namespaces_are_refused_landlock_holds_alone_and_says_so() {
    if !landlock_here() {
        return;
    }
    let output = tokio::process::Command::new("unshare")
        .args(["--user", "--map-root-user", "sh", "-c"])
        .arg(
            "echo 0 > /proc/sys/user/max_user_namespaces && exec \"$0\" --exact \
             helper_without_user_namespaces --ignored --nocapture --test-threads=1",
        )
        .arg(std::env::current_exe().unwrap())
        .env("GANTRY_TEST_HELPER", "1")
        .output();
    let output = tokio::time::timeout(BOUND, output)
        .await
        .expect("the helper ends")
        .unwrap();
    let said = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{said}");
    assert!(said.contains("HELPER-PASSED"), "{said}");
}

/// A fresh account has no cache folder yet, and a confined command cannot
/// make one in the read-only home: the sandbox makes it (XDG's mode 0700),
/// so a first `go build` or `pip install` through Gantry works. The
/// unprivileged rerun of `scripts/test.sh` runs this with a fresh home.
#[tokio::test]
async fn the_users_cache_folder_exists_for_a_commands_build_caches() {
    if !landlock_here() {
        return;
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|value| !value.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| dirs::home_dir().unwrap().join(".cache"));
    let workspace = scratch();
    let sandbox = namespaced(Policy::default(), workspace.path());
    let (code, output) = run(
        &sandbox,
        workspace.path(),
        &format!(
            "mkdir -p {0}/gantry-test-build && echo built > {0}/gantry-test-build/out && cat {0}/gantry-test-build/out",
            cache.display()
        ),
    )
    .await;
    assert_eq!(code, 0, "{output}");
    assert_eq!(output.trim(), "built");
    // What the command wrote went to its workspace's own overlay.
    assert!(!cache.join("gantry-test-build").exists());
}
