//! The one settings loader (SPEC §3).
//!
//! User level `~/.gantry/settings.json`, workspace level
//! `.gantry/settings.json`; objects are merged key by key with the workspace
//! winning, so a workspace can change one field of a section without
//! restating it. Each tool family reads its own section with
//! [`Settings::section`].
//!
//! A workspace's file comes with the checkout, so it is not the user's
//! word: a key that loosens confinement is honoured only from the user's
//! file, or from a workspace the user's `trustedFolders` lists. For such
//! keys a family reads each level apart ([`Settings::user_section`],
//! [`Settings::workspace_section`]) and asks
//! [`Settings::workspace_trusted`]; `trustedFolders` itself is read from
//! the user's file only. Trust is by content too: the workspace's file
//! counts only as the user approved it with `gantry trust`
//! ([`crate::trust`]).

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::trust::{Approvals, WorkspaceFile, WorkspaceTrust};

/// Where Gantry keeps per-user files: `$GANTRY_HOME`, else `~/.gantry`.
pub fn gantry_home() -> PathBuf {
    std::env::var_os("GANTRY_HOME")
        .map(PathBuf::from)
        .or_else(|| dirs::home_dir().map(|home| home.join(".gantry")))
        .unwrap_or_else(|| PathBuf::from(".gantry"))
}

/// Writes `contents` to the file `name` of [`gantry_home`] (what the user
/// answered "allow always" to), whole or not at all; returns its path.
/// The path is built here: no caller can aim it elsewhere.
pub fn write_home_file(name: &str, contents: &[u8]) -> std::io::Result<PathBuf> {
    let path = gantry_home().join(crate::state::plain_name(name)?);
    crate::state::write_whole(&path, contents)?;
    Ok(path)
}

/// Where Gantry keeps state that is not the user's (journals, caches):
/// `$GANTRY_STATE_DIR`, else the platform state or cache directory. Never
/// inside a workspace.
pub fn state_dir() -> PathBuf {
    std::env::var_os("GANTRY_STATE_DIR")
        .map(PathBuf::from)
        .or_else(|| dirs::state_dir().map(|dir| dir.join("gantry")))
        .or_else(|| dirs::cache_dir().map(|dir| dir.join("gantry")))
        .unwrap_or_else(|| std::env::temp_dir().join("gantry-state"))
}

/// A settings file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// Not valid JSON.
    #[error("{file}:{line}:{column}: invalid settings JSON: {message}")]
    Syntax {
        /// The file.
        file: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What the parser said.
        message: String,
    },
    /// Valid JSON but not an object at the top.
    #[error("{file}: settings must be a JSON object at the top level")]
    NotAnObject {
        /// The file.
        file: String,
    },
    /// Could not be read.
    #[error("{file}: cannot read settings: {message}")]
    Io {
        /// The file.
        file: String,
        /// The OS error.
        message: String,
    },
    /// A section has the wrong shape.
    #[error("settings `{section}` ({files}): {message}")]
    Section {
        /// The top-level key.
        section: String,
        /// Files that contributed to it.
        files: String,
        /// What serde said.
        message: String,
    },
}

/// The user-level key that lists the folders whose workspace settings may
/// loosen confinement.
pub const TRUSTED_FOLDERS: &str = "trustedFolders";

/// Which file a setting came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// The user's own file (`~/.gantry/settings.json`), or settings a
    /// library caller gave.
    User,
    /// The workspace's `.gantry/settings.json`, which comes with the
    /// checkout.
    Workspace,
}

/// The keys one level set, before merging.
#[derive(Debug, Clone, Default)]
struct Layer {
    values: Map<String, Value>,
    files: Vec<PathBuf>,
}

/// The merged settings of a run.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    merged: Map<String, Value>,
    files: Vec<PathBuf>,
    user: Layer,
    workspace: Layer,
    trust: WorkspaceTrust,
}

impl Settings {
    /// Loads the user file and the workspace file under `root`; missing
    /// files are simply absent.
    pub fn load(root: &Path) -> Result<Self, SettingsError> {
        Self::load_from(&gantry_home().join("settings.json"), root)
    }

    /// Loads `user_file` as the user level and `root`'s
    /// `.gantry/settings.json` as the workspace level, and decides whether
    /// `root` is trusted (a folder in the user level's `trustedFolders`, or
    /// beneath one, whose settings file is as approved in the approvals
    /// beside `user_file`).
    pub fn load_from(user_file: &Path, root: &Path) -> Result<Self, SettingsError> {
        Self::load_levels(&[user_file.to_path_buf()], root)
    }

    /// Loads the user file, then `extra` (files the user named, such as
    /// `gantry --settings ~/.gemini/settings.json`, read as they are), both
    /// at the user level, then the workspace file under `root`.
    pub fn load_with(extra: &[PathBuf], root: &Path) -> Result<Self, SettingsError> {
        let mut user_files = vec![gantry_home().join("settings.json")];
        user_files.extend_from_slice(extra);
        Self::load_levels(&user_files, root)
    }

    /// Loads `user_files` in order at the user level (the first is the
    /// user's own, beside the approvals), then reads the workspace level
    /// once and decides trust on the very bytes it parses.
    fn load_levels(user_files: &[PathBuf], root: &Path) -> Result<Self, SettingsError> {
        let mut settings = Settings::default();
        for file in user_files {
            settings.read(Level::User, file)?;
        }
        // Resolved once, so the listing, the file read and its approval
        // are all of one folder, however the root was named.
        let root = &root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        let listed = trusted(&settings.user.values, root);
        let file = WorkspaceFile::read(root)?;
        let approvals = match user_files.first() {
            Some(own) => Approvals::beside(own),
            None => Approvals::of_user(),
        };
        settings.trust = approvals.judge(root, &file, listed);
        if let Some(bytes) = &file.bytes {
            let object = parse(&file.path, bytes)?;
            settings.add_layer(Level::Workspace, &file.path, object);
        }
        Ok(settings)
    }

    /// Loads and merges `files` in order, later files winning key by key,
    /// all at the user level (library callers naming their own files).
    pub fn load_files(files: &[PathBuf]) -> Result<Self, SettingsError> {
        let mut settings = Settings::default();
        for file in files {
            settings.read(Level::User, file)?;
        }
        Ok(settings)
    }

    /// Settings from an in-memory value (library callers, tests), at the
    /// user level.
    pub fn from_value(value: Value) -> Result<Self, SettingsError> {
        match value {
            Value::Object(merged) => Ok(Settings {
                user: Layer {
                    values: merged.clone(),
                    files: Vec::new(),
                },
                merged,
                ..Settings::default()
            }),
            _ => Err(SettingsError::NotAnObject {
                file: "<value>".into(),
            }),
        }
    }

    /// Reads and merges one file at `level`; a missing file is absent.
    fn read(&mut self, level: Level, file: &Path) -> Result<(), SettingsError> {
        match std::fs::read(file) {
            Ok(bytes) => {
                let object = parse(file, &bytes)?;
                self.add_layer(level, file, object);
                Ok(())
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(SettingsError::Io {
                file: file.display().to_string(),
                message: e.to_string(),
            }),
        }
    }

    /// Merges the settings `object` of `file` at `level`.
    pub(crate) fn add_layer(&mut self, level: Level, file: &Path, object: Map<String, Value>) {
        let layer = match level {
            Level::User => &mut self.user,
            Level::Workspace => &mut self.workspace,
        };
        merge(&mut layer.values, object.clone());
        layer.files.push(file.to_path_buf());
        let mut object = object;
        if level == Level::Workspace {
            // A workspace cannot trust itself, nor anything else.
            object.remove(TRUSTED_FOLDERS);
        }
        merge(&mut self.merged, object);
        self.files.push(file.to_path_buf());
    }

    /// Reads one family's section; absent means the type's default.
    pub fn section<T: DeserializeOwned + Default>(&self, key: &str) -> Result<T, SettingsError> {
        match self.merged.get(key) {
            None => Ok(T::default()),
            Some(value) => {
                serde_json::from_value(value.clone()).map_err(|e| SettingsError::Section {
                    section: key.to_string(),
                    files: self.describe_files(),
                    message: e.to_string(),
                })
            }
        }
    }

    /// One level's own value of `key`, before merging; `None` when that
    /// level does not set it. For keys whose workspace value is honoured
    /// only where it tightens what the user level says.
    pub fn section_at<T: DeserializeOwned>(
        &self,
        level: Level,
        key: &str,
    ) -> Result<Option<T>, SettingsError> {
        let layer = match level {
            Level::User => &self.user,
            Level::Workspace => &self.workspace,
        };
        match layer.values.get(key) {
            None => Ok(None),
            Some(value) => serde_json::from_value(value.clone())
                .map(Some)
                .map_err(|e| SettingsError::Section {
                    section: key.to_string(),
                    files: describe(&layer.files),
                    message: e.to_string(),
                }),
        }
    }

    /// The user level's own value of `key` (see [`Settings::section_at`]).
    pub fn user_section<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>, SettingsError> {
        self.section_at(Level::User, key)
    }

    /// The workspace level's own value of `key` (see
    /// [`Settings::section_at`]).
    pub fn workspace_section<T: DeserializeOwned>(
        &self,
        key: &str,
    ) -> Result<Option<T>, SettingsError> {
        self.section_at(Level::Workspace, key)
    }

    /// Whether the user's `trustedFolders` lists the workspace (or a
    /// folder above it) and its settings file, if any, is as the user
    /// approved it, so its settings may loosen confinement too.
    pub fn workspace_trusted(&self) -> bool {
        self.trust == WorkspaceTrust::Trusted
    }

    /// How far the workspace's settings are trusted, and why not: for
    /// `gantry status` and the warning every run gives.
    pub fn workspace_trust(&self) -> &WorkspaceTrust {
        &self.trust
    }

    /// The warning for keys of the workspace's file that were ignored
    /// because only trust may set them (`None` when none were): `these`
    /// says what they would have done ("these start processes").
    pub fn ignored_untrusted(&self, ignored: &[impl AsRef<str>], these: &str) -> Option<String> {
        if ignored.is_empty() {
            return None;
        }
        let keys: Vec<String> = ignored
            .iter()
            .map(|key| format!("`{}`", key.as_ref()))
            .collect();
        Some(format!(
            "ignored from {}: {}; {these}, so only ~/.gantry/settings.json or a folder its \
             `trustedFolders` lists, with the file approved by `gantry trust`, may set them",
            self.workspace_file_shown(),
            keys.join(", ")
        ))
    }

    /// The merged value of `key` with what only trust may set left to the
    /// user: in an untrusted workspace, every value of the workspace's own
    /// `key` at a path `gated` accepts (the path within the section; `[]`
    /// is the whole section) is dropped, the user's value standing. Also
    /// returns the dropped paths, dotted (`lsp.servers.x.command`), for a
    /// warning. For keys that start processes or widen what Gantry
    /// reaches, inside a section whose other keys anyone may set.
    pub fn section_honoured<T: DeserializeOwned + Default>(
        &self,
        key: &str,
        gated: impl Fn(&[&str]) -> bool,
    ) -> Result<(T, Vec<String>), SettingsError> {
        let from_workspace = self.workspace.values.get(key);
        let Some(from_workspace) = from_workspace.filter(|_| !self.workspace_trusted()) else {
            return Ok((self.section(key)?, Vec::new()));
        };
        let mut ignored = Vec::new();
        let kept = without_gated(from_workspace, &mut vec![key], &gated, &mut ignored);
        let mut merged = Map::new();
        if let Some(user) = self.user.values.get(key) {
            merged.insert(key.to_string(), user.clone());
        }
        if let Some(kept) = kept {
            merge(&mut merged, Map::from_iter([(key.to_string(), kept)]));
        }
        let value = match merged.remove(key) {
            None => T::default(),
            Some(value) => serde_json::from_value(value).map_err(|e| SettingsError::Section {
                section: key.to_string(),
                files: self.describe_files(),
                message: e.to_string(),
            })?,
        };
        Ok((value, ignored))
    }

    /// The files of one level, in merge order (for messages that say where
    /// a setting was read).
    pub fn files_at(&self, level: Level) -> &[PathBuf] {
        match level {
            Level::User => &self.user.files,
            Level::Workspace => &self.workspace.files,
        }
    }

    /// How a warning names the workspace's settings file ("ignored from
    /// /w/.gantry/settings.json: ...").
    pub fn workspace_file_shown(&self) -> String {
        self.files_at(Level::Workspace)
            .first()
            .map(|file| file.display().to_string())
            .unwrap_or_else(|| "the workspace settings".into())
    }

    /// The raw value of a top-level key.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.merged.get(key)
    }

    /// Top-level keys that no wired family declared, for a warning.
    pub fn unknown_keys<'a>(&'a self, known: &[&str]) -> Vec<&'a str> {
        self.merged
            .keys()
            .map(String::as_str)
            .filter(|key| !known.contains(key))
            .collect()
    }

    /// The files that were read, in merge order.
    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }

    fn describe_files(&self) -> String {
        describe(&self.files)
    }
}

/// The settings object in `bytes`, read from `file`: an error names the
/// file, line and column.
pub(crate) fn parse(file: &Path, bytes: &[u8]) -> Result<Map<String, Value>, SettingsError> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| SettingsError::Syntax {
        file: file.display().to_string(),
        line: e.line(),
        column: e.column(),
        message: e
            .to_string()
            .split(" at line")
            .next()
            .unwrap_or("")
            .to_string(),
    })?;
    match value {
        Value::Object(object) => Ok(object),
        _ => Err(SettingsError::NotAnObject {
            file: file.display().to_string(),
        }),
    }
}

/// `files` for a message.
fn describe(files: &[PathBuf]) -> String {
    if files.is_empty() {
        "no file".into()
    } else {
        files
            .iter()
            .map(|f| f.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Whether `root` is, or is beneath, a folder the user level's
/// `trustedFolders` lists (`~/` expanded; paths compared once resolved, so
/// a link cannot stand in for a trusted folder). Anything malformed trusts
/// nothing.
fn trusted(user: &Map<String, Value>, root: &Path) -> bool {
    let Some(Value::Array(folders)) = user.get(TRUSTED_FOLDERS) else {
        return false;
    };
    let Ok(root) = root.canonicalize() else {
        return false;
    };
    folders
        .iter()
        .filter_map(Value::as_str)
        .filter_map(|folder| match folder.strip_prefix("~/") {
            Some(rest) => dirs::home_dir().map(|home| home.join(rest)),
            None => Some(PathBuf::from(folder)),
        })
        .filter(|folder| folder.is_absolute())
        .filter_map(|folder| folder.canonicalize().ok())
        .any(|folder| root.starts_with(folder))
}

/// `value` (found at `path`, the section's key first) without what
/// `gated` accepts, whose dotted paths go to `ignored`; `None` when the
/// whole value is gated.
fn without_gated<'a>(
    value: &'a Value,
    path: &mut Vec<&'a str>,
    gated: &impl Fn(&[&str]) -> bool,
    ignored: &mut Vec<String>,
) -> Option<Value> {
    if gated(&path[1..]) {
        ignored.push(path.join("."));
        return None;
    }
    let Value::Object(object) = value else {
        return Some(value.clone());
    };
    let mut kept = Map::new();
    for (key, inner) in object {
        path.push(key);
        if let Some(inner) = without_gated(inner, path, gated, ignored) {
            kept.insert(key.clone(), inner);
        }
        path.pop();
    }
    Some(Value::Object(kept))
}

/// Deep merge: objects merge key by key, anything else is replaced.
fn merge(base: &mut Map<String, Value>, over: Map<String, Value>) {
    for (key, value) in over {
        match (base.get_mut(&key), value) {
            (Some(Value::Object(base_inner)), Value::Object(over_inner)) => {
                merge(base_inner, over_inner)
            }
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

#[cfg(test)]
// Tests build their fixtures directly.
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Default, Deserialize, PartialEq)]
    #[serde(rename_all = "camelCase", default)]
    struct Web {
        allow_private: bool,
        timeout_seconds: u64,
        provider: Option<String>,
    }

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    /// A home folder for the user's file, and a workspace whose own
    /// settings file holds `workspace`.
    fn home_and_workspace(workspace: &str) -> (tempfile::TempDir, tempfile::TempDir) {
        let home = tempfile::tempdir().unwrap();
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join(".gantry")).unwrap();
        write(&root.path().join(".gantry"), "settings.json", workspace);
        (home, root)
    }

    #[test]
    fn workspace_wins_key_by_key_and_sections_deserialise() {
        let dir = tempfile::tempdir().unwrap();
        let user = write(
            dir.path(),
            "user.json",
            r#"{"web": {"allowPrivate": true, "timeoutSeconds": 10}, "theme": "x"}"#,
        );
        let ws = write(dir.path(), "ws.json", r#"{"web": {"timeoutSeconds": 30}}"#);
        let settings = Settings::load_files(&[user, ws, dir.path().join("missing.json")]).unwrap();
        let web: Web = settings.section("web").unwrap();
        assert_eq!(
            web,
            Web {
                allow_private: true,
                timeout_seconds: 30,
                provider: None
            }
        );
        assert_eq!(settings.files().len(), 2);
        assert_eq!(settings.unknown_keys(&["web"]), vec!["theme"]);
        let absent: Web = settings.section("nothing").unwrap();
        assert_eq!(absent, Web::default());
    }

    #[test]
    fn malformed_file_names_file_line_and_column() {
        let dir = tempfile::tempdir().unwrap();
        let bad = write(
            dir.path(),
            "bad.json",
            "{\n  \"web\": {\n    \"a\": 1,\n  }\n}",
        );
        let err = Settings::load_files(std::slice::from_ref(&bad))
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with(&format!("{}:4:3: invalid settings JSON", bad.display())),
            "{err}"
        );
        let arr = write(dir.path(), "arr.json", "[1]");
        let err = Settings::load_files(&[arr]).unwrap_err().to_string();
        assert!(err.contains("must be a JSON object"), "{err}");
    }

    #[test]
    fn section_of_wrong_shape_is_a_clear_error() {
        let settings =
            Settings::from_value(serde_json::json!({"web": {"timeoutSeconds": "soon"}})).unwrap();
        let err = settings.section::<Web>("web").unwrap_err().to_string();
        assert!(err.starts_with("settings `web`"), "{err}");
        assert!(err.contains("invalid type"), "{err}");
    }

    #[test]
    fn levels_are_read_apart_and_only_the_user_trusts_a_folder() {
        let (home, root) = home_and_workspace("{}");
        write(
            &root.path().join(".gantry"),
            "settings.json",
            &format!(
                r#"{{"web": {{"timeoutSeconds": 30}}, "trustedFolders": [{:?}]}}"#,
                root.path()
            ),
        );
        let user = write(
            home.path(),
            "settings.json",
            r#"{"web": {"allowPrivate": true}}"#,
        );
        let settings = Settings::load_from(&user, root.path()).unwrap();
        assert!(
            !settings.workspace_trusted(),
            "a workspace cannot trust itself"
        );
        assert_eq!(settings.get(TRUSTED_FOLDERS), None);
        let own: Option<Value> = settings.user_section("web").unwrap();
        assert_eq!(own, Some(serde_json::json!({"allowPrivate": true})));
        let theirs: Option<Value> = settings.workspace_section("web").unwrap();
        assert_eq!(theirs, Some(serde_json::json!({"timeoutSeconds": 30})));
        assert_eq!(settings.user_section::<Value>("lsp").unwrap(), None);
        assert_eq!(settings.files_at(Level::User), std::slice::from_ref(&user));

        // The user's list trusts the folder and what is beneath it, the
        // file as the user approved it.
        crate::trust::Approvals::beside(&user)
            .approve(root.path())
            .unwrap();
        let parent = root.path().parent().unwrap();
        write(
            home.path(),
            "settings.json",
            &format!(r#"{{"trustedFolders": [{parent:?}]}}"#),
        );
        assert!(
            Settings::load_from(&user, root.path())
                .unwrap()
                .workspace_trusted()
        );
        write(
            home.path(),
            "settings.json",
            r#"{"trustedFolders": ["relative"]}"#,
        );
        assert!(
            !Settings::load_from(&user, root.path())
                .unwrap()
                .workspace_trusted()
        );
    }

    #[test]
    fn an_untrusted_workspace_sets_only_ungated_paths_of_a_section() {
        let (home, root) = home_and_workspace(
            r#"{"lsp": {"idleSeconds": 5, "servers": {"x": {"command": ["evil"], "rootMarkers": ["m"]}}},
                "extraRoots": ["/"]}"#,
        );
        let user_file = |trusted: bool| {
            let trust = if trusted {
                format!(r#", "trustedFolders": [{:?}]"#, root.path())
            } else {
                String::new()
            };
            write(
                home.path(),
                "settings.json",
                &format!(r#"{{"lsp": {{"servers": {{"x": {{"command": ["mine"]}}}}}}{trust}}}"#),
            )
        };
        let lsp_gate = |path: &[&str]| matches!(path, ["servers", _, "command"]);

        let settings = Settings::load_from(&user_file(false), root.path()).unwrap();
        let (lsp, ignored): (Value, _) = settings.section_honoured("lsp", lsp_gate).unwrap();
        assert_eq!(
            lsp,
            serde_json::json!({"idleSeconds": 5, "servers": {"x": {"command": ["mine"], "rootMarkers": ["m"]}}})
        );
        assert_eq!(ignored, ["lsp.servers.x.command"]);
        let (roots, ignored): (Vec<String>, _) =
            settings.section_honoured("extraRoots", |_| true).unwrap();
        assert!(roots.is_empty());
        assert_eq!(ignored, ["extraRoots"]);

        let user = user_file(true);
        crate::trust::Approvals::beside(&user)
            .approve(root.path())
            .unwrap();
        let settings = Settings::load_from(&user, root.path()).unwrap();
        let (lsp, ignored): (Value, _) = settings.section_honoured("lsp", lsp_gate).unwrap();
        assert_eq!(lsp["servers"]["x"]["command"], serde_json::json!(["evil"]));
        assert!(ignored.is_empty());
        let (roots, _): (Vec<String>, _) =
            settings.section_honoured("extraRoots", |_| true).unwrap();
        assert_eq!(roots, ["/"]);
    }
}
