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

use gantry_process::network::Network;
use gantry_process::sandbox::{FS_ABI, Mode, Policy, kernel_abi};
use gantry_process::{Command, Sandbox};

mod confined;

use confined::{landlock_here, reaper_program, run, sandbox, scratch};

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
