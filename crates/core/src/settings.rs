//! The one settings loader (SPEC §3).
//!
//! User level `~/.gantry/settings.json`, workspace level
//! `.gantry/settings.json`; objects are merged key by key with the workspace
//! winning, so a workspace can change one field of a section without
//! restating it. Each tool family reads its own section with
//! [`Settings::section`].

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// Where Gantry keeps per-user files: `$GANTRY_HOME`, else `~/.gantry`.
pub fn gantry_home() -> PathBuf {
    std::env::var_os("GANTRY_HOME")
        .map(PathBuf::from)
        .or_else(|| dirs::home_dir().map(|home| home.join(".gantry")))
        .unwrap_or_else(|| PathBuf::from(".gantry"))
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

/// The merged settings of a run.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    merged: Map<String, Value>,
    files: Vec<PathBuf>,
}

impl Settings {
    /// Loads the user file and the workspace file under `root`; missing
    /// files are simply absent.
    pub fn load(root: &Path) -> Result<Self, SettingsError> {
        Self::load_files(&[
            gantry_home().join("settings.json"),
            root.join(".gantry").join("settings.json"),
        ])
    }

    /// Loads and merges `files` in order, later files winning key by key.
    pub fn load_files(files: &[PathBuf]) -> Result<Self, SettingsError> {
        let mut settings = Settings::default();
        for file in files {
            let text = match std::fs::read_to_string(file) {
                Ok(text) => text,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => {
                    return Err(SettingsError::Io {
                        file: file.display().to_string(),
                        message: e.to_string(),
                    });
                }
            };
            settings.merge_text(file, &text)?;
        }
        Ok(settings)
    }

    /// Settings from an in-memory value (library callers, tests).
    pub fn from_value(value: Value) -> Result<Self, SettingsError> {
        match value {
            Value::Object(merged) => Ok(Settings {
                merged,
                files: Vec::new(),
            }),
            _ => Err(SettingsError::NotAnObject {
                file: "<value>".into(),
            }),
        }
    }

    fn merge_text(&mut self, file: &Path, text: &str) -> Result<(), SettingsError> {
        let value: Value = serde_json::from_str(text).map_err(|e| SettingsError::Syntax {
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
        let Value::Object(object) = value else {
            return Err(SettingsError::NotAnObject {
                file: file.display().to_string(),
            });
        };
        merge(&mut self.merged, object);
        self.files.push(file.to_path_buf());
        Ok(())
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
        if self.files.is_empty() {
            "no file".into()
        } else {
            self.files
                .iter()
                .map(|f| f.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        }
    }
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
}
