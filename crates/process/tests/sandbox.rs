//! The sandbox with the real kernel: Landlock and seccomp applied to real
//! commands under the real reaper. Writes outside the writable places
//! fail and leave nothing; writes inside work; a grandchild and a process
//! that left the group are confined too; `network: false` refuses a
//! loopback connection and a UDP socket that `network: true` allows; the
//! test process itself (Gantry) stays unconfined.
//!
//! These need Landlock ABI 4; without it they fail, unless
//! `GANTRY_SKIP_SANDBOX=1` asks to skip them.

// Tests build their fixtures directly.
#![allow(clippy::disallowed_methods)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use gantry_process::network::Network;
use gantry_process::sandbox::{FS_ABI, Mode, NET_ABI, Policy, kernel_abi};
use gantry_process::{Command, Reach, Sandbox, Stderr, Stdout};

const BOUND: Duration = Duration::from_secs(20);

/// Whether the sandbox tests run: always, unless skipped on request; a
/// kernel that cannot run them is a failure that says so.
fn landlock_here() -> bool {
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
    gantry_process::reaper::use_program(reaper_program());
    assert_eq!(gantry_process::reaper::reach(), Reach::Descendants);
    true
}

/// The reaper cargo built, unless `GANTRY_REAPER` names a copy: the
/// unprivileged rerun of `scripts/test.sh` runs copies of these binaries
/// from a folder its user can enter, which the checkout may not be.
fn reaper_program() -> std::path::PathBuf {
    std::env::var_os(gantry_process::reaper::ENV)
        .map(Into::into)
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_gantry-reap").into())
}

/// A directory outside the temp directory and the caches, so only a rule
/// of its own makes it writable.
fn scratch() -> tempfile::TempDir {
    gantry_core::testing::outside_the_writable_defaults()
}

fn sandbox(mode: Mode, network: bool, workspace: &Path) -> Sandbox {
    let network = match network {
        true => Network::Allow,
        false => Network::Deny,
    };
    let policy = Policy {
        mode,
        mode_chosen: true,
        network,
        ..Policy::default()
    };
    let sandbox = Sandbox::new(policy, &[workspace.to_path_buf()]);
    assert!(sandbox.confines(), "{:?}", sandbox.status());
    sandbox
}

/// Runs `script` with bash in `dir`, confined by `sandbox`: its exit code
/// and its output (stdout and stderr together).
async fn run(sandbox: &Sandbox, dir: &Path, script: &str) -> (i32, String) {
    let child = Command::new("bash", sandbox)
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .stdout(Stdout::Capture {
            head: 1 << 16,
            tail: 1 << 16,
        })
        .stderr(Stderr::Stdout)
        .spawn()
        .unwrap();
    let status = tokio::time::timeout(BOUND, child.wait())
        .await
        .expect("the command ends")
        .unwrap();
    tokio::time::timeout(BOUND, child.output().unwrap().finished())
        .await
        .unwrap();
    let output = child.output().unwrap().lock();
    let text = String::from_utf8_lossy(output.head()).into_owned()
        + &String::from_utf8_lossy(&output.tail());
    (status.code().unwrap_or(-1), text)
}

#[tokio::test]
async fn writes_land_only_in_the_writable_places_and_refusals_are_explained() {
    if !landlock_here() {
        return;
    }
    let workspace = scratch();
    let outside = scratch();
    let sandbox = sandbox(Mode::WorkspaceWrite, true, workspace.path());
    let target = outside.path().join("escaped");

    let (code, output) = run(
        &sandbox,
        workspace.path(),
        &format!(
            "echo inside > made.txt && mkdir -p sub/deeper && echo x > sub/deeper/f && \
             echo tmp > \"${{TMPDIR:-/tmp}}/gantry-sandbox-$$\" && rm \"${{TMPDIR:-/tmp}}/gantry-sandbox-$$\" && \
             echo ok > /dev/null && echo inside-done && touch {}",
            target.display()
        ),
    )
    .await;
    assert_ne!(code, 0, "{output}");
    assert!(output.contains("inside-done"), "{output}");
    assert!(output.contains("Permission denied"), "{output}");
    assert!(
        !target.exists(),
        "the sandbox let {} be created",
        target.display()
    );
    assert_eq!(
        std::fs::read_to_string(workspace.path().join("made.txt")).unwrap(),
        "inside\n"
    );
    assert!(workspace.path().join("sub/deeper/f").is_file());

    let explained = sandbox.explain(&output).expect("the refusal is explained");
    assert!(
        explained.contains(&target.display().to_string()),
        "{explained}"
    );
    assert!(explained.contains("writableRoots"), "{explained}");
    assert!(explained.contains("sandbox: false"), "{explained}");
    // A failure that is not the sandbox's is not blamed on it.
    assert_eq!(sandbox.explain("error: no such file: /nope/x"), None);
    assert_eq!(
        sandbox.explain(&format!(
            "cannot open '{}': Permission denied",
            workspace.path().join("x").display()
        )),
        None
    );

    // Truncating and removing a file outside are refused too.
    let kept = outside.path().join("kept");
    std::fs::write(&kept, "precious").unwrap();
    let (_, output) = run(
        &sandbox,
        workspace.path(),
        &format!(": > {0}; rm -f {0}; mv {0} {0}.moved", kept.display()),
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(&kept).unwrap(),
        "precious",
        "{output}"
    );

    // Gantry itself (this process) is not confined by any of it.
    std::fs::write(&target, "gantry may").unwrap();
}

#[tokio::test]
async fn writable_roots_widen_and_read_only_narrows() {
    if !landlock_here() {
        return;
    }
    let workspace = scratch();
    let extra = scratch();
    let policy = Policy {
        mode: Mode::WorkspaceWrite,
        mode_chosen: true,
        writable_roots: vec![extra.path().to_path_buf()],
        ..Policy::default()
    };
    let widened = Sandbox::new(policy, &[workspace.path().to_path_buf()]);
    let (code, output) = run(
        &widened,
        workspace.path(),
        &format!("touch {}/allowed", extra.path().display()),
    )
    .await;
    assert_eq!(code, 0, "{output}");
    assert!(extra.path().join("allowed").exists());

    // Gantry's own directory for a program (a kernel's environment).
    let own = scratch();
    let with_own = widened.also_writable(own.path());
    let (code, output) = run(
        &with_own,
        workspace.path(),
        &format!("touch {}/mine", own.path().display()),
    )
    .await;
    assert_eq!(code, 0, "{output}");
    let (code, _) = run(
        &widened,
        workspace.path(),
        &format!("touch {}/not-before", own.path().display()),
    )
    .await;
    assert_ne!(code, 0, "the sandbox it came from is unchanged");

    let read_only = sandbox(Mode::ReadOnly, true, workspace.path());
    let (code, output) = run(
        &read_only,
        workspace.path(),
        "cat /etc/hostname >/dev/null && python3 -c 'import pty; pty.openpty()' && echo read-ok \
         && touch made-here",
    )
    .await;
    assert_ne!(code, 0, "{output}");
    assert!(output.contains("read-ok"), "{output}");
    assert!(!workspace.path().join("made-here").exists());
    let explained = read_only.explain(&output).expect("explained");
    assert!(
        explained.contains("a write (in `read-only` mode"),
        "{explained}"
    );
    assert!(explained.contains("workspace-write"), "{explained}");
}

#[tokio::test]
async fn grandchildren_and_processes_that_left_the_group_are_confined() {
    if !landlock_here() {
        return;
    }
    let workspace = scratch();
    let outside = scratch();
    let sandbox = sandbox(Mode::WorkspaceWrite, true, workspace.path());
    let (a, b) = (outside.path().join("a"), outside.path().join("b"));
    let (_, output) = run(
        &sandbox,
        workspace.path(),
        &format!(
            "(sh -c 'touch {a}' ; echo grandchild:$?) & wait; \
             setsid sh -c 'touch {b}; echo setsid:$?' & wait",
            a = a.display(),
            b = b.display()
        ),
    )
    .await;
    assert!(output.contains("grandchild:1"), "{output}");
    assert!(output.contains("setsid:1"), "{output}");
    assert!(!a.exists() && !b.exists(), "{output}");
}

#[tokio::test]
async fn network_false_refuses_sockets_that_network_true_allows() {
    if !landlock_here() {
        return;
    }
    let workspace = scratch();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let connect = format!("echo hello > /dev/tcp/127.0.0.1/{port} && echo connected");
    let udp = "python3 -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM); print(\"udp-ok\")'";

    let open = sandbox(Mode::WorkspaceWrite, true, workspace.path());
    let (code, output) = run(&open, workspace.path(), &connect).await;
    assert_eq!(code, 0, "{output}");
    let (mut peer, _) = listener.accept().unwrap();
    let mut got = String::new();
    peer.read_to_string(&mut got).unwrap();
    assert_eq!(got, "hello\n");
    let (code, output) = run(&open, workspace.path(), udp).await;
    assert_eq!((code, output.trim()), (0, "udp-ok"));

    let closed = sandbox(Mode::WorkspaceWrite, false, workspace.path());
    let (code, output) = run(&closed, workspace.path(), &connect).await;
    assert_ne!(code, 0, "{output}");
    assert!(!output.contains("connected"), "{output}");
    let explained = closed.explain(&output).expect("explained");
    assert!(explained.contains("network"), "{explained}");
    listener.set_nonblocking(true).unwrap();
    assert!(listener.accept().is_err(), "a connection got through");
    let (code, output) = run(&closed, workspace.path(), udp).await;
    assert_ne!(code, 0, "{output}");
    assert!(output.contains("PermissionError"), "{output}");
    // Unix sockets still work: the reaper's own control socket does.
    let (code, output) = run(
        &closed,
        workspace.path(),
        "python3 -c 'import socket; socket.socketpair(); print(\"unix-ok\")'",
    )
    .await;
    assert_eq!((code, output.trim()), (0, "unix-ok"));

    assert_eq!(
        closed.needs_loopback_tcp("debugpy").unwrap_err(),
        "debugpy talks over loopback TCP, which `sandbox.network: false` denies; allow the \
         network in the `sandbox` settings to use it"
    );
    assert!(open.needs_loopback_tcp("debugpy").is_ok());
}

#[tokio::test]
async fn a_kernel_without_landlock_refuses_a_chosen_mode_and_defaults_to_off() {
    // Rules are never built here for ABI 0, so this runs on any kernel.
    gantry_process::reaper::use_program(reaper_program());
    let workspace = scratch();
    let roots = [workspace.path().to_path_buf()];
    let chosen = Policy {
        mode: Mode::WorkspaceWrite,
        mode_chosen: true,
        ..Policy::default()
    };
    let refused = Sandbox::on_kernel(chosen, &roots, 0);
    let error = Command::new("true", &refused).spawn().unwrap_err();
    let message = error.to_string();
    assert!(message.contains("needs Landlock ABI 3"), "{message}");
    assert!(message.contains("\"mode\": \"off\""), "{message}");

    let default = Sandbox::on_kernel(Policy::default(), &roots, 0);
    assert!(!default.confines() && default.refusal().is_none());
    assert!(
        default.status()[0].contains("no Landlock"),
        "{:?}",
        default.status()
    );
    let child = Command::new("true", &default).spawn().unwrap();
    assert!(child.wait().await.unwrap().success());

    // network: false cannot fall back to off: refused.
    let offline = Policy {
        network: Network::Deny,
        ..Policy::default()
    };
    let refused = Sandbox::on_kernel(offline, &roots, FS_ABI);
    assert!(
        refused
            .refusal()
            .unwrap()
            .contains("sandbox.network: false")
    );
}

/// What the sandbox writes nowhere: every test above leaves its
/// workspace as its commands made it, and this one checks that a confined
/// command that only reads leaves it byte for byte.
#[tokio::test]
async fn a_command_that_only_reads_leaves_the_workspace_unchanged() {
    if !landlock_here() {
        return;
    }
    let workspace = scratch();
    std::fs::write(workspace.path().join("a.txt"), "a").unwrap();
    let before = listing(workspace.path());
    let sandbox = sandbox(Mode::WorkspaceWrite, false, workspace.path());
    let (code, output) = run(&sandbox, workspace.path(), "cat a.txt; ls -la >/dev/null").await;
    assert_eq!((code, output.as_str()), (0, "a"));
    assert_eq!(listing(workspace.path()), before);
}

fn listing(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|entry| {
            let path = entry.path();
            let bytes = std::fs::read(&path).unwrap_or_default();
            (path, bytes)
        })
        .collect();
    entries.sort();
    entries
}

/// A checkout's planted binary, run by the probe that finds it (the
/// language servers' and adapters' "does it run" check), may write
/// nothing, not even in the checkout or the temp directory, and runs
/// from `/`, where no checkout's settings (`rust-toolchain.toml`) are.
#[test]
fn a_probe_runs_confined_outside_the_workspace() {
    if !landlock_here() {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let planted = ws.join("node_modules/.bin/gantry-test-planted");
    std::fs::create_dir_all(planted.parent().unwrap()).unwrap();
    let marker = ws.join("pwned");
    let tmp_marker = std::env::temp_dir().join(format!("gantry-probe-{}", std::process::id()));
    std::fs::write(
        &planted,
        format!(
            "#!/bin/sh\ntouch {} {} 2>/dev/null\n[ \"$PWD\" = / ] || exit 3\nexit 0\n",
            marker.display(),
            tmp_marker.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o755)).unwrap();
    let program = gantry_process::Program {
        binaries: vec!["gantry-test-planted".into()],
        probe: Some(vec!["--version".into()]),
        root_markers: vec!["package.json".into()],
        ..gantry_process::Program::default()
    };
    assert_eq!(
        program.resolve_binary_on(&ws, &ws, &[]),
        Ok(planted.clone()),
        "the probe ran, from /"
    );
    assert!(!marker.exists(), "a probe wrote into the checkout");
    assert!(
        !tmp_marker.exists(),
        "a probe wrote into the temp directory"
    );
}

/// Root inside the sandbox is root without power: no capability in any
/// set (so no `CAP_SYS_PTRACE` to read another process's memory or
/// environment, no `CAP_SYS_ADMIN` to mount), and an exec grants none back.
#[tokio::test]
async fn a_confined_command_has_no_capabilities_even_as_root() {
    if !landlock_here() {
        return;
    }
    let workspace = scratch();
    let sandbox = sandbox(Mode::WorkspaceWrite, true, workspace.path());
    // Through an exec of a fresh shell: root's exec would grant the full
    // set again without the locked secure bits.
    let (code, output) = run(
        &sandbox,
        workspace.path(),
        "bash -c 'grep ^Cap /proc/self/status'",
    )
    .await;
    assert_eq!(code, 0, "{output}");
    let set = |name: &str| {
        output
            .lines()
            .find_map(|line| line.strip_prefix(&format!("{name}:\t")))
            .unwrap_or_else(|| panic!("no {name} in {output}"))
            .to_string()
    };
    for name in ["CapInh", "CapPrm", "CapEff", "CapAmb"] {
        assert_eq!(set(name), "0000000000000000", "{name}: {output}");
    }
    if rustix::process::geteuid().is_root() {
        assert_eq!(set("CapBnd"), "0000000000000000", "{output}");
    }
}

/// What runs Gantry's commands cannot look into Gantry: not its
/// environment (where its tokens and the user's keys are), not its
/// memory, and no signal reaches it. The test process stands for Gantry,
/// unconfined, and as Gantry does, it makes itself non-dumpable.
#[tokio::test]
async fn a_confined_command_cannot_read_signal_or_trace_gantry() {
    if !landlock_here() {
        return;
    }
    gantry_process::sandbox::shield_gantry();
    let workspace = scratch();
    let sandbox = sandbox(Mode::WorkspaceWrite, true, workspace.path());
    let gantry = std::process::id();
    let (_, output) = run(
        &sandbox,
        workspace.path(),
        &format!(
            "cat /proc/{gantry}/environ >/dev/null 2>&1 && echo READ-ENVIRON; \
             head -c1 /proc/{gantry}/mem >/dev/null 2>&1 && echo READ-MEM; \
             readlink /proc/{gantry}/cwd >/dev/null 2>&1 && echo READ-CWD; \
             kill -0 {gantry} 2>/dev/null && echo SIGNALLED; \
             python3 -c 'import ctypes,sys; sys.exit(ctypes.CDLL(None).ptrace(16, {gantry}, 0, 0) != 0)' \
               && echo ATTACHED; echo done"
        ),
    )
    .await;
    assert!(output.contains("done"), "{output}");
    for escaped in ["READ-ENVIRON", "READ-MEM", "READ-CWD", "ATTACHED"] {
        assert!(!output.contains(escaped), "{escaped}: {output}");
    }
    if kernel_abi() >= 6 {
        assert!(!output.contains("SIGNALLED"), "{output}");
    }
}

/// A command that shares a terminal with Gantry cannot type into it: the
/// answer to a confirmation Gantry shows there would be its to give.
#[tokio::test]
async fn a_confined_command_cannot_push_input_into_a_terminal() {
    if !landlock_here() {
        return;
    }
    let workspace = scratch();
    let sandbox = sandbox(Mode::WorkspaceWrite, true, workspace.path());
    // Its own pseudo-terminal as its controlling terminal, where TIOCSTI
    // would otherwise work (dev.tty.legacy_tiocsti).
    let script = r#"
import errno, fcntl, os, termios
main, tty = os.openpty()
name = os.ttyname(tty)
os.close(os.open(name, os.O_RDWR))
try:
    fcntl.ioctl(tty, termios.TIOCSTI, b"y")
    print("TYPED")
except OSError as e:
    print("refused", errno.errorcode[e.errno])
"#;
    let (code, output) = run(
        &sandbox,
        workspace.path(),
        // setsid(1) forks first: the command leads its process group.
        &format!("setsid -w python3 -c '{script}'"),
    )
    .await;
    assert_eq!(code, 0, "{output}");
    assert!(output.contains("refused EACCES"), "{output}");
}

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
