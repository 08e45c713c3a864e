//! Whether a workspace's own settings file changed while Gantry ran the
//! model's commands.
//!
//! A trusted folder's `.gantry/settings.json` may loosen confinement (a
//! wider sandbox, processes to start). It lies inside the workspace, which
//! the sandbox lets every command write, and Landlock cannot carve a
//! read-only file out of a writable folder. So a confined command could
//! write that file and be unconfined from the next run on. The witness
//! closes that: each run records the file as it found it, and a file that
//! differs when a run ends (or when the next one finds a run that died
//! without ending) was changed while commands ran: it is *tainted*, and
//! its trust is withheld until the user confirms it (`gantry trust`,
//! [`confirm`]), which a confined command cannot do: the records live in
//! the state directory, which the sandbox does not let commands write
//! (and never in the workspace).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::state;
use crate::write::ContentHash;

/// The file the witness watches, relative to the workspace root.
const SETTINGS_FILE: &str = ".gantry/settings.json";
/// The record of a tainted file, in the root's witness folder.
const TAINTED: &str = "tainted";
/// The folder of the records of the runs that have not ended.
const RUNS: &str = "runs";
/// The stamp of a settings file that is not there.
const ABSENT: &str = "absent";

/// Why a trusted folder's settings are not trusted this time, for the
/// warning and `gantry status`.
pub const TAINTED_REASON: &str = "it was changed while Gantry ran commands for a model (by one of \
     them, or by you during a run), so the keys only trust may set are ignored from it; if the \
     change is yours, run `gantry trust` in the folder to confirm the file as it is now";

/// The settings file as the witness knows it: absent, or its size,
/// modification time and content hash.
fn stamp(root: &Path) -> String {
    let path = root.join(SETTINGS_FILE);
    let Ok(meta) = std::fs::metadata(&path) else {
        return ABSENT.into();
    };
    let modified = meta
        .modified()
        .ok()
        .and_then(|time| time.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |since| since.as_nanos());
    let hash = std::fs::read(&path)
        .map(|bytes| ContentHash::of(&bytes).to_string())
        .unwrap_or_else(|e| format!("unreadable {}", e.kind()));
    format!("{}:{modified}:{hash}", meta.len())
}

/// The witness's records of `root`, however the root was named.
fn folder(root: &Path) -> PathBuf {
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    state::root_dir("witness", &root)
}

/// Whether `root`'s settings file is tainted. Settles the records of runs
/// that died without ending (their change taints the file now); a run
/// still going whose file changed under it also withholds trust.
pub(crate) fn tainted(root: &Path) -> bool {
    let folder = folder(root);
    let now = stamp(root);
    let mut changed_under_a_run = false;
    if let Ok(runs) = std::fs::read_dir(folder.join(RUNS)) {
        for run in runs.flatten() {
            let Ok(started) = std::fs::read_to_string(run.path()) else {
                continue;
            };
            if started == now {
                if !alive(&run.file_name().to_string_lossy()) {
                    let _ = std::fs::remove_file(run.path());
                }
                continue;
            }
            changed_under_a_run = true;
            if !alive(&run.file_name().to_string_lossy()) {
                // Gantry died in that run (SIGKILL): the end it never had.
                let _ = state::write_file(&folder.join(TAINTED), now.as_bytes());
                let _ = std::fs::remove_file(run.path());
            }
        }
    }
    // A file that is not there sets nothing to withhold.
    now != ABSENT
        && (changed_under_a_run
            || std::fs::read_to_string(folder.join(TAINTED)).is_ok_and(|tainted| tainted == now))
}

/// Confirms `root`'s settings file as it is now, on the user's word: it
/// is no longer tainted, and runs still going take it as the file they
/// began with. Says what was done.
pub fn confirm(root: &Path) -> std::io::Result<String> {
    let folder = folder(root);
    let now = stamp(root);
    if let Ok(runs) = std::fs::read_dir(folder.join(RUNS)) {
        for run in runs.flatten() {
            if alive(&run.file_name().to_string_lossy()) {
                state::write_file(&run.path(), now.as_bytes())?;
            } else {
                std::fs::remove_file(run.path())?;
            }
        }
    }
    match std::fs::remove_file(folder.join(TAINTED)) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let file = root.join(SETTINGS_FILE);
    Ok(if now == ABSENT {
        format!("{} does not exist; nothing to confirm", file.display())
    } else {
        format!(
            "{} confirmed as it is now: a folder trustedFolders lists trusts it again from the next run",
            file.display()
        )
    })
}

/// Whether the process of a run record (`PID-N`) is still running.
fn alive(record: &str) -> bool {
    let pid = record.split('-').next().unwrap_or_default();
    !pid.is_empty() && Path::new("/proc").join(pid).exists()
}

/// One run's watch over its workspace's settings file: begun when the run
/// is built, ended when it ends (or by the next run, if Gantry dies).
#[derive(Debug)]
pub struct SettingsWitness {
    root: PathBuf,
    record: PathBuf,
    started: String,
    ended: AtomicBool,
}

impl SettingsWitness {
    /// Records the settings file of `root` as this run finds it. A record
    /// that cannot be written leaves the file unwatched, which is logged:
    /// the state directory is Gantry's own, so that is a broken machine.
    pub fn begin(root: &Path) -> SettingsWitness {
        static RUN: AtomicU64 = AtomicU64::new(0);
        let name = format!(
            "{}-{}",
            std::process::id(),
            RUN.fetch_add(1, Ordering::Relaxed)
        );
        let record = folder(root).join(RUNS).join(name);
        let started = stamp(root);
        if let Err(e) = state::write_file(&record, started.as_bytes()) {
            tracing::warn!("cannot record the settings file of {}: {e}", root.display());
        }
        SettingsWitness {
            root: root.to_path_buf(),
            record,
            started,
            ended: AtomicBool::new(false),
        }
    }

    /// Ends the watch: a file that changed since the run began is tainted.
    /// Call it once every process the run started is gone; later calls do
    /// nothing.
    pub fn end(&self) {
        if self.ended.swap(true, Ordering::SeqCst) {
            return;
        }
        let now = stamp(&self.root);
        if now != self.started {
            let tainted = folder(&self.root).join(TAINTED);
            if let Err(e) = state::write_file(&tainted, now.as_bytes()) {
                tracing::warn!("cannot record the changed settings file: {e}");
            }
        }
        let _ = std::fs::remove_file(&self.record);
    }
}

/// Owned by the run, wired before every family so that it ends after
/// them, once the processes they started are gone.
#[async_trait::async_trait]
impl crate::Resource for SettingsWitness {
    fn name(&self) -> String {
        "settings witness".into()
    }

    fn status(&self) -> String {
        format!(
            "a watch on {SETTINGS_FILE}: if it changes while this run's commands run, its trust \
             is withheld until you confirm it with `gantry trust`"
        )
    }

    async fn shutdown(&self) {
        self.end();
    }

    fn kill_now(&self) {
        self.end();
    }
}

impl Drop for SettingsWitness {
    fn drop(&mut self) {
        self.end();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(root: &Path, text: &str) {
        std::fs::create_dir_all(root.join(".gantry")).unwrap();
        std::fs::write(root.join(SETTINGS_FILE), text).unwrap();
    }

    #[test]
    fn a_file_changed_during_a_run_is_tainted_until_touched_outside_one() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        settings(root, r#"{"sandbox": {"mode": "workspace-write"}}"#);
        assert!(!tainted(root));

        // Read and left alone: nothing to say.
        SettingsWitness::begin(root).end();
        assert!(!tainted(root));

        let run = SettingsWitness::begin(root);
        settings(root, r#"{"sandbox": {"mode": "off"}}"#);
        assert!(tainted(root), "changed under a run that still goes");
        run.end();
        assert!(tainted(root), "and after it ended");

        // The user confirms it, even with a run going (a client keeps
        // `gantry mcp` open all day), which then ends without tainting.
        let going = SettingsWitness::begin(root);
        assert!(tainted(root));
        let said = confirm(root).unwrap();
        assert!(said.contains("confirmed as it is now"), "{said}");
        assert!(!tainted(root));
        going.end();
        assert!(!tainted(root));
    }

    #[test]
    fn a_run_that_died_is_settled_by_the_next() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        // A run of a Gantry that no longer exists (no such pid), which
        // found no settings file; one was created since.
        let dead = folder(root).join(RUNS).join("999999999-0");
        state::write_file(&dead, ABSENT.as_bytes()).unwrap();
        settings(root, r#"{"mcpServers": {"x": {"command": "planted"}}}"#);
        assert!(tainted(root));
        assert!(!dead.exists(), "the dead run's record is settled");
        assert!(tainted(root), "and the file stays tainted");
        std::fs::remove_file(root.join(SETTINGS_FILE)).unwrap();
        assert!(!tainted(root), "no file sets nothing to withhold");
    }
}
