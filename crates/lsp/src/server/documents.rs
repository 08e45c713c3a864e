//! The documents a server has open, kept in step with the disk: opened
//! for the run's work or borrowed for a write's checks, changed by Gantry's
//! writes, and refreshed from what the file watcher saw change behind
//! Gantry's back before each request.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use gantry_core::lock;
use lsp_types::notification::{
    DidChangeTextDocument, DidChangeWatchedFiles, DidCloseTextDocument, DidOpenTextDocument,
    DidSaveTextDocument,
};
use lsp_types::{
    DidChangeTextDocumentParams, DidChangeWatchedFilesParams, DidCloseTextDocumentParams,
    DidOpenTextDocumentParams, DidSaveTextDocumentParams, FileChangeType, FileEvent,
    TextDocumentContentChangeEvent, TextDocumentIdentifier, TextDocumentItem,
    VersionedTextDocumentIdentifier,
};

use super::Server;
use crate::convert::path_to_uri;
use crate::paths::language_of;
use crate::watch::WatchBarrier;

/// An open document as the server last saw it.
pub(super) struct OpenDoc {
    version: i32,
    text: Arc<str>,
    stamp: Option<Stamp>,
    /// Whether a Gantry write has gone to the server for it: its
    /// diagnostics may then no longer be a baseline from before the write.
    written: bool,
    /// Set when the file is open only because a write could break it (it
    /// uses what the write changed): the number of the last write that
    /// needed it. Such a file is closed again once the run no longer needs
    /// it; reading or writing it makes it the run's own.
    borrowed: Option<u64>,
}

/// What a file looked like on disk when last synced: enough to notice a
/// change made behind Gantry's back with one `stat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    modified: SystemTime,
    len: u64,
}

/// Reads a file on the blocking pool, never waiting on a FIFO or device
/// planted where a source file was (the caller holds the documents' lock).
async fn read_off_runtime(path: &Path) -> std::io::Result<Vec<u8>> {
    let path = path.to_path_buf();
    tokio::task::spawn_blocking(move || gantry_core::read_regular(&path))
        .await
        .map_err(std::io::Error::other)?
}

fn stamp(path: &Path) -> Option<Stamp> {
    let meta = std::fs::metadata(path).ok()?;
    Some(Stamp {
        modified: meta.modified().ok()?,
        len: meta.len(),
    })
}

impl Server {
    /// How many documents are open.
    pub async fn open_count(&self) -> usize {
        self.docs.lock().await.len()
    }

    /// The version of an open document the server has.
    pub async fn version(&self, path: &Path) -> Option<i32> {
        self.docs.lock().await.get(path).map(|doc| doc.version)
    }

    /// Paths of the open documents.
    pub async fn open_paths(&self) -> Vec<PathBuf> {
        self.docs.lock().await.keys().cloned().collect()
    }

    /// Follows the file watcher: each refresh first waits until it has
    /// handed on the changes made before.
    pub(crate) fn follow_watcher(&self, barrier: Arc<WatchBarrier>) {
        *lock(&self.watcher) = Some(barrier);
    }

    /// Records a change on disk seen by the file watcher; sent before the
    /// next request.
    pub fn disk_changed(&self, path: PathBuf, kind: FileChangeType) {
        lock(&self.disk_changes).insert(path, kind);
    }

    /// Brings the server's view up to date before a request: changes the
    /// watcher saw go out as `didChangeWatchedFiles`, and every open
    /// document whose file changed on disk (by a shell, git, an editor) is
    /// re-sent, so no answer comes from a stale view.
    pub async fn refresh(&self) {
        *lock(&self.last_used) = Instant::now();
        if self.observed.warming() {
            let deadline = tokio::time::Instant::now() + self.request_timeout;
            let mut events = self.observed.events();
            while self.observed.warming() {
                if tokio::time::timeout_at(deadline, events.changed())
                    .await
                    .map_or(true, |r| r.is_err())
                {
                    break;
                }
            }
        }
        let barrier = lock(&self.watcher).clone();
        if let Some(barrier) = barrier {
            barrier.cross().await;
        }
        let changes: Vec<_> = lock(&self.disk_changes).drain().collect();
        let mut docs = self.docs.lock().await;
        let mut events = Vec::new();
        for (path, kind) in changes {
            if docs.contains_key(&path) || !self.wants(&path) {
                continue;
            }
            events.push(FileEvent::new(path_to_uri(&path), kind));
        }
        if !events.is_empty() {
            self.client
                .notify::<DidChangeWatchedFiles>(&DidChangeWatchedFilesParams { changes: events });
        }
        let paths: Vec<PathBuf> = docs.keys().cloned().collect();
        for path in paths {
            let now = stamp(&path);
            let doc = docs.get_mut(&path).expect("listed above");
            if now == doc.stamp {
                continue;
            }
            match read_off_runtime(&path).await {
                Ok(bytes) => {
                    let text = String::from_utf8_lossy(&bytes);
                    if *text != *doc.text {
                        self.change_doc(&path, doc, text.into_owned());
                    }
                    doc.stamp = now;
                }
                Err(_) => {
                    self.close_doc(&path);
                    docs.remove(&path);
                }
            }
        }
    }

    /// Opens `path` if needed (after [`Server::refresh`] made it fresh)
    /// and returns the text the server now has.
    pub async fn open(&self, path: &Path) -> std::io::Result<Arc<str>> {
        let mut docs = self.docs.lock().await;
        if let Some(doc) = docs.get_mut(path) {
            doc.borrowed = None;
            return Ok(doc.text.clone());
        }
        self.open_locked(&mut docs, path, None).await
    }

    /// Opens `path` because write number `write` could break it; a file
    /// the run has open stays the run's. Returns whether it was opened now
    /// (its diagnostics are then still to come).
    pub async fn open_borrowed(&self, path: &Path, write: u64) -> std::io::Result<bool> {
        let mut docs = self.docs.lock().await;
        if let Some(doc) = docs.get_mut(path) {
            if let Some(last) = doc.borrowed.as_mut() {
                *last = write;
            }
            return Ok(false);
        }
        self.open_locked(&mut docs, path, Some(write)).await?;
        Ok(true)
    }

    /// Closes the files opened only for writes before number `write`;
    /// returns them.
    pub async fn close_borrowed_before(&self, write: u64) -> Vec<PathBuf> {
        let mut docs = self.docs.lock().await;
        let done: Vec<PathBuf> = docs
            .iter()
            .filter(|(_, doc)| doc.borrowed.is_some_and(|last| last < write))
            .map(|(path, _)| path.clone())
            .collect();
        for path in &done {
            docs.remove(path);
            self.close_doc(path);
        }
        done
    }

    /// Whether `path` is open only because a write could break it.
    pub async fn is_borrowed(&self, path: &Path) -> bool {
        self.docs
            .lock()
            .await
            .get(path)
            .is_some_and(|doc| doc.borrowed.is_some())
    }

    fn close_doc(&self, path: &Path) {
        self.client
            .notify::<DidCloseTextDocument>(&DidCloseTextDocumentParams {
                text_document: TextDocumentIdentifier::new(path_to_uri(path)),
            });
        self.observed.forget(path);
    }

    async fn open_locked(
        &self,
        docs: &mut HashMap<PathBuf, OpenDoc>,
        path: &Path,
        borrowed: Option<u64>,
    ) -> std::io::Result<Arc<str>> {
        let stamp_before = stamp(path);
        let bytes = read_off_runtime(path).await?;
        let text: Arc<str> = String::from_utf8_lossy(&bytes).into();
        self.client
            .notify::<DidOpenTextDocument>(&DidOpenTextDocumentParams {
                text_document: TextDocumentItem::new(
                    path_to_uri(path),
                    language_of(path).unwrap_or("plaintext").to_string(),
                    1,
                    text.to_string(),
                ),
            });
        docs.insert(
            path.to_path_buf(),
            OpenDoc {
                version: 1,
                text: text.clone(),
                stamp: stamp_before,
                written: false,
                borrowed,
            },
        );
        Ok(text)
    }

    /// Whether `path` is open and no Gantry write has been sent for it:
    /// what the server says about it is then a baseline from before any
    /// write of this run.
    pub async fn unwritten(&self, path: &Path) -> bool {
        self.docs
            .lock()
            .await
            .get(path)
            .is_some_and(|doc| !doc.written)
    }

    /// Tells the server about a write Gantry made: new content for an
    /// open document (`didChange` + `didSave`), `didOpen` for one it had
    /// not seen, `didClose` for a deleted one. Returns the version sent.
    pub async fn written(&self, path: &Path, content: Option<&[u8]>) -> Option<i32> {
        *lock(&self.last_used) = Instant::now();
        let mut docs = self.docs.lock().await;
        let uri = path_to_uri(path);
        let Some(content) = content else {
            if docs.remove(path).is_some() {
                self.close_doc(path);
            }
            self.client
                .notify::<DidChangeWatchedFiles>(&DidChangeWatchedFilesParams {
                    changes: vec![FileEvent::new(uri, FileChangeType::DELETED)],
                });
            return None;
        };
        let text = String::from_utf8_lossy(content).into_owned();
        lock(&self.disk_changes).remove(path);
        let version = match docs.get_mut(path) {
            Some(doc) => {
                if *doc.text != *text {
                    self.change_doc(path, doc, text);
                }
                doc.stamp = stamp(path);
                doc.written = true;
                doc.borrowed = None;
                doc.version
            }
            None => {
                let arc: Arc<str> = text.into();
                self.client
                    .notify::<DidOpenTextDocument>(&DidOpenTextDocumentParams {
                        text_document: TextDocumentItem::new(
                            uri.clone(),
                            language_of(path).unwrap_or("plaintext").to_string(),
                            1,
                            arc.to_string(),
                        ),
                    });
                docs.insert(
                    path.to_path_buf(),
                    OpenDoc {
                        version: 1,
                        text: arc,
                        stamp: stamp(path),
                        written: true,
                        borrowed: None,
                    },
                );
                1
            }
        };
        self.client
            .notify::<DidSaveTextDocument>(&DidSaveTextDocumentParams {
                text_document: TextDocumentIdentifier::new(uri),
                text: None,
            });
        Some(version)
    }

    fn change_doc(&self, path: &Path, doc: &mut OpenDoc, text: String) {
        doc.version += 1;
        self.client
            .notify::<DidChangeTextDocument>(&DidChangeTextDocumentParams {
                text_document: VersionedTextDocumentIdentifier::new(path_to_uri(path), doc.version),
                content_changes: vec![TextDocumentContentChangeEvent {
                    range: None,
                    range_length: None,
                    text: text.clone(),
                }],
            });
        doc.text = text.into();
    }

    /// Whether a file change matters to this server: a pattern it
    /// registered, or (when it registered none) a file of its languages.
    fn wants(&self, path: &Path) -> bool {
        let watchers = lock(&self.observed.watchers);
        if watchers.is_empty() {
            return language_of(path).is_some_and(|l| self.spec.languages.iter().any(|s| s == l));
        }
        watchers.iter().any(|w| w.is_match(path))
    }
}
