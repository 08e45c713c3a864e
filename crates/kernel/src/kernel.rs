//! One kernel: an interpreter running its driver, the pipes to it, and
//! the running of one cell (frames, raw output, the tool bridge, the idle
//! budget, the interrupt).

use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::time::Duration;

use gantry_core::{Part, ToolContext};
use gantry_process::{Child, Command, Sandbox, Stderr, Stdout};
use rustix::process::{Pid, PidfdFlags, Signal, pidfd_open, pidfd_send_signal};
use tokio::net::unix::pipe;
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::interpreter::{Interpreter, Language};
use crate::output::RawOutput;
use crate::protocol::{FromKernel, ToKernel, read_frames, write_frame};
use crate::transcript::Transcript;

/// How long an interpreter may take to load its driver and say hello.
const START_BOUND: Duration = Duration::from_secs(30);
/// How long writing a frame to a kernel may block (it reads them at once
/// unless it is broken).
const WRITE_BOUND: Duration = Duration::from_secs(10);
/// How often a running cell reports progress (MCP clients show it; a
/// silent minute-long cell looks hung).
const PROGRESS_EVERY: Duration = Duration::from_secs(2);
/// Bridged calls one cell may make.
pub const MAX_BRIDGED: usize = 200;

/// A live kernel.
pub struct Kernel {
    pub(crate) language: Language,
    child: Arc<Child>,
    input: pipe::Sender,
    frames: mpsc::Receiver<Result<FromKernel, String>>,
    /// The interpreter's stdout and stderr, interleaved.
    raw: RawOutput,
    /// The interpreter itself, for SIGINT: a pidfd, so no signal reaches a
    /// process that reused its pid.
    pidfd: OwnedFd,
    /// The interpreter and its version, as said in results.
    pub(crate) shown: String,
    /// What the last cell left in the namespace.
    names: Vec<String>,
    modules: Vec<String>,
}

/// How a cell ended.
pub enum Ended {
    /// It ran to its end.
    Finished {
        /// It raised (the traceback is in the transcript).
        raised: bool,
    },
    /// Its idle budget ran out: it was interrupted.
    Interrupted {
        /// Whether the kernel, and its variables, lived.
        survived: bool,
    },
    /// The kernel died; the text says how and what was lost.
    Died(String),
}

impl Drop for Kernel {
    /// Its end, in the run log of the call that ends it (a reset, a death
    /// seen, a kill after a cancelled cell); one ended with the run is
    /// ended with the run's record.
    fn drop(&mut self) {
        gantry_core::runlog::record_in_call(
            "resource.end",
            serde_json::json!({ "resource": self.resource_name() }),
        );
    }
}

impl Kernel {
    /// How the run log names it.
    pub(crate) fn resource_name(&self) -> String {
        format!("kernel {}", self.language.name())
    }

    /// Starts `interpreter` running the driver of `language` in `dir`,
    /// in `sandbox` with the environment its policy allows, and waits for
    /// its hello.
    pub async fn start(
        language: Language,
        interpreter: &Interpreter,
        dir: &std::path::Path,
        sandbox: &Sandbox,
    ) -> Result<Kernel, String> {
        let io = |e: std::io::Error| format!("cannot start the {} kernel: {e}", language.name());
        let (to_kernel_reader, to_kernel) = std::io::pipe().map_err(io)?;
        let (from_kernel, from_kernel_writer) = std::io::pipe().map_err(io)?;
        let marker = crate::output::marker();
        let mut command = Command::new(&interpreter.program, sandbox);
        let kernel_in = command.pass_fd(to_kernel_reader.into());
        let kernel_out = command.pass_fd(from_kernel_writer.into());
        match language {
            Language::Python => command.arg("-c").arg(language.driver()),
            Language::JavaScript => command.arg("-e").arg(language.driver()),
        };
        command
            .current_dir(dir)
            .env("GANTRY_KERNEL_FDS", format!("{kernel_in},{kernel_out}"))
            .env("GANTRY_KERNEL_SYNC", &marker)
            // Figures are rendered to PNG, never to a window.
            .env("MPLBACKEND", "Agg")
            .env("PAGER", "cat")
            .env("GIT_PAGER", "cat")
            .stdout(Stdout::Piped)
            .stderr(Stderr::Stdout);
        let child = command.spawn().map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => format!(
                "cannot start the {} kernel: `{}` was not found ({}){}",
                language.name(),
                interpreter.program.display(),
                interpreter.origin,
                match language {
                    Language::JavaScript => "; install Node.js",
                    Language::Python => "; install python3",
                }
            ),
            _ => io(e),
        })?;
        // Our copies of the kernel's ends close here, so its death is an
        // end of file on the frames.
        drop(command);
        let mut child = child;
        let mut raw = RawOutput::new(child.stdout.take().expect("stdout is piped"), marker);
        let input = pipe::Sender::from_owned_fd(OwnedFd::from(to_kernel)).map_err(io)?;
        let mut frames =
            read_frames(pipe::Receiver::from_owned_fd(OwnedFd::from(from_kernel)).map_err(io)?);
        let hello = tokio::time::timeout(START_BOUND, frames.recv()).await;
        // The pid the driver says is the one of its own PID namespace.
        let version = match hello {
            Ok(Some(Ok(FromKernel::Hello { version, .. }))) => version,
            Ok(Some(Ok(other))) => {
                return Err(format!(
                    "the {} kernel's driver began with {other:?} instead of hello",
                    language.name()
                ));
            }
            Ok(Some(Err(e))) => return Err(format!("the {} kernel sent {e}", language.name())),
            Ok(None) => {
                let mut transcript = Transcript::default();
                raw.last_words(&mut transcript).await;
                let said = transcript.into_parts("(nothing)");
                return Err(format!(
                    "the {} kernel ({}) exited before it was ready; it said: {}",
                    language.name(),
                    interpreter.program.display(),
                    text_of(&said).trim()
                ));
            }
            Err(_) => {
                return Err(format!(
                    "the {} kernel did not start within {} s",
                    language.name(),
                    START_BOUND.as_secs()
                ));
            }
        };
        // It is alive and waiting for a cell: the pid is surely its.
        let pid = child.pid() as i32;
        let pidfd = Pid::from_raw(pid)
            .ok_or_else(|| format!("the kernel's pid is {pid}"))
            .and_then(|pid| {
                pidfd_open(pid, PidfdFlags::empty()).map_err(|e| format!("pidfd_open: {e}"))
            })?;
        Ok(Kernel {
            language,
            child: Arc::new(child),
            input,
            frames,
            raw,
            pidfd,
            shown: format!(
                "{} {version} ({})",
                interpreter.program.display(),
                interpreter.origin
            ),
            names: Vec::new(),
            modules: Vec::new(),
        })
    }

    /// The child, for ending it from outside a cell (the run's end).
    pub fn child(&self) -> &Arc<Child> {
        &self.child
    }

    /// Whether the kernel has died since its last cell, and how. The
    /// interpreter's own pidfd says so at once (its reaper, if any, exits
    /// a moment later, with the status).
    pub async fn died(&self) -> Option<String> {
        let mut watched = [rustix::event::PollFd::new(
            &self.pidfd,
            rustix::event::PollFlags::IN,
        )];
        let now = rustix::event::Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        let interpreter_gone = rustix::event::poll(&mut watched, Some(&now)).is_ok_and(|n| n > 0);
        if !interpreter_gone && matches!(self.child.try_exited(), Ok(None)) {
            return None;
        }
        match tokio::time::timeout(Duration::from_secs(2), self.child.exited()).await {
            Ok(Ok(status)) => Some(describe_death(status)),
            Ok(Err(e)) => Some(format!("ended ({e})")),
            Err(_) => Some("ended".into()),
        }
    }

    /// What was lost with this kernel, in words.
    pub fn lost(&self) -> String {
        let list = |names: &[String]| {
            let mut shown = names
                .iter()
                .take(20)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ");
            if names.len() > 20 {
                shown.push_str(&format!(" and {} more", names.len() - 20));
            }
            shown
        };
        match (self.names.is_empty(), self.modules.is_empty()) {
            (true, true) => "nothing had been defined in it".into(),
            (false, true) => format!("lost: variables {}", list(&self.names)),
            (true, false) => format!("lost: imports {}", list(&self.modules)),
            (false, false) => format!(
                "lost: variables {}; imports {}",
                list(&self.names),
                list(&self.modules)
            ),
        }
    }

    /// Stops the kernel: see [`stop`].
    pub async fn stop(self) {
        stop(&self.child).await;
    }

    async fn send(&mut self, frame: &ToKernel<'_>) -> Result<(), String> {
        match tokio::time::timeout(WRITE_BOUND, write_frame(&mut self.input, frame)).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(format!("writing to the kernel failed: {e}")),
            Err(_) => Err(format!(
                "the kernel did not read for {} s",
                WRITE_BOUND.as_secs()
            )),
        }
    }

    /// Sends SIGINT to the interpreter (a `KeyboardInterrupt` in Python, a
    /// break of the running script in JavaScript).
    fn interrupt(&self) {
        let _ = pidfd_send_signal(&self.pidfd, Signal::INT);
    }

    /// Runs `code`, writing what it shows into `transcript`: bridged calls
    /// go through `ctx`'s caller (its surface, its person), progress is
    /// reported on `ctx` every few seconds, and the idle budget runs only
    /// while no bridged call is in flight; on its end the kernel is
    /// interrupted and, if it does not stop within `grace`, killed.
    /// `state` records a bridged call in flight, so that a cancelled cell
    /// can answer it (see [`settle`]).
    pub async fn run_cell(
        &mut self,
        code: &str,
        ctx: &ToolContext,
        budget: Duration,
        grace: Duration,
        transcript: &mut Transcript,
        state: &mut CellState,
    ) -> Ended {
        self.raw.read_now(transcript);
        state.running = true;
        if let Err(e) = self.send(&ToKernel::Exec { code }).await {
            return self.died_now(&e, transcript).await;
        }
        let caller = ctx.caller().on_behalf_of("cell");
        let started = Instant::now();
        let mut deadline = started + budget;
        let mut ticks = tokio::time::interval_at(started + PROGRESS_EVERY, PROGRESS_EVERY);
        let mut bridged = 0;
        let mut raised = false;
        let mut reads = RawOutput::reads();
        loop {
            let frame = tokio::select! {
                frame = self.next_frame(&mut reads, transcript) => frame,
                _ = ticks.tick() => {
                    let running = started.elapsed().as_secs();
                    let left = deadline.saturating_duration_since(Instant::now()).as_secs();
                    ctx.progress(
                        format!("cell running for {running} s ({left} s of its idle budget left)"),
                        Some(running as f64),
                        None,
                    );
                    continue;
                }
                () = tokio::time::sleep_until(deadline) => {
                    transcript.ensure_line_start();
                    transcript.text(&format!(
                        "[the cell used its idle budget of {} s; interrupted]\n",
                        budget.as_secs()
                    ));
                    let survived = settle(self, state, grace, transcript).await;
                    return Ended::Interrupted { survived };
                }
            };
            let frame = match frame {
                None => return self.died_now("", transcript).await,
                Some(Err(e)) => {
                    transcript.text(&format!("[the kernel sent {e}]\n"));
                    continue;
                }
                Some(Ok(frame)) => frame,
            };
            match frame {
                FromKernel::Stream { text, .. } => transcript.text(&text),
                FromKernel::Display { data } | FromKernel::Result { data } => {
                    transcript.bundle(&data)
                }
                FromKernel::Error {
                    ename,
                    evalue,
                    traceback,
                } => {
                    raised = true;
                    transcript.error(&ename, &evalue, &traceback);
                }
                FromKernel::Done { names, modules } => {
                    self.names = names;
                    self.modules = modules;
                    state.running = false;
                    return Ended::Finished { raised };
                }
                FromKernel::ToolCall { id, name, args } => {
                    bridged += 1;
                    state.bridged = Some(id);
                    let started = Instant::now();
                    let reply = if bridged > MAX_BRIDGED {
                        Err(format!(
                            "a cell may make at most {MAX_BRIDGED} tool calls; this was call {bridged}"
                        ))
                    } else {
                        caller
                            .call(&name, args)
                            .await
                            .map_err(|error| error.message)
                    };
                    // Paused while the call was in flight.
                    deadline += started.elapsed();
                    let frame = tool_result(id, reply);
                    if let Err(e) = self.send(&frame).await {
                        return self.died_now(&e, transcript).await;
                    }
                    state.bridged = None;
                }
                FromKernel::Hello { .. } => {}
            }
        }
    }

    /// The next frame, with what the kernel printed before it shown first;
    /// `None` once the kernel's pipe closed. The raw pipe is read at each
    /// of `reads` meanwhile: a full one would hold back a frame's marker,
    /// and so the frame.
    async fn next_frame(
        &mut self,
        reads: &mut tokio::time::Interval,
        transcript: &mut Transcript,
    ) -> Option<Result<FromKernel, String>> {
        loop {
            let open = self.raw.open();
            tokio::select! {
                frame = self.frames.recv() => {
                    self.raw.pass_marker(transcript);
                    return frame;
                }
                _ = reads.tick(), if open => self.raw.read_now(transcript),
            }
        }
    }

    /// The kernel died (or its pipe broke) during a cell: its status, its
    /// last words, what was lost.
    async fn died_now(&mut self, why: &str, transcript: &mut Transcript) -> Ended {
        // The frames end a moment before the process is seen gone.
        let status = tokio::time::timeout(Duration::from_secs(2), self.child.exited()).await;
        self.raw.last_words(transcript).await;
        let how = match status {
            Ok(Ok(status)) => describe_death(status),
            Ok(Err(e)) => format!("ended ({e})"),
            Err(_) => {
                self.child.kill_group();
                format!("stopped answering ({why}) and was killed")
            }
        };
        Ended::Died(format!(
            "The {} kernel {how} during this cell; {}. The next call starts a fresh kernel.",
            self.language.name(),
            self.lost()
        ))
    }
}

/// Stops a kernel process: SIGTERM, half a second, then SIGKILL to all
/// of it, waiting at most two seconds more for it to be gone (a process
/// stuck in the kernel cannot die sooner).
pub async fn stop(child: &Child) {
    let _ = tokio::time::timeout(
        Duration::from_millis(2500),
        child.stop(Duration::from_millis(500)),
    )
    .await;
}

/// What a running cell is doing, kept outside the cell's future so that a
/// cancelled cell can be settled after it.
#[derive(Debug, Default)]
pub struct CellState {
    /// A cell was sent and its end not seen.
    pub running: bool,
    /// The id of the bridged call in flight, which the kernel waits for.
    pub bridged: Option<u64>,
}

/// Interrupts a running cell: the bridged call in flight (if any) is
/// answered as cancelled, SIGINT goes to the interpreter, and the cell's
/// end is awaited for `grace`; past that, the kernel is killed. True when
/// the kernel survived (its state with it).
///
/// SIGINT is sent again halfway through the grace, as a person at a
/// terminal presses Ctrl-C twice: Python loses an interrupt that lands in
/// a finaliser (closing a file, say) or in a bare `except:` of the cell.
pub async fn settle(
    kernel: &mut Kernel,
    state: &mut CellState,
    grace: Duration,
    transcript: &mut Transcript,
) -> bool {
    // The signal first: a kernel waiting for the bridged call holds it
    // back until the answer is read, then stops at once.
    kernel.interrupt();
    if let Some(id) = state.bridged.take() {
        let cancelled = tool_result(id, Err("cancelled: the cell was interrupted".into()));
        let _ = kernel.send(&cancelled).await;
    }
    let first = grace / 2;
    let mut ended = tokio::time::timeout(first, cell_end(kernel, transcript)).await;
    if ended.is_err() {
        kernel.interrupt();
        ended = tokio::time::timeout(grace - first, cell_end(kernel, transcript)).await;
    }
    state.running = false;
    match ended {
        Ok(true) => {
            transcript.ensure_line_start();
            transcript.text("[interrupted; the kernel and its variables survive]\n");
            true
        }
        _ => {
            kernel.child.kill_group();
            let _ = tokio::time::timeout(Duration::from_secs(2), kernel.child.exited()).await;
            kernel.raw.last_words(transcript).await;
            transcript.ensure_line_start();
            transcript.text(&format!(
                "[the kernel did not stop within {:.1} s of SIGINT and was killed; {}. The next call starts a fresh kernel]\n",
                grace.as_secs_f64(),
                kernel.lost()
            ));
            false
        }
    }
}

/// Reads an interrupted cell's frames to its end: true at `done`, false
/// when the kernel's pipe closed first. Bridged calls it still makes are
/// refused.
async fn cell_end(kernel: &mut Kernel, transcript: &mut Transcript) -> bool {
    let mut reads = RawOutput::reads();
    while let Some(frame) = kernel.next_frame(&mut reads, transcript).await {
        match frame {
            Ok(FromKernel::Done { names, modules }) => {
                kernel.names = names;
                kernel.modules = modules;
                return true;
            }
            Ok(FromKernel::Error {
                traceback,
                ename,
                evalue,
            }) => transcript.error(&ename, &evalue, &traceback),
            Ok(FromKernel::Stream { text, .. }) => transcript.text(&text),
            Ok(FromKernel::ToolCall { id, .. }) => {
                let refused = tool_result(id, Err("cancelled: the cell was interrupted".into()));
                let _ = kernel.send(&refused).await;
            }
            _ => {}
        }
    }
    false
}

fn tool_result(id: u64, reply: Result<gantry_core::ToolResult, String>) -> ToKernel<'static> {
    match reply {
        Ok(result) => ToKernel::ToolResult {
            id,
            ok: true,
            text: result.text_content(),
            parts: result
                .llm_content
                .iter()
                .filter(|part| !matches!(part, Part::Text { .. }))
                .filter_map(|part| serde_json::to_value(part).ok())
                .collect(),
            error: None,
        },
        Err(error) => ToKernel::ToolResult {
            id,
            ok: false,
            text: String::new(),
            parts: Vec::new(),
            error: Some(error),
        },
    }
}

/// How a process died, with the signal's name for the common ones.
fn describe_death(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    let name = match status.signal() {
        Some(libc::SIGSEGV) => " (SIGSEGV: a segmentation fault)",
        Some(libc::SIGKILL) => " (SIGKILL: killed, e.g. by the out-of-memory killer)",
        Some(libc::SIGABRT) => " (SIGABRT: aborted)",
        Some(libc::SIGBUS) => " (SIGBUS)",
        _ => "",
    };
    format!("{}{name}", gantry_process::describe_exit(status))
}

/// The text parts of a result, joined.
pub(crate) fn text_of(parts: &[Part]) -> String {
    parts
        .iter()
        .filter_map(|part| match part {
            Part::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}
