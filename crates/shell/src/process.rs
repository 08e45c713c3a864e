//! A bash command in its own process group, with its output captured.
//!
//! The group is the unit of cleanup: a timeout, a cancellation, a kill or
//! the end of the run signal the whole group, so a grandchild (`make -j`,
//! `npm test` spawning workers, `sleep 100 &`) goes with its parent.

use std::path::Path;
use std::process::ExitStatus;

use gantry_process::{Capture, Child, Command, EnvPolicy, Stderr, Stdout};

use crate::output::{HEAD_BYTES, TAIL_BYTES, render};

/// A running command and its process group, which goes when this is
/// dropped: a cancelled call (whose future the pipeline drops) or a run
/// that ends leaves nothing behind.
pub struct Running {
    child: Child,
}

/// Starts `bash -c command` in `dir` as the leader of a new process group,
/// stdin closed, stdout and stderr captured together in the order written,
/// with the environment `env` allows (never Gantry's secrets).
pub fn spawn(command: &str, dir: &Path, env: &EnvPolicy) -> std::io::Result<Running> {
    let child = Command::new("bash")
        .arg("-c")
        .arg(command)
        .current_dir(dir)
        .env_clear()
        .envs(env.environment())
        // Pagers and credential prompts would wait for a person forever.
        .env("PAGER", "cat")
        .env("GIT_PAGER", "cat")
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdout(Stdout::Capture {
            head: HEAD_BYTES,
            tail: TAIL_BYTES,
        })
        .stderr(Stderr::Stdout)
        .spawn()?;
    Ok(Running { child })
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

    /// Waits for the leader to exit; what it left running in its group
    /// goes then, the pipe closes with it, and the rest of the output is
    /// collected.
    pub async fn wait(&self) -> std::io::Result<ExitStatus> {
        let status = self.child.wait().await?;
        self.output().finished().await;
        Ok(status)
    }

    /// Everything captured so far, or `(no output)`.
    pub fn output_text(&self) -> String {
        let output = render(&self.output().lock());
        if output.is_empty() {
            "(no output)".into()
        } else {
            output
        }
    }

    /// The exit status if the leader already exited.
    pub fn try_status(&self) -> Option<ExitStatus> {
        self.child.try_exited().ok().flatten()
    }

    /// Kills the group at once, without waiting.
    pub fn kill_group(&self) {
        self.child.kill_group();
    }

    /// Kills the group and waits for the leader.
    pub async fn kill(&self) -> std::io::Result<ExitStatus> {
        self.kill_group();
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
