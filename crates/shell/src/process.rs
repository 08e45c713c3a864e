//! A bash command in its own process group, under a reaper, with its
//! output captured.
//!
//! Every process the command started is the unit of cleanup: a timeout, a
//! cancellation, a kill, the end of the run or Gantry's own death ends
//! them all, so a grandchild (`make -j`, `npm test` spawning workers,
//! `sleep 100 &`, `setsid server &`) goes with its parent. Without a
//! reaper (see `gantry_process::reaper`), only the group is reached, and
//! what the tool says claims no more.

use std::path::Path;
use std::process::ExitStatus;
use std::time::Duration;

use gantry_process::{Capture, Child, Command, Reach, Sandbox, Stderr, Stdout};

use crate::output::{HEAD_BYTES, TAIL_BYTES};

/// A running command and its process group, which goes when this is
/// dropped: a cancelled call (whose future the pipeline drops) or a run
/// that ends leaves nothing behind.
pub struct Running {
    child: Child,
    /// The sandbox it runs in ([`Sandbox::lifted`] where a person
    /// approved running it outside).
    sandbox: Sandbox,
}

/// Starts `bash -c command` in `dir` as the leader of a new process group,
/// stdin closed, stdout and stderr captured together in the order written,
/// confined in `sandbox` with the environment its policy allows (never
/// Gantry's secrets). A connection to a host the network policy does not
/// list asks `person` where the policy says to ask.
pub fn spawn(
    command: &str,
    dir: &Path,
    sandbox: Sandbox,
    person: Option<std::sync::Arc<dyn gantry_core::human::Human>>,
) -> std::io::Result<Running> {
    let child = Command::new("bash", &sandbox)
        .arg("-c")
        .arg(command)
        .current_dir(dir)
        // Pagers and credential prompts would wait for a person forever.
        .env("PAGER", "cat")
        .env("GIT_PAGER", "cat")
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdout(Stdout::Capture {
            head: HEAD_BYTES,
            tail: TAIL_BYTES,
        })
        .stderr(Stderr::Stdout)
        .asking(person)
        .spawn()?;
    Ok(Running { child, sandbox })
}

impl Running {
    /// The process group id (the leader's pid).
    pub fn pgid(&self) -> u32 {
        self.child.pid()
    }

    /// Everything the command wrote to stdout and stderr, interleaved.
    pub fn output(&self) -> &Capture {
        self.child
            .output()
            .expect("spawn captures the output of every command")
    }

    /// Waits for the command to exit; what it left running goes then
    /// (under a reaper, before this returns), and the pipe closes with it
    /// unless a process that left the group holds it: see
    /// [`Running::rest_of_output`].
    pub async fn wait(&self) -> std::io::Result<ExitStatus> {
        self.child.wait().await
    }

    /// Waits, at most [`OUTPUT_AFTER_EXIT`], for the rest of the output
    /// of a command that has ended: a process that outlived it (one that
    /// left the group, without a reaper) can hold the pipe for as long as
    /// it likes. Empty when everything was read, else a note saying why
    /// not, to follow the output.
    pub async fn rest_of_output(&self) -> &'static str {
        match tokio::time::timeout(OUTPUT_AFTER_EXIT, self.output().finished()).await {
            Ok(()) => "",
            Err(_) => "\n[output after exit not read: a background process still held it]",
        }
    }

    /// How far killing the command reaches.
    pub fn reach(&self) -> Reach {
        self.child.reach()
    }

    /// Everything captured so far, or `(no output)`.
    pub fn output_text(&self) -> String {
        let output = self.output().lock().shown();
        if output.is_empty() {
            "(no output)".into()
        } else {
            output
        }
    }

    /// What the sandbox did to the command, as paragraphs to append to
    /// the result (empty when nothing): what it refused, read from
    /// `output`, the connections the network policy refused, and what the
    /// command created at protected paths, which is taken out of the
    /// workspace now (a background job's at each look).
    pub fn sandbox_report(&self, output: &str) -> String {
        let created = self.child.protected_created();
        [
            self.sandbox.explain(output),
            Sandbox::network_report(&self.child.network_refused()),
            self.sandbox.quarantine(&created),
        ]
        .into_iter()
        .flatten()
        .map(|paragraph| format!("\n{paragraph}"))
        .collect()
    }

    /// The exit status if the leader already exited.
    pub fn try_status(&self) -> Option<ExitStatus> {
        self.child.try_exited().ok().flatten()
    }

    /// Kills the group at once, without waiting.
    pub fn kill_group(&self) {
        self.child.kill_group();
    }

    /// Kills the group (under a reaper, every process the command started)
    /// and waits, at most [`KILL_BOUND`], for it to be gone: `None` if it
    /// was not by then (a process stuck in the kernel cannot die).
    pub async fn kill(&self) -> Option<std::io::Result<ExitStatus>> {
        self.kill_group();
        tokio::time::timeout(KILL_BOUND, self.wait()).await.ok()
    }
}

/// How long output is still read once the command has exited (or was
/// killed): what its processes wrote before they ended is in the pipe by
/// then, and a process that holds the pipe past that is not waited for.
pub const OUTPUT_AFTER_EXIT: Duration = Duration::from_millis(300);

/// How long a killed command may take to be gone: SIGKILL ends a process
/// at once unless it is stuck in the kernel, but a confined command's
/// namespaces go with it (their mounts, overlays and network), which on a
/// loaded machine took more than half a second. With
/// [`OUTPUT_AFTER_EXIT`], a timed-out call returns within 2.5 s of its
/// timeout.
pub const KILL_BOUND: Duration = Duration::from_secs(2);

/// What became of a command that was killed, in words for the model,
/// claiming no more than is known: every process it started under a
/// reaper, its process group without one.
pub fn describe_kill(killed: Option<std::io::Result<ExitStatus>>, reach: Reach) -> String {
    match (killed, reach) {
        (Some(Ok(_)), Reach::Descendants) => "it and every process it started were killed".into(),
        (Some(Ok(_)), Reach::Group) => "it and every process in its process group were killed \
             (no reaper was found, so a process that left the group, e.g. with setsid, may still run)"
            .into(),
        (Some(Err(e)), _) => format!("it was killed, but what became of it is unknown: {e}"),
        (None, _) => format!(
            "it was sent SIGKILL but had not ended {:.1} s later",
            KILL_BOUND.as_secs_f64()
        ),
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
