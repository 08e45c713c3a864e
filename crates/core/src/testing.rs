//! Helpers for the tests of tool families (feature `testing`): every write
//! of a test binary journals into one temp state directory, never the
//! user's; workspaces are temp folders with the files a test names; calls
//! go through the real pipeline and panic with the call when they do not
//! end as the test expects; and a test that needs something from outside
//! (a language server) is skipped only when a variable asks for it.

// Tests build their fixtures directly (feature `testing` only).
#![allow(clippy::disallowed_methods)]

pub mod harness;

use std::io::Write;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::Value;

use crate::{CallError, CallErrorKind, Run, ToolResult};

/// Points `GANTRY_STATE_DIR` at one temp dir for the whole test binary
/// (and the child processes it starts), and returns it. `XDG_STATE_HOME`
/// goes to a temp dir too: the write path leaves word of a journal kept
/// elsewhere in the state directory every process of the user shares
/// (the platform's, whatever `GANTRY_STATE_DIR` says), and a test must not
/// leave that in the user's either.
pub fn state_dir() -> &'static Path {
    static STATE: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    let (_, state) = STATE.get_or_init(|| {
        let base = tempfile::tempdir().expect("creating a temp state directory");
        let state = base.path().join("state");
        let shared = base.path().join("shared");
        // SAFETY: set once, before any write of the binary reads them;
        // std serialises environment access.
        unsafe {
            std::env::set_var("GANTRY_STATE_DIR", &state);
            std::env::set_var("XDG_STATE_HOME", &shared);
        }
        (base, state)
    });
    state
}

/// A temp workspace holding `files` (paths relative to it; bytes, so tests
/// can write CRLF, BOMs and binaries), with [`state_dir`] in force.
pub fn workspace_with<C: AsRef<[u8]>>(files: &[(&str, C)]) -> tempfile::TempDir {
    state_dir();
    let dir = tempfile::tempdir().expect("creating a temp workspace");
    for (name, content) in files {
        let path = dir.path().join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("creating a folder of the workspace");
        }
        std::fs::write(path, content).expect("writing a file of the workspace");
    }
    dir
}

/// The result of calling `tool` with `args` through `run`'s pipeline,
/// which must succeed: panics naming the call and the error otherwise, so
/// a failing test says which call broke and why.
pub async fn ok_result(run: &Run, tool: &str, args: Value) -> ToolResult {
    match run.call(tool, args.clone()).await {
        Ok(result) => result,
        Err(error) => panic!("{tool} {args} failed: {}", error.message),
    }
}

/// The text of a call that must succeed (see [`ok_result`]): what most
/// assertions look at.
pub async fn ok(run: &Run, tool: &str, args: Value) -> String {
    ok_result(run, tool, args).await.text_content()
}

/// The error of calling `tool` with `args`, which must fail with `kind`:
/// panics with the result when it succeeded and with the message when it
/// failed otherwise (a refused parameter is not a failed run).
pub async fn fails(run: &Run, tool: &str, args: Value, kind: CallErrorKind) -> CallError {
    match run.call(tool, args.clone()).await {
        Ok(result) => panic!(
            "{tool} {args} should have failed, got:\n{}",
            result.text_content()
        ),
        Err(error) => {
            assert_eq!(error.kind, kind, "{tool} {args}: {}", error.message);
            error
        }
    }
}

/// Checks that `tool` refuses each `(args, expected)` as invalid
/// parameters, with a message that contains `expected`: the table tests
/// of a tool's parameter checks, each failure naming its arguments.
pub async fn refuses<'a>(run: &Run, tool: &str, cases: impl IntoIterator<Item = (Value, &'a str)>) {
    for (args, expected) in cases {
        let error = fails(run, tool, args.clone(), CallErrorKind::InvalidParams).await;
        assert!(
            error.message.contains(expected),
            "{tool} {args}: {}",
            error.message
        );
    }
}

/// The message of a call that must fail, whatever the kind of failure:
/// panics with the result when it succeeded.
pub async fn err(run: &Run, tool: &str, args: Value) -> String {
    match run.call(tool, args.clone()).await {
        Ok(result) => panic!(
            "{tool} {args} should have failed, got:\n{}",
            result.text_content()
        ),
        Err(error) => error.message,
    }
}

/// The text of file `name` in `run`'s workspace: what a call wrote.
pub fn read(run: &Run, name: &str) -> String {
    let path = run.workspace().root().join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// Whether `variable` is `1`, asking to skip what needs something from
/// outside (a language server, say); `skipped` says what this test skips
/// and why ("the test, which needs clangd"). A test that cannot run skips
/// only when asked to, so a green run means the tests ran. When asked,
/// says so on the test binary's stderr, which cargo's output capture does
/// not hold back, so the skip shows in the run's output even though the
/// test passes (cargo has no "skipped" state); scripts/test.sh repeats it
/// in its summary.
pub fn skip_requested(variable: &str, skipped: &str) -> bool {
    if std::env::var_os(variable).is_none_or(|value| value != "1") {
        return false;
    }
    let thread = std::thread::current();
    let test = thread.name().filter(|name| *name != "main");
    let at = test.map(|name| format!(" in {name}")).unwrap_or_default();
    let line = format!("SKIPPED on request ({variable}=1){at}: {skipped}\n");
    // Past the capture (`eprintln!` output of a passing test is dropped),
    // in one write so that parallel tests do not interleave within it.
    let _ = std::io::stderr().write_all(line.as_bytes());
    true
}

/// A fresh folder that no sandbox rule makes writable by default: under
/// the home directory (neither the temp directory nor a cache), where a
/// command confined to its workspace must fail to write. Not under the
/// build's target folder: a checkout under /tmp puts that inside the
/// temp directory, which the sandbox lets commands write.
pub fn outside_the_writable_defaults() -> tempfile::TempDir {
    let home = std::env::var_os("HOME").expect("HOME is set");
    tempfile::Builder::new()
        .prefix(".gantry-test-outside-")
        .tempdir_in(home)
        .expect("creating a folder in the home directory")
}

/// A planted payload, for the tests that Gantry runs nothing of the
/// workspace's outside the sandbox (SPEC §2): each script or module a test
/// plants tries to leave a marker named after it in a folder outside every
/// writable root ([`outside_the_writable_defaults`]) and in the workspace,
/// so a test fails when the first lands (it ran unconfined) and, where the
/// point is that it never runs at all, when the second does.
pub struct Payload {
    outside: tempfile::TempDir,
    inside: PathBuf,
}

impl Payload {
    /// A payload whose markers go outside and into `workspace`'s
    /// `planted-ran` file.
    pub fn new(workspace: &Path) -> Payload {
        Payload {
            outside: outside_the_writable_defaults(),
            inside: workspace.join("planted-ran"),
        }
    }

    /// The folder outside every writable root.
    pub fn outside(&self) -> &Path {
        self.outside.path()
    }

    /// The lines of a `/bin/sh` script that leave the markers of `name`
    /// (each failure ignored, as a payload would).
    pub fn shell(&self, name: &str) -> String {
        format!(
            "echo {name} 2>/dev/null >> '{}/{name}'\necho {name} 2>/dev/null >> '{}'\n",
            self.outside.path().display(),
            self.inside.display()
        )
    }

    /// The lines of Python that leave the markers of `name`.
    pub fn python(&self, name: &str) -> String {
        let mut lines = String::new();
        for path in [self.outside.path().join(name), self.inside.clone()] {
            lines.push_str(&format!(
                "try:\n    open({:?}, 'a').write({name:?} + '\\n')\nexcept OSError:\n    pass\n",
                path.display().to_string()
            ));
        }
        lines
    }

    /// Writes an executable `#!/bin/sh` script at `path` that leaves the
    /// markers of `name`, then runs `then` (`exec /usr/bin/dlv "$@"`, or
    /// `exit 1`).
    pub fn plant_script(&self, path: &Path, name: &str, then: &str) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir_all(path.parent().expect("a script in a folder"))
            .expect("creating the folder of a planted script");
        std::fs::write(path, format!("#!/bin/sh\n{}{then}\n", self.shell(name)))
            .expect("planting a script");
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
            .expect("making a planted script executable");
    }

    /// The payloads whose marker landed outside the writable roots: each
    /// ran unconfined.
    pub fn landed_outside(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.outside.path())
            .expect("reading the folder outside")
            .flatten()
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    /// The payloads that left their marker in the workspace: each ran.
    pub fn ran_inside(&self) -> Vec<String> {
        std::fs::read_to_string(&self.inside)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }
}

/// The pid, as this process sees it, of a process whose command line
/// holds `marker`: a confined command runs in a PID namespace of its own,
/// where `$$` is a number that means nothing outside, so a test names
/// the process by a word in its arguments (`sleep 60.4711`).
pub fn process_with(marker: &str) -> Option<i32> {
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| pid != std::process::id() as i32)
        .find(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|cmdline| String::from_utf8_lossy(&cmdline).contains(marker))
        })
}

/// The pid, as this process sees it, of the process named `comm` that
/// started at `ticks` after boot (field 22 of `/proc/self/stat`, which a
/// process reads the same in any PID namespace): how a test finds a
/// confined interpreter that can only say its pid inside its namespace.
pub fn process_started_at(ticks: u64, comm: &str) -> Option<i32> {
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .find(|pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            let Some((name, rest)) = stat.split_once(" (").and_then(|(_, r)| r.rsplit_once(')'))
            else {
                return false;
            };
            name.starts_with(comm) && rest.split_whitespace().nth(19) == Some(&ticks.to_string())
        })
}

/// Waits up to `bound` for process `pid` to exit, whether or not it is a
/// child of the caller (a grandchild, a language server), by awaiting its
/// pidfd: no polling. True when it exited (or was already gone).
pub async fn exited(pid: i32, bound: Duration) -> bool {
    // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        // ESRCH: no such process, it is gone already.
        return std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
    }
    // SAFETY: the fd was just returned to us and is owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
    // SAFETY: the AsyncFd owns the fd and deregisters it before closing it.
    let registered = unsafe {
        tokio::io::unix::AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE)
    };
    let Ok(fd) = registered else {
        return false;
    };
    tokio::time::timeout(bound, fd.readable()).await.is_ok()
}

/// `sleep SECONDS.FRACTION` with a fraction no other call gives, in any
/// test binary running now (this process's pid and a count): a command a
/// test runs, whose process [`process_running`] then finds outside the
/// command's PID namespace.
pub fn unique_sleep(seconds: u32) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static COUNT: AtomicU32 = AtomicU32::new(0);
    let count = COUNT.fetch_add(1, Ordering::Relaxed);
    format!("sleep {seconds}.{:07}{count:04}", std::process::id())
}

/// Waits up to `bound` for a process run as exactly `command` (its
/// arguments split on spaces, as `/proc/PID/cmdline` holds them: the
/// shell that runs `command` within a longer line does not match) and
/// returns its pid as this process sees it; `None` when none appeared.
/// Polls every 10 ms: a confined command's fork and exec happen in a PID
/// namespace whose pids mean nothing here, and nothing tells this process
/// when they are done. Open a pidfd ([`exited`]) only while it runs.
pub async fn process_running(command: &str, bound: Duration) -> Option<i32> {
    let wanted: Vec<u8> = command
        .split(' ')
        .flat_map(|arg| arg.bytes().chain([0]))
        .collect();
    let deadline = tokio::time::Instant::now() + bound;
    loop {
        let found = std::fs::read_dir("/proc").ok().and_then(|entries| {
            entries
                .flatten()
                .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
                .find(|pid| {
                    std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|line| line == wanted)
                })
        });
        if found.is_some() || tokio::time::Instant::now() >= deadline {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The parent of `pid`, as this process sees it, from `/proc/PID/stat`;
/// `None` when it is gone.
pub fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// A FIFO a command waits on (`read -r _ < go.fifo`) until the test
/// [`open`](Gate::open)s it: how a command is held while the test finds
/// the processes it started, with no polling on either side. Held open
/// for reading and writing here, so that neither side's open blocks and
/// the line waits in the pipe for a reader that opens it later.
pub struct Gate(std::fs::File);

impl Gate {
    /// Makes the FIFO at `path`, closed.
    pub fn at(path: &Path) -> Gate {
        use std::os::unix::ffi::OsStrExt;
        let name = std::ffi::CString::new(path.as_os_str().as_bytes()).expect("a path");
        // SAFETY: a valid C string and a mode.
        assert_eq!(
            unsafe { libc::mkfifo(name.as_ptr(), 0o600) },
            0,
            "mkfifo {}",
            path.display()
        );
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .expect("the FIFO opens");
        Gate(file)
    }

    /// Lets the command read its line and go on.
    pub fn open(&mut self) {
        self.0.write_all(b"go\n").expect("writing to the FIFO");
    }
}

/// A loopback HTTP server (Python's, HTTPS when given a certificate and
/// its key) serving a folder: the stand-in for a host on the internet in
/// the network sandbox's tests, started outside any sandbox. Killed when
/// dropped.
pub struct StandIn {
    process: std::process::Child,
    /// The port it listens on, on 127.0.0.1.
    pub port: u16,
}

const STAND_IN: &str = r#"
import functools, http.server, ssl, sys
http.server.SimpleHTTPRequestHandler.log_message = lambda *args: None
handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
if len(sys.argv) > 2:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(sys.argv[2], sys.argv[3])
    server.socket = context.wrap_socket(server.socket, server_side=True)
print(server.server_address[1], flush=True)
server.serve_forever()
"#;

impl StandIn {
    /// Serves `dir` over HTTP, or over HTTPS with `tls` (a certificate
    /// and its key, PEM files).
    pub fn serve(dir: &Path, tls: Option<(&Path, &Path)>) -> StandIn {
        use std::io::BufRead;
        let mut command = std::process::Command::new("python3");
        command.args(["-u", "-c", STAND_IN]).arg(dir);
        if let Some((cert, key)) = tls {
            command.arg(cert).arg(key);
        }
        let mut process = command
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("python3 runs");
        let mut line = String::new();
        std::io::BufReader::new(process.stdout.take().expect("piped"))
            .read_line(&mut line)
            .expect("the stand-in says its port");
        let port = line.trim().parse().unwrap_or_else(|_| {
            let _ = process.kill();
            let _ = process.wait();
            panic!("the stand-in did not start: {line:?}")
        });
        StandIn { process, port }
    }

    /// Serves a new folder holding `files` (path, content) over HTTP.
    pub fn with_files(files: &[(&str, &str)]) -> (tempfile::TempDir, StandIn) {
        let dir = workspace_with(files);
        let server = StandIn::serve(dir.path(), None);
        (dir, server)
    }
}

impl Drop for StandIn {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn exited_waits_for_the_exit_and_no_longer() {
        let mut child = tokio::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id().unwrap() as i32;
        assert!(
            !exited(pid, Duration::from_millis(50)).await,
            "alive, yet reported exited"
        );
        child.start_kill().unwrap();
        assert!(exited(pid, Duration::from_secs(5)).await);
        child.wait().await.unwrap();
        assert!(
            exited(pid, Duration::from_millis(50)).await,
            "reaped counts as exited"
        );
    }
}
