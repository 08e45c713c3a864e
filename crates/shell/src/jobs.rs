//! Background commands of one run, addressed by handle, ended with the run.

use std::collections::BTreeMap;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use gantry_core::{Resource, async_trait};

use crate::process::{Running, describe_kill, describe_status};

/// One background command.
struct Job {
    command: String,
    started: Instant,
    running: Running,
    finished: Option<(ExitStatus, Duration)>,
}

/// A poll of a background job: what it printed since the last poll and how
/// it stands.
pub struct JobReport {
    /// New output since the previous report.
    pub output: String,
    /// "running for 12 s" or "exit code 0 after 3 s".
    pub status: String,
    /// The command, for the report header.
    pub command: String,
}

/// The run's background jobs.
#[derive(Default)]
pub struct Jobs {
    next: AtomicU64,
    jobs: Mutex<BTreeMap<String, Arc<tokio::sync::Mutex<Job>>>>,
}

impl Jobs {
    /// Adds a started command and returns its handle.
    pub fn add(&self, command: &str, running: Running) -> String {
        let handle = format!("bg_{}", self.next.fetch_add(1, Ordering::SeqCst) + 1);
        let job = Job {
            command: command.to_string(),
            started: Instant::now(),
            running,
            finished: None,
        };
        self.lock()
            .insert(handle.clone(), Arc::new(tokio::sync::Mutex::new(job)));
        handle
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Arc<tokio::sync::Mutex<Job>>>> {
        self.jobs.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn get(&self, handle: &str) -> Result<Arc<tokio::sync::Mutex<Job>>, String> {
        let jobs = self.lock();
        jobs.get(handle).cloned().ok_or_else(|| {
            let known: Vec<&str> = jobs.keys().map(String::as_str).collect();
            if known.is_empty() {
                format!("handle: no background job `{handle}` in this run (none were started)")
            } else {
                format!(
                    "handle: no background job `{handle}` in this run; known: {}",
                    known.join(", ")
                )
            }
        })
    }

    /// New output and status of a job; with `kill`, stops it first.
    pub async fn poll(&self, handle: &str, kill: bool) -> Result<JobReport, String> {
        let job = self.get(handle)?;
        let mut job = job.lock().await;
        if job.finished.is_none() {
            let status = if kill {
                let killed = job.running.kill().await;
                if killed.is_none() {
                    return Err(format!(
                        "{handle}: {}; poll it again",
                        describe_kill(None, job.running.reach())
                    ));
                }
                killed
            } else if job.running.try_status().is_some() {
                Some(job.running.wait().await)
            } else {
                None
            };
            if let Some(status) = status {
                let status = status.map_err(|e| format!("cannot collect the job's status: {e}"))?;
                job.finished = Some((status, job.started.elapsed()));
                gantry_core::runlog::record_in_call(
                    "resource.end",
                    serde_json::json!({ "resource": format!("job {handle}"), "detail": describe_status(status) }),
                );
                // The last of its output, for this report; a process that
                // left its group may hold the pipe (without a reaper), and
                // what it writes later comes with later polls.
                let _ = job.running.rest_of_output().await;
            }
        }
        let mut output = job.running.output().lock().take().shown();
        output.push_str(&job.running.sandbox_report(&output));
        let status = match job.finished {
            Some((status, took)) => {
                format!("{} after {} s", describe_status(status), took.as_secs())
            }
            None => format!("running for {} s", job.started.elapsed().as_secs()),
        };
        Ok(JobReport {
            output,
            status,
            command: job.command.clone(),
        })
    }
}

#[async_trait]
impl Resource for Jobs {
    fn name(&self) -> String {
        "background shell jobs".into()
    }

    async fn shutdown(&self) {
        let jobs: Vec<_> = std::mem::take(&mut *self.lock()).into_values().collect();
        for job in jobs {
            let job = job.lock().await;
            if job.finished.is_none() {
                // Bounded: a process stuck in the kernel is not waited for.
                let _ = job.running.kill().await;
            }
        }
    }

    fn kill_now(&self) {
        for job in self.lock().values() {
            // A job locked by a poll is being waited for or killed.
            if let Ok(job) = job.try_lock() {
                job.running.kill_group();
            }
        }
    }

    fn status(&self) -> String {
        format!("{} background shell job(s)", self.lock().len())
    }
}
