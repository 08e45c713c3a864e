//! A bash command in its own process group, with its output captured.
//!
//! The group is the unit of cleanup: a timeout, a cancellation, a kill or
//! the end of the run signal the whole group, so a grandchild (`make -j`,
//! `npm test` spawning workers, `sleep 100 &`) goes with its parent.

use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::{Child, Command};
use tokio::task::JoinHandle;

use crate::output::CappedOutput;

/// Output shared between the reader tasks and whoever reports it.
pub type SharedOutput = Arc<Mutex<CappedOutput>>;

/// A running command and its process group.
pub struct Running {
    child: Child,
    pgid: i32,
    readers: Vec<JoinHandle<()>>,
    /// Everything the command wrote to stdout and stderr, interleaved.
    pub output: SharedOutput,
}

/// Kills the group when dropped, so a cancelled call (whose future the
/// pipeline drops) leaves nothing behind.
pub struct GroupGuard(pub i32);

impl GroupGuard {
    /// The group ended normally; nothing left to kill (and its id may be
    /// reused by another group soon).
    pub fn disarm(&mut self) {
        self.0 = 0;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        kill_group(self.0);
    }
}

/// Sends SIGKILL to a whole process group; a group already gone is fine.
pub fn kill_group(pgid: i32) {
    if pgid > 0 {
        // SAFETY: killpg only sends a signal; a stale id fails with ESRCH.
        unsafe {
            libc::killpg(pgid, libc::SIGKILL);
        }
    }
}

/// Starts `bash -c command` in `dir` as the leader of a new process group,
/// stdin closed, output captured.
pub fn spawn(command: &str, dir: &Path) -> std::io::Result<Running> {
    let mut child = Command::new("bash")
        .arg("-c")
        .arg(command)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Pagers and credential prompts would wait for a person forever.
        .env("PAGER", "cat")
        .env("GIT_PAGER", "cat")
        .env("GIT_TERMINAL_PROMPT", "0")
        .process_group(0)
        .kill_on_drop(true)
        .spawn()?;
    let pgid = child.id().map(|id| id as i32).unwrap_or(0);
    let output: SharedOutput = Arc::default();
    let mut readers = Vec::new();
    if let Some(stdout) = child.stdout.take() {
        readers.push(tokio::spawn(pump(stdout, output.clone())));
    }
    if let Some(stderr) = child.stderr.take() {
        readers.push(tokio::spawn(pump(stderr, output.clone())));
    }
    Ok(Running {
        child,
        pgid,
        readers,
        output,
    })
}

async fn pump(mut stream: impl AsyncRead + Unpin, output: SharedOutput) {
    let mut buffer = vec![0u8; 16 * 1024];
    loop {
        match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(n) => output
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(&buffer[..n]),
        }
    }
}

impl Running {
    /// The process group id (the leader's pid).
    pub fn pgid(&self) -> i32 {
        self.pgid
    }

    /// Waits for the leader to exit, then ends what it left in its group
    /// and collects the rest of the output.
    pub async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        let status = self.child.wait().await?;
        // Anything the command left running in its group goes now; its
        // pipes close with it and the readers finish.
        kill_group(self.pgid);
        for reader in self.readers.drain(..) {
            let _ = reader.await;
        }
        Ok(status)
    }

    /// Everything captured so far, or `(no output)`.
    pub fn output_text(&self) -> String {
        let output = self
            .output
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .render();
        if output.is_empty() {
            "(no output)".into()
        } else {
            output
        }
    }

    /// The exit status if the leader already exited.
    pub fn try_status(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Kills the group and waits for the leader.
    pub async fn kill(&mut self) -> std::io::Result<ExitStatus> {
        kill_group(self.pgid);
        self.wait().await
    }
}

/// How a process ended, in words for the model.
pub fn describe_status(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(signal)) => format!("killed by signal {signal} ({})", signal_name(signal)),
        (None, None) => "ended".into(),
    }
}

fn signal_name(signal: i32) -> &'static str {
    match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGABRT => "SIGABRT",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGTERM => "SIGTERM",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        _ => "signal",
    }
}
