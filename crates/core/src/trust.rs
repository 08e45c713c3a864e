//! Trust by content, as direnv's `allow` (SPEC §3).
//!
//! A workspace's `.gantry/settings.json` comes with the checkout, and any
//! command the sandbox lets write the workspace can change it. So the keys
//! only trust may set count from it while, and only while, (a) the user's
//! `trustedFolders` lists its folder (which folders may be trusted at all)
//! and (b) its content is one the user approved with `gantry trust`: a
//! SHA-256 of the bytes, recorded in the user's own Gantry folder beside
//! `settings.json` (`$GANTRY_HOME/trusted`), never in the workspace. Any
//! change, by anyone, at any time, withdraws the trust until the user
//! approves the file again; every run says so and how.
//!
//! The file is read once, through a handle opened beneath the root with no
//! symlink allowed on the way (`RESOLVE_NO_SYMLINKS`, `O_NOFOLLOW`, so
//! neither a linked `.gantry` nor a linked file), and the bytes hashed are
//! the bytes parsed: nothing is checked and then opened again. A file
//! reached through a link is still read (beneath the root), for the keys
//! anyone may set, and never trusted; a FIFO, socket, device, directory
//! or an oversized file is not read at all. Whatever cannot be read,
//! hashed or recorded leaves the file untrusted.
//!
//! This replaced the settings witness, which recorded the file at the
//! start and end of every run to catch a confined command's change: an
//! approved hash catches every change, made during a run, between runs,
//! through a symlink or in a nested folder opened later, with no record
//! per run to keep and nothing a dead process leaves half-settled.

use std::fmt;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::settings::{SettingsError, gantry_home};
use crate::state;
use crate::workspace::{NotRegular, open_beneath};
use crate::write::ContentHash;

/// The workspace's settings file, relative to its root.
pub const WORKSPACE_FILE: &str = ".gantry/settings.json";

/// The largest workspace settings file read: settings are small, and a
/// cloned repository's huge (or sparse) file must not fill the memory.
const MAX_BYTES: u64 = 1 << 20;

/// The folder of the approvals, in the user's Gantry folder.
const APPROVALS: &str = "trusted";

/// A workspace's settings file as Gantry read it, once.
#[derive(Debug)]
pub(crate) struct WorkspaceFile {
    /// Where it is, as the root was given (for messages and the loader).
    pub(crate) path: PathBuf,
    /// The bytes read, exactly those hashed and parsed; `None` when there
    /// is no file or it was not read.
    pub(crate) bytes: Option<Vec<u8>>,
    /// Why it can never be trusted as it is (a link on its way, not a
    /// regular file, too large): a warning with the way forward.
    never: Option<String>,
}

impl WorkspaceFile {
    /// Reads `root`'s settings file: link-free, or else (never trusted)
    /// through links that stay beneath the root. An error only where the
    /// file is there but cannot be read (a permission), as for any
    /// settings file.
    pub(crate) fn read(root: &Path) -> Result<WorkspaceFile, SettingsError> {
        let path = root.join(WORKSPACE_FILE);
        let shown = path.display().to_string();
        let mut file = WorkspaceFile {
            path,
            bytes: None,
            never: None,
        };
        let opened = match open_beneath(root, Path::new(WORKSPACE_FILE), true) {
            Err(e) if is_link(&e) => {
                file.never = Some(format!(
                    "{shown} is a symlink, or is reached through one (a linked `.gantry`), \
                     and a linked settings file is never trusted; only the keys anyone may set \
                     are read from it. To trust it, make it a regular file in a regular \
                     `.gantry` folder, review it, and run: {}",
                    trust_command(root)
                ));
                match open_beneath(root, Path::new(WORKSPACE_FILE), false) {
                    // Dangling, a loop, or leading out of the workspace
                    // (refused as a permission): not read.
                    Err(e)
                        if is_link(&e)
                            || matches!(
                                e.kind(),
                                io::ErrorKind::NotFound | io::ErrorKind::PermissionDenied
                            ) =>
                    {
                        return Ok(file);
                    }
                    other => other,
                }
            }
            other => other,
        };
        let handle = match opened {
            Ok(handle) => handle,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                ) =>
            {
                return Ok(file);
            }
            Err(e)
                if e.kind() == io::ErrorKind::IsADirectory
                    || NotRegular::of(&e).is_some()
                    || e.raw_os_error() == Some(rustix::io::Errno::NXIO.raw_os_error()) =>
            {
                // A socket cannot be opened at all (`ENXIO`).
                let kind = match NotRegular::of(&e) {
                    Some(not) => not.kind,
                    None if e.kind() == io::ErrorKind::IsADirectory => "a directory",
                    None => "a socket",
                };
                file.never = Some(format!(
                    "{shown} is {kind}, not a regular file: it is not read, and never trusted; \
                     remove it, or put the settings in a regular file there"
                ));
                return Ok(file);
            }
            Err(e) => return Err(unreadable(&shown, &e)),
        };
        let mut bytes = Vec::new();
        handle
            .take(MAX_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| unreadable(&shown, &e))?;
        if bytes.len() as u64 > MAX_BYTES {
            file.never = Some(format!(
                "{shown} is larger than {} KiB: it is not read, and never trusted",
                MAX_BYTES / 1024
            ));
            return Ok(file);
        }
        file.bytes = Some(bytes);
        Ok(file)
    }
}

/// Whether an open failed because of a symlink on the way: `ELOOP`, as
/// `RESOLVE_NO_SYMLINKS` and `O_NOFOLLOW` refuse one (and a loop of links).
fn is_link(error: &io::Error) -> bool {
    error.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error())
}

/// The settings error for a file that is there but cannot be read.
fn unreadable(shown: &str, error: &io::Error) -> SettingsError {
    SettingsError::Io {
        file: shown.to_string(),
        message: error.to_string(),
    }
}

/// How far a workspace's own settings are trusted, and why not.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum WorkspaceTrust {
    /// The user's `trustedFolders` does not list the folder: the usual
    /// case of a cloned repository, said only where a key was ignored.
    #[default]
    NotListed,
    /// The folder is listed and its settings file, if it has one, is
    /// exactly what the user approved: its keys all count.
    Trusted,
    /// The settings file is not trusted as it is (changed since it was
    /// approved, never approved, linked, unreadable approvals): why, and
    /// how to proceed. Every run warns with it.
    Withheld(String),
}

impl fmt::Display for WorkspaceTrust {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WorkspaceTrust::NotListed => f.write_str(
                "not trusted: the folder is not in the `trustedFolders` of your own settings",
            ),
            WorkspaceTrust::Trusted => f.write_str(
                "trusted (a folder in `trustedFolders`, its settings file as you approved it)",
            ),
            WorkspaceTrust::Withheld(why) => f.write_str(why),
        }
    }
}

/// The user's approvals of workspace settings files: the hash of each
/// file's approved content, one record per file, in a folder beside the
/// user's own `settings.json`, where only the user writes.
#[derive(Debug, Clone)]
pub struct Approvals {
    dir: PathBuf,
}

/// One approval, as stored.
#[derive(Debug, Serialize, Deserialize)]
struct Record {
    /// The approved file's canonical path (the record's name is its hash).
    file: PathBuf,
    /// The SHA-256 of the approved content, in hex.
    sha256: String,
}

/// `gantry trust` could not approve a file: what is wrong and what to do.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct TrustError(String);

impl Approvals {
    /// The user's approvals: beside `$GANTRY_HOME/settings.json`.
    pub fn of_user() -> Approvals {
        Approvals::beside(&gantry_home().join("settings.json"))
    }

    /// The approvals kept beside the user-level settings file `user_file`
    /// (the one whose `trustedFolders` is read with them).
    pub fn beside(user_file: &Path) -> Approvals {
        let home = user_file.parent().unwrap_or(Path::new(""));
        Approvals {
            dir: home.join(APPROVALS),
        }
    }

    /// Records `root`'s settings file, as it is now, as approved by the
    /// user: from the next run on, its folder (if `trustedFolders` lists
    /// it) is trusted while the file stays byte for byte the same. Says
    /// what was approved.
    pub fn approve(&self, root: &Path) -> Result<String, TrustError> {
        let root = &root
            .canonicalize()
            .map_err(|e| TrustError(format!("cannot open the folder {}: {e}", root.display())))?;
        let file = WorkspaceFile::read(root).map_err(|e| TrustError(e.to_string()))?;
        if let Some(never) = file.never {
            return Err(TrustError(never));
        }
        let Some(bytes) = file.bytes else {
            return Err(TrustError(format!(
                "{} does not exist: there is nothing to trust (a folder in `trustedFolders` \
                 with no settings file is trusted as it is)",
                file.path.display()
            )));
        };
        crate::settings::parse(&file.path, &bytes)
            .map_err(|e| TrustError(format!("{e}; fix the file, then run `gantry trust` again")))?;
        let canonical = root.join(WORKSPACE_FILE);
        self.usable_for(root).map_err(TrustError)?;
        let hash = ContentHash::of(&bytes).to_string();
        let record = Record {
            file: canonical.clone(),
            sha256: hash.clone(),
        };
        let text = serde_json::to_vec_pretty(&record).map_err(|e| TrustError(e.to_string()))?;
        state::write_whole(&self.record_of(&canonical), &text).map_err(|e| {
            TrustError(format!(
                "cannot record the approval in {}: {e}; nothing was trusted",
                self.dir.display()
            ))
        })?;
        Ok(format!(
            "trusted {} as it is now (sha256 {hash}); any change to it needs `gantry trust` again",
            canonical.display()
        ))
    }

    /// How far `file` (read from `root`) is trusted, `listed` saying
    /// whether `trustedFolders` lists the folder. Fails closed: anything
    /// that cannot be read or resolved withholds the trust.
    pub(crate) fn judge(&self, root: &Path, file: &WorkspaceFile, listed: bool) -> WorkspaceTrust {
        if let Some(never) = &file.never {
            return WorkspaceTrust::Withheld(never.clone());
        }
        if !listed {
            return WorkspaceTrust::NotListed;
        }
        let Some(bytes) = &file.bytes else {
            return WorkspaceTrust::Trusted;
        };
        let shown = file.path.display();
        let hash = ContentHash::of(bytes).to_string();
        let approved = self.usable_for(root).and_then(|()| {
            let canonical =
                canonical_file(root).map_err(|e| format!("it cannot be resolved ({e})"))?;
            self.approved(&canonical, &hash).map_err(|e| {
                format!(
                    "your approvals in {} cannot be read ({e}), and nothing unreadable is \
                     trusted; fix or remove that folder, then run: {}",
                    self.dir.display(),
                    trust_command(root)
                )
            })
        });
        match approved {
            Ok(true) => WorkspaceTrust::Trusted,
            Ok(false) => WorkspaceTrust::Withheld(format!(
                "{shown} is not trusted: its content (sha256 {}) is not what you approved \
                 with `gantry trust` (it changed since, by anyone, or was never approved), so \
                 the keys only trust may set are ignored from it. Review it; to trust it as it \
                 is now, run: {}",
                &hash[..16],
                trust_command(root)
            )),
            Err(why) => WorkspaceTrust::Withheld(format!("{shown} is not trusted: {why}")),
        }
    }

    /// Whether the approval of `file` (canonical) is for `hash`. No
    /// record is `false`; a record that cannot be read is an error.
    fn approved(&self, file: &Path, hash: &str) -> io::Result<bool> {
        let text = match std::fs::read(self.record_of(file)) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(e),
        };
        let record: Record = serde_json::from_slice(&text)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        Ok(record.file == file && record.sha256 == hash)
    }

    /// Where the approval of `file` (canonical) is recorded.
    fn record_of(&self, file: &Path) -> PathBuf {
        self.dir.join(state::root_key(file))
    }

    /// Refuses approvals a command Gantry runs in `root` could write: a
    /// relative folder (no home: it would be the workspace's own
    /// `.gantry`) or one inside the workspace.
    fn usable_for(&self, root: &Path) -> Result<(), String> {
        if !self.dir.is_absolute() {
            return Err(format!(
                "Gantry's folder for your approvals ({}) is not an absolute path, so none can \
                 be kept and no workspace settings file is trusted; set GANTRY_HOME (or HOME)",
                self.dir.display()
            ));
        }
        let home = self.dir.parent().unwrap_or(&self.dir);
        let inside = match (home.canonicalize(), root.canonicalize()) {
            (Ok(home), Ok(root)) => home.starts_with(root),
            // No home yet holds no approval; an unresolvable root trusts nothing.
            (Err(_), Ok(_)) => false,
            (_, Err(_)) => true,
        };
        if inside {
            return Err(format!(
                "your approvals ({}) are inside the workspace {}, where the commands Gantry \
                 runs may write, so no settings file of it is trusted; set GANTRY_HOME to a \
                 folder outside it",
                self.dir.display(),
                root.display()
            ));
        }
        Ok(())
    }
}

/// `root`'s settings file by its canonical path: the name its approval is
/// kept under, however the root was named.
fn canonical_file(root: &Path) -> io::Result<PathBuf> {
    Ok(root.canonicalize()?.join(WORKSPACE_FILE))
}

/// The command that approves `root`'s settings file, ready to paste.
fn trust_command(root: &Path) -> String {
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let text = root.display().to_string();
    let plain = text
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+,:@".contains(c));
    if plain {
        format!("gantry trust {text}")
    } else {
        format!("gantry trust '{}'", text.replace('\'', r"'\''"))
    }
}

/// The workspace root a `gantry trust` argument names: a folder, its
/// `.gantry`, or its `.gantry/settings.json`.
pub fn root_named(path: &Path) -> PathBuf {
    let named = |p: &Path, name: &str| p.file_name().is_some_and(|n| n == name);
    let mut root = path;
    if named(root, "settings.json") && root.parent().is_some_and(|p| named(p, ".gantry")) {
        root = root.parent().unwrap_or(root);
    }
    if named(root, ".gantry") {
        root = root.parent().unwrap_or(root);
    }
    if root.as_os_str().is_empty() {
        Path::new(".").to_path_buf()
    } else {
        root.to_path_buf()
    }
}

#[cfg(test)]
// Tests build their fixtures directly.
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;
    use crate::Settings;
    use serde_json::Value;

    /// A user's home (its `settings.json` listing `listed`) and its
    /// approvals.
    struct Home {
        dir: tempfile::TempDir,
    }

    impl Home {
        fn listing(listed: &[&Path]) -> Home {
            let home = Home {
                dir: tempfile::tempdir().unwrap(),
            };
            let user = serde_json::json!({ "trustedFolders": listed });
            std::fs::write(home.user_file(), user.to_string()).unwrap();
            home
        }

        fn user_file(&self) -> PathBuf {
            self.dir.path().join("settings.json")
        }

        fn approvals(&self) -> Approvals {
            Approvals::beside(&self.user_file())
        }

        fn load(&self, root: &Path) -> Settings {
            Settings::load_from(&self.user_file(), root).unwrap()
        }

        fn trust(&self, root: &Path) -> WorkspaceTrust {
            self.load(root).workspace_trust().clone()
        }
    }

    const LOOSER: &str = r#"{"sandbox": {"mode": "off"}}"#;

    fn workspace(settings: &str) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join(".gantry")).unwrap();
        std::fs::write(root.path().join(WORKSPACE_FILE), settings).unwrap();
        root
    }

    fn withheld(trust: &WorkspaceTrust, says: &str) {
        match trust {
            WorkspaceTrust::Withheld(why) => assert!(why.contains(says), "{why}"),
            other => panic!("expected the trust withheld ({says}), got {other:?}"),
        }
    }

    #[test]
    fn trusted_only_as_approved_and_any_byte_changed_withdraws_it() {
        let ws = workspace(LOOSER);
        let root = ws.path();
        let home = Home::listing(&[root]);
        withheld(&home.trust(root), "was never approved");
        let said = home.trust(root).to_string();
        assert!(
            said.contains(&format!(
                "gantry trust {}",
                root.canonicalize().unwrap().display()
            )),
            "says how to confirm: {said}"
        );

        let approved = home.approvals().approve(root).unwrap();
        assert!(approved.contains("sha256"), "{approved}");
        assert_eq!(home.trust(root), WorkspaceTrust::Trusted);
        assert!(home.load(root).workspace_trusted());

        // One byte more (a trailing space) is another file.
        std::fs::write(root.join(WORKSPACE_FILE), format!("{LOOSER} ")).unwrap();
        withheld(&home.trust(root), "not what you approved");
        let settings = home.load(root);
        assert!(!settings.workspace_trusted());
        let (sandbox, ignored): (Value, _) =
            settings.section_honoured("sandbox", |_| true).unwrap();
        assert_eq!(sandbox, Value::Null, "the looser key is ignored");
        assert_eq!(ignored, ["sandbox"]);

        // Named another way (through a link above the root), the same file.
        home.approvals().approve(root).unwrap();
        let alias = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(root, alias.path().join("link")).unwrap();
        assert_eq!(
            home.trust(&alias.path().join("link")),
            WorkspaceTrust::Trusted
        );
    }

    #[test]
    fn a_folder_trustedfolders_does_not_list_is_untrusted_even_approved() {
        let ws = workspace(LOOSER);
        let root = ws.path();
        let home = Home::listing(&[]);
        home.approvals().approve(root).unwrap();
        assert_eq!(home.trust(root), WorkspaceTrust::NotListed);
        assert!(!home.load(root).workspace_trusted());
        // A folder listed with no settings file has nothing to approve.
        let bare = tempfile::tempdir().unwrap();
        let home = Home::listing(&[bare.path()]);
        assert_eq!(home.trust(bare.path()), WorkspaceTrust::Trusted);
        let refused = home.approvals().approve(bare.path()).unwrap_err();
        assert!(refused.to_string().contains("does not exist"), "{refused}");
    }

    #[test]
    fn a_symlinked_settings_file_is_never_trusted_but_still_read() {
        let ws = tempfile::tempdir().unwrap();
        let root = ws.path();
        std::fs::create_dir(root.join(".gantry")).unwrap();
        std::fs::write(root.join("real.json"), LOOSER).unwrap();
        let home = Home::listing(&[root]);
        // Approved as a regular file first, with the very same content.
        std::fs::write(root.join(WORKSPACE_FILE), LOOSER).unwrap();
        home.approvals().approve(root).unwrap();
        assert_eq!(home.trust(root), WorkspaceTrust::Trusted);

        std::fs::remove_file(root.join(WORKSPACE_FILE)).unwrap();
        std::os::unix::fs::symlink("../real.json", root.join(WORKSPACE_FILE)).unwrap();
        withheld(&home.trust(root), "is a symlink");
        let refused = home.approvals().approve(root).unwrap_err();
        assert!(refused.to_string().contains("never trusted"), "{refused}");
        let settings = home.load(root);
        assert_eq!(
            settings.workspace_section::<Value>("sandbox").unwrap(),
            Some(serde_json::json!({"mode": "off"})),
            "read for the keys anyone may set"
        );
        assert!(!settings.workspace_trusted());

        // A link out of the workspace, or to nowhere: not read, not trusted.
        let outside = workspace(LOOSER);
        std::fs::remove_file(root.join(WORKSPACE_FILE)).unwrap();
        std::os::unix::fs::symlink(
            outside.path().join(WORKSPACE_FILE),
            root.join(WORKSPACE_FILE),
        )
        .unwrap();
        withheld(&home.trust(root), "is a symlink");
        assert_eq!(
            home.load(root)
                .workspace_section::<Value>("sandbox")
                .unwrap(),
            None
        );
        std::fs::remove_file(root.join(WORKSPACE_FILE)).unwrap();
        std::os::unix::fs::symlink("missing.json", root.join(WORKSPACE_FILE)).unwrap();
        withheld(&home.trust(root), "is a symlink");
    }

    #[test]
    fn a_symlinked_gantry_folder_is_never_trusted() {
        let ws = workspace(LOOSER);
        let root = ws.path();
        let home = Home::listing(&[root]);
        home.approvals().approve(root).unwrap();
        std::fs::rename(root.join(".gantry"), root.join("elsewhere")).unwrap();
        std::os::unix::fs::symlink("elsewhere", root.join(".gantry")).unwrap();
        withheld(&home.trust(root), "is a symlink, or is reached through one");
        assert!(home.approvals().approve(root).is_err());
        // An absolute link, and one to a folder with no settings file.
        std::fs::remove_file(root.join(".gantry")).unwrap();
        std::os::unix::fs::symlink(root.join("elsewhere"), root.join(".gantry")).unwrap();
        withheld(&home.trust(root), "is a symlink");
        std::fs::remove_file(root.join(".gantry")).unwrap();
        std::fs::create_dir(root.join("empty")).unwrap();
        std::os::unix::fs::symlink("empty", root.join(".gantry")).unwrap();
        withheld(&home.trust(root), "is a symlink");
    }

    #[test]
    fn a_hard_link_is_trusted_only_while_its_content_is_approved() {
        // The witness's escape: the settings file swapped for a link to an
        // identical copy elsewhere, the copy changed in a later run.
        let ws = workspace(LOOSER);
        let root = ws.path();
        let home = Home::listing(&[root]);
        home.approvals().approve(root).unwrap();
        let copy = ws.path().join("copy.json");
        std::fs::write(&copy, LOOSER).unwrap();
        std::fs::remove_file(root.join(WORKSPACE_FILE)).unwrap();
        std::fs::hard_link(&copy, root.join(WORKSPACE_FILE)).unwrap();
        assert_eq!(home.trust(root), WorkspaceTrust::Trusted, "the same bytes");
        std::fs::write(&copy, r#"{"sandbox": {"mode": "off"}, "mcpServers": {}}"#).unwrap();
        withheld(&home.trust(root), "not what you approved");
    }

    #[test]
    fn a_directory_or_fifo_at_the_settings_path_is_never_trusted_and_never_blocks() {
        let ws = tempfile::tempdir().unwrap();
        let root = ws.path().to_path_buf();
        let home = Home::listing(&[&root]);
        std::fs::create_dir_all(root.join(WORKSPACE_FILE)).unwrap();
        withheld(&home.trust(&root), "is a directory, not a regular file");

        std::fs::remove_dir(root.join(WORKSPACE_FILE)).unwrap();
        let fifo = std::ffi::CString::new(root.join(WORKSPACE_FILE).as_os_str().as_encoded_bytes())
            .unwrap();
        // SAFETY: mkfifo(3) with a NUL-terminated path that lives to the call's end.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        let (tx, rx) = std::sync::mpsc::channel();
        let user_file = home.user_file();
        let reader = root.clone();
        std::thread::spawn(move || {
            let settings = Settings::load_from(&user_file, &reader).unwrap();
            let _ = tx.send(settings.workspace_trust().clone());
        });
        let trust = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("loading the settings blocked on a FIFO");
        withheld(&trust, "a FIFO (named pipe), not a regular file");
        assert!(home.approvals().approve(&root).is_err());

        std::fs::remove_file(root.join(WORKSPACE_FILE)).unwrap();
        let _socket = std::os::unix::net::UnixListener::bind(root.join(WORKSPACE_FILE)).unwrap();
        withheld(&home.trust(&root), "a socket, not a regular file");
    }

    #[test]
    fn an_oversized_file_is_not_read() {
        let ws = workspace(LOOSER);
        let root = ws.path();
        let home = Home::listing(&[root]);
        home.approvals().approve(root).unwrap();
        // Sparse: a cloned repository's file of any size costs it nothing.
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(root.join(WORKSPACE_FILE))
            .unwrap();
        file.set_len(MAX_BYTES + 1).unwrap();
        withheld(&home.trust(root), "is larger than 1024 KiB");
    }

    #[test]
    fn unreadable_approvals_trust_nothing() {
        let ws = workspace(LOOSER);
        let root = ws.path();
        let home = Home::listing(&[root]);
        home.approvals().approve(root).unwrap();
        assert_eq!(home.trust(root), WorkspaceTrust::Trusted);

        // The record garbled, then the folder not a folder (the tests run
        // as root, whom a mode would not stop).
        let dir = home.dir.path().join(APPROVALS);
        let record = std::fs::read_dir(&dir)
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        std::fs::write(&record, "not json").unwrap();
        withheld(&home.trust(root), "cannot be read");
        std::fs::remove_dir_all(&dir).unwrap();
        std::fs::write(&dir, "").unwrap();
        withheld(&home.trust(root), "cannot be read");
        let refused = home.approvals().approve(root).unwrap_err();
        assert!(refused.to_string().contains("cannot record"), "{refused}");
    }

    #[test]
    fn approvals_a_command_could_write_are_refused() {
        let ws = workspace(LOOSER);
        let root = ws.path();
        // The user's home inside the workspace (a workspace at ~).
        std::fs::write(
            root.join("settings.json"),
            serde_json::json!({"trustedFolders": [root]}).to_string(),
        )
        .unwrap();
        let inside = Approvals::beside(&root.join("settings.json"));
        assert!(
            inside
                .approve(root)
                .unwrap_err()
                .to_string()
                .contains("inside the workspace")
        );
        withheld(
            &Settings::load_from(&root.join("settings.json"), root)
                .unwrap()
                .workspace_trust()
                .clone(),
            "inside the workspace",
        );
        // No home at all: a relative folder would be the workspace's own.
        let relative = Approvals::beside(Path::new("settings.json"));
        assert!(
            relative
                .approve(root)
                .unwrap_err()
                .to_string()
                .contains("not an absolute path")
        );
    }

    #[test]
    fn a_nested_settings_file_is_trusted_only_by_its_own_approval() {
        let ws = workspace(LOOSER);
        let root = ws.path();
        let sub = root.join("sub");
        std::fs::create_dir_all(sub.join(".gantry")).unwrap();
        std::fs::write(sub.join(WORKSPACE_FILE), LOOSER).unwrap();
        let home = Home::listing(&[root]);
        home.approvals().approve(root).unwrap();
        assert_eq!(home.trust(root), WorkspaceTrust::Trusted);
        withheld(&home.trust(&sub), "never approved");
        home.approvals()
            .approve(&root_named(&sub.join(WORKSPACE_FILE)))
            .unwrap();
        assert_eq!(home.trust(&sub), WorkspaceTrust::Trusted);
        std::fs::write(sub.join(WORKSPACE_FILE), "{}").unwrap();
        withheld(&home.trust(&sub), "not what you approved");
        assert_eq!(
            home.trust(root),
            WorkspaceTrust::Trusted,
            "each file by its own"
        );
    }

    #[test]
    fn a_trust_argument_names_its_workspace() {
        for (given, root) in [
            ("/w/sub/.gantry/settings.json", "/w/sub"),
            ("/w/sub/.gantry", "/w/sub"),
            ("/w/sub", "/w/sub"),
            (".gantry/settings.json", "."),
            ("/w/other.json", "/w/other.json"),
        ] {
            assert_eq!(root_named(Path::new(given)), Path::new(root), "{given}");
        }
    }
}
