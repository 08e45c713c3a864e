//! Confinement by the kernel, tried as an attacker would: a folder swapped
//! for a link to outside by an atomic exchange, in a loop, while reads,
//! overwrites and creates go through the workspace; FIFOs where files were
//! (`across_processes.rs` has two processes with different state
//! directories editing one file).

// Tests build their fixtures directly.
#![allow(clippy::disallowed_methods)]

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use gantry_core::write::{Change, ChangeSet, WriteError};
use gantry_core::{Run, Workspace, testing};
use rustix::fs::{CWD, RenameFlags};

/// How long each race runs: long enough for tens of thousands of swaps.
const RACE: Duration = Duration::from_secs(2);

/// A workspace with `racedir/f.txt` ("inside"), a link `racelink` to an
/// outside folder holding `f.txt` ("OUTSIDE"), and a thread exchanging the
/// two names as fast as it can until the returned flag is set.
struct Race {
    _ws: tempfile::TempDir,
    outside: tempfile::TempDir,
    run: Run,
    stop: Arc<AtomicBool>,
    swaps: Arc<AtomicUsize>,
    swapper: Option<std::thread::JoinHandle<()>>,
}

impl Race {
    fn start() -> Race {
        testing::state_dir();
        let ws = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir(ws.path().join("racedir")).unwrap();
        std::fs::write(ws.path().join("racedir/f.txt"), "inside").unwrap();
        std::fs::write(outside.path().join("f.txt"), "OUTSIDE").unwrap();
        std::os::unix::fs::symlink(outside.path(), ws.path().join("racelink")).unwrap();
        let run = Run::builder(Workspace::new(ws.path()).unwrap()).build();
        let stop = Arc::new(AtomicBool::new(false));
        let swaps = Arc::new(AtomicUsize::new(0));
        let (a, b) = (ws.path().join("racedir"), ws.path().join("racelink"));
        let swapper = {
            let (stop, swaps) = (stop.clone(), swaps.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    rustix::fs::renameat_with(CWD, &a, CWD, &b, RenameFlags::EXCHANGE).unwrap();
                    swaps.fetch_add(1, Ordering::Relaxed);
                }
            })
        };
        Race {
            _ws: ws,
            outside,
            run,
            stop,
            swaps,
            swapper: Some(swapper),
        }
    }

    fn ws(&self) -> &Workspace {
        self.run.workspace()
    }

    /// Stops the swapping and returns how many swaps there were.
    fn stop(&mut self) -> usize {
        self.stop.store(true, Ordering::Relaxed);
        self.swapper.take().unwrap().join().unwrap();
        self.swaps.load(Ordering::Relaxed)
    }

    /// Every name in the outside folder.
    fn outside_names(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.outside.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }
}

impl Drop for Race {
    fn drop(&mut self) {
        if self.swapper.is_some() {
            self.stop();
        }
    }
}

/// What the reads of a race returned.
#[derive(Default)]
struct Reads {
    inside: usize,
    refused: usize,
    outside: usize,
}

impl Reads {
    fn count(&mut self, read: std::io::Result<Vec<u8>>) {
        match read {
            Ok(bytes) if bytes == b"inside" => self.inside += 1,
            Ok(bytes) => {
                self.outside += 1;
                assert_eq!(bytes, b"OUTSIDE");
            }
            Err(_) => self.refused += 1,
        }
    }

    /// Nothing came from outside, and the race went both ways.
    fn check(&self, what: &str, swaps: usize) {
        let Reads {
            inside,
            refused,
            outside,
        } = self;
        eprintln!("{what}: {inside} inside, {refused} refused, {outside} outside; {swaps} swaps");
        assert_eq!(*outside, 0, "{outside} {what} returned the outside file");
        assert!(swaps > 1000, "the race barely ran: {swaps} swaps");
        assert!(
            *inside > 0 && *refused > 0,
            "inside {inside}, refused {refused}"
        );
    }
}

#[test]
fn reads_never_reach_outside_while_a_folder_is_swapped_for_a_link() {
    let mut race = Race::start();
    let path = race.ws().root().join("racedir/f.txt");
    let mut reads = Reads::default();
    let until = Instant::now() + RACE;
    while Instant::now() < until {
        reads.count(race.ws().read(&path));
    }
    reads.check("reads", race.stop());
}

#[test]
fn files_opened_by_name_in_a_held_folder_never_come_from_outside() {
    let mut race = Race::start();
    let dir = race.ws().root().join("racedir");
    let mut reads = Reads::default();
    let until = Instant::now() + RACE;
    while Instant::now() < until {
        // Held across several opens, as a search holds it, while the
        // folder it was opened by is swapped back and forth.
        let Ok(held) = race.ws().open_dir(&dir) else {
            reads.refused += 1;
            continue;
        };
        for _ in 0..4 {
            let read = race.ws().open_entry(&held, "f.txt".as_ref());
            reads.count(
                read.and_then(std::io::read_to_string)
                    .map(String::into_bytes),
            );
        }
    }
    reads.check("opens by name", race.stop());
}

#[test]
fn an_entry_name_cannot_leave_its_folder() {
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir(ws.path().join("d")).unwrap();
    std::fs::write(ws.path().join("top.txt"), "top").unwrap();
    std::fs::write(ws.path().join("d/in.txt"), "in").unwrap();
    std::fs::write(outside.path().join("secret"), "OUTSIDE").unwrap();
    std::os::unix::fs::symlink("../top.txt", ws.path().join("d/up")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret"), ws.path().join("d/out")).unwrap();
    let workspace = Workspace::new(ws.path()).unwrap();
    let held = workspace.open_dir(&workspace.root().join("d")).unwrap();
    let read = |name: &str| {
        workspace
            .open_entry(&held, name.as_ref())
            .map(|file| std::io::read_to_string(file).unwrap())
    };
    assert_eq!(read("in.txt").unwrap(), "in");
    // A link is followed only where it stays inside.
    assert_eq!(read("up").unwrap(), "top");
    let refused = read("out").unwrap_err();
    assert_eq!(
        refused.kind(),
        std::io::ErrorKind::PermissionDenied,
        "{refused}"
    );
    for name in ["..", ".", "", "../top.txt", "sub/in.txt"] {
        let refused = read(name).unwrap_err();
        assert_eq!(
            refused.kind(),
            std::io::ErrorKind::InvalidInput,
            "{name}: {refused}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overwrites_and_creates_never_land_outside_while_a_folder_is_swapped() {
    let mut race = Race::start();
    let root = race.ws().root().to_path_buf();
    let until = Instant::now() + RACE;
    let (mut written, mut refused, mut n) = (0, 0, 0);
    while Instant::now() < until {
        n += 1;
        let mut changes = ChangeSet::new();
        // An overwrite planned against "inside", and a new file.
        let target = root.join("racedir/f.txt");
        let created = root.join(format!("racedir/new{n}.txt"));
        let planned = changes
            .push(race.ws(), Change::modified(&target, "inside", "inside"))
            .and_then(|()| changes.push(race.ws(), Change::created(&created, "new")));
        if planned.is_err() {
            refused += 1;
            continue;
        }
        match race.run.apply(changes).await {
            Ok(_) => written += 1,
            Err(
                WriteError::Outside(_)
                | WriteError::Stale { .. }
                | WriteError::Io { .. }
                | WriteError::Plan(_),
            ) => refused += 1,
        }
    }
    let swaps = race.stop();
    eprintln!("writes: {written} written, {refused} refused; {swaps} swaps");
    assert_eq!(
        std::fs::read_to_string(race.outside.path().join("f.txt")).unwrap(),
        "OUTSIDE"
    );
    assert_eq!(race.outside_names(), ["f.txt"], "files were made outside");
    assert!(swaps > 100, "the race barely ran: {swaps} swaps");
    assert!(written > 0, "no write got through ({refused} refused)");
    // Nothing of Gantry's own is left inside either.
    let leftovers: Vec<String> = walk(&root)
        .into_iter()
        .filter(|name| name.contains(".gantry-"))
        .collect();
    assert!(leftovers.is_empty(), "temp files left: {leftovers:?}");
}

/// Every path under `root`, not following links.
fn walk(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(root).unwrap() {
        let entry = entry.unwrap();
        let path = entry.path();
        out.push(path.display().to_string());
        if entry.file_type().unwrap().is_dir() {
            out.extend(walk(&path));
        }
    }
    out
}

#[test]
fn absolute_links_are_followed_inside_and_refused_by_name_outside() {
    let ws = testing::workspace_with(&[("src/lib.rs", "lib"), ("deep/a/b/c.txt", "c")]);
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret"), "s").unwrap();
    let root = ws.path().canonicalize().unwrap();
    std::os::unix::fs::symlink(root.join("src"), root.join("abs_in")).unwrap();
    std::os::unix::fs::symlink(outside.path(), root.join("deep/a/abs_out")).unwrap();
    std::os::unix::fs::symlink("../../..", root.join("deep/a/b/up")).unwrap();
    std::os::unix::fs::symlink("../../../..", root.join("deep/a/b/out")).unwrap();
    let workspace = Workspace::new(&root).unwrap();

    assert_eq!(workspace.read(&root.join("abs_in/lib.rs")).unwrap(), b"lib");
    assert_eq!(
        workspace
            .read(&root.join("deep/a/b/up/src/lib.rs"))
            .unwrap(),
        b"lib"
    );
    for (path, link) in [
        ("deep/a/abs_out/secret", "deep/a/abs_out"),
        ("deep/a/b/out/etc", "deep/a/b/out"),
    ] {
        let error = workspace.read(&root.join(path)).unwrap_err();
        assert!(
            error
                .to_string()
                .contains(&format!("`{link}` is a symlink that resolves outside")),
            "{path}: {error}"
        );
        let error = workspace.resolve(path).unwrap_err();
        assert!(error.to_string().contains(link), "{path}: {error}");
    }
}

/// A named pipe at `path`, which nobody writes to.
fn make_fifo(path: &Path) {
    rustix::fs::mknodat(
        CWD,
        path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
}

#[tokio::test]
async fn fifos_are_refused_at_once_by_reads_plans_and_applies() {
    let ws = testing::workspace_with(&[("f.txt", "old")]);
    let root = ws.path().canonicalize().unwrap();
    let run = Run::builder(Workspace::new(&root).unwrap()).build();
    make_fifo(&root.join("pipe"));
    let started = Instant::now();
    let error = run.workspace().read(&root.join("pipe")).unwrap_err();
    assert_eq!(
        gantry_core::NotRegular::of(&error).unwrap().kind,
        "a FIFO (named pipe)"
    );
    let mut changes = ChangeSet::new();
    let error = changes
        .plan_write(run.workspace(), &root.join("pipe"), "x")
        .unwrap_err();
    assert!(error.to_string().contains("a FIFO"), "{error}");

    // A file planned against, then swapped for a FIFO before the apply:
    // the apply's re-read under the root lock must not wait on it.
    let mut changes = ChangeSet::new();
    changes
        .plan_write(run.workspace(), &root.join("f.txt"), "new")
        .unwrap();
    std::fs::remove_file(root.join("f.txt")).unwrap();
    make_fifo(&root.join("f.txt"));
    let error = run.apply(changes).await.unwrap_err();
    assert!(error.to_string().contains("a FIFO"), "{error}");
    // Refused, not waited on: a writer to the FIFO may never come.
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(
        std::fs::symlink_metadata(root.join("f.txt"))
            .unwrap()
            .file_type()
            .is_fifo()
    );
}

use std::os::unix::fs::FileTypeExt;
