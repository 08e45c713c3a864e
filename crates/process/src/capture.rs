//! Bounded capture of what a child writes: the head and the tail are kept,
//! the middle is counted. A build log of a gigabyte or a backtrace of ten
//! thousand frames costs the same few KiB, and the start (a panic's
//! message) survives alongside the end (where an error usually lands).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::watch;

/// Bytes with the first `head` and the last `tail` of them kept.
#[derive(Debug, Clone)]
pub struct Capped {
    head_limit: usize,
    tail_limit: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    cut: u64,
    total: u64,
}

impl Capped {
    /// An empty buffer keeping at most `head` bytes of the start and `tail`
    /// bytes of the end.
    pub fn new(head: usize, tail: usize) -> Self {
        Capped {
            head_limit: head,
            tail_limit: tail,
            head: Vec::new(),
            tail: VecDeque::new(),
            cut: 0,
            total: 0,
        }
    }

    /// Appends a chunk, dropping from the middle once both ends are full.
    pub fn push(&mut self, mut chunk: &[u8]) {
        self.total += chunk.len() as u64;
        let room = self.head_limit.saturating_sub(self.head.len());
        let (to_head, rest) = chunk.split_at(room.min(chunk.len()));
        self.head.extend_from_slice(to_head);
        chunk = rest;
        self.tail.extend(chunk);
        let excess = self.tail.len().saturating_sub(self.tail_limit);
        if excess > 0 {
            self.tail.drain(..excess);
            self.cut += excess as u64;
        }
    }

    /// Bytes seen in all.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Bytes dropped between the head and the tail.
    pub fn cut(&self) -> u64 {
        self.cut
    }

    /// The kept start.
    pub fn head(&self) -> &[u8] {
        &self.head
    }

    /// The kept end (empty until the head is full).
    pub fn tail(&self) -> Vec<u8> {
        let (a, b) = self.tail.as_slices();
        [a, b].concat()
    }

    /// The kept bytes as text, with a line break where bytes were cut, so
    /// that a cut line does not run into the next one.
    pub fn text(&self) -> String {
        let mut bytes = self.head.clone();
        if self.cut > 0 {
            bytes.push(b'\n');
        }
        bytes.extend(self.tail.iter());
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// The kept text as a model is shown it: with a marker where the
    /// middle was cut, saying how much and what is shown.
    pub fn shown(&self) -> String {
        let mut out = String::from_utf8_lossy(&self.head).into_owned();
        if self.cut > 0 {
            out.push_str(&format!(
                "\n[... {} bytes of output cut; the first {} and last {} bytes are shown ...]\n",
                self.cut, self.head_limit, self.tail_limit
            ));
        }
        out.push_str(&String::from_utf8_lossy(&self.tail()));
        out
    }

    /// Takes what was captured so far, leaving an empty buffer with the same
    /// limits (a poll that reports only what is new).
    pub fn take(&mut self) -> Capped {
        std::mem::replace(self, Capped::new(self.head_limit, self.tail_limit))
    }
}

/// A stream being read into a [`Capped`] buffer by a task of its own,
/// shared by whoever reports it.
#[derive(Clone)]
pub struct Capture {
    inner: Arc<CaptureInner>,
}

struct CaptureInner {
    buffer: Mutex<Capped>,
    done: watch::Sender<bool>,
}

impl Capture {
    /// Starts reading `stream` until its end (every writer closed it) into
    /// a buffer keeping `head` and `tail` bytes. Needs a tokio runtime.
    pub fn start(
        stream: impl AsyncRead + Send + Unpin + 'static,
        head: usize,
        tail: usize,
    ) -> Self {
        let capture = Capture {
            inner: Arc::new(CaptureInner {
                buffer: Mutex::new(Capped::new(head, tail)),
                done: watch::channel(false).0,
            }),
        };
        tokio::spawn(capture.clone().pump(stream));
        capture
    }

    async fn pump(self, mut stream: impl AsyncRead + Unpin) {
        let mut chunk = vec![0u8; 16 * 1024];
        while let Ok(n @ 1..) = stream.read(&mut chunk).await {
            self.lock().push(&chunk[..n]);
        }
        self.inner.done.send_replace(true);
    }

    /// The buffer as captured so far.
    pub fn lock(&self) -> MutexGuard<'_, Capped> {
        self.inner
            .buffer
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Resolves when the stream has ended. A process that left the group
    /// can hold its end open past the group's death, so callers bound this.
    pub async fn finished(&self) {
        let mut done = self.inner.done.subscribe();
        let _ = done.wait_for(|done| *done).await;
    }

    /// What the stream says about a failure, in one line: see [`explain`].
    pub fn explain(&self) -> String {
        explain(&self.lock().text())
    }
}

/// The lines of a process's error output that say why it failed, joined by
/// ` | `: the (up to three) lines before a backtrace when there is one,
/// since a panic's message precedes its frames and the frames say nothing
/// to a person; otherwise the last three lines, where an error usually
/// ends up.
pub fn explain(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let quoted = |lines: &[&str]| {
        let kept: Vec<&str> = lines
            .iter()
            .map(|l| l.trim())
            .filter(|l| !l.is_empty())
            .collect();
        kept[kept.len().saturating_sub(3)..].join(" | ")
    };
    if let Some(start) = lines.iter().position(|l| starts_backtrace(l)) {
        let before = quoted(&lines[..start]);
        if !before.is_empty() {
            return before;
        }
    }
    quoted(&lines)
}

/// The first line of a stack trace: Rust's `stack backtrace:` header
/// (`Stack backtrace:` from anyhow) or its first frame, or a Node.js
/// `    at f (file:line)` frame.
fn starts_backtrace(line: &str) -> bool {
    line.get(..16)
        .is_some_and(|head| head.eq_ignore_ascii_case("stack backtrace:"))
        || line.starts_with("   0:")
        || (line.starts_with("    at ") && line.ends_with(')'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_output_is_kept_whole() {
        let mut out = Capped::new(8, 8);
        out.push(b"hello ");
        out.push(b"world");
        assert_eq!(out.text(), "hello world");
        assert_eq!((out.total(), out.cut()), (11, 0));
    }

    #[test]
    fn large_output_keeps_head_and_tail_and_counts_the_cut() {
        let mut out = Capped::new(100, 300);
        for _ in 0..10_000 {
            out.push(b"0123456789abcdef");
        }
        out.push(b"THE END");
        assert_eq!(out.head(), &b"0123456789abcdef".repeat(7)[..100]);
        assert!(out.tail().ends_with(b"THE END"));
        assert_eq!(out.tail().len(), 300);
        assert_eq!(out.cut(), 10_000 * 16 + 7 - 400);
        let taken = out.take();
        assert_eq!(taken.total(), 160_007);
        assert_eq!((out.total(), out.head().len()), (0, 0));
        out.push(&[b'x'; 500]);
        assert_eq!(
            (out.head().len(), out.tail().len()),
            (100, 300),
            "limits kept"
        );
    }

    #[test]
    fn a_crash_is_quoted_by_its_message_not_its_backtrace() {
        let panic = "INFO starting\n\
            thread 'main' panicked at crates/rust-analyzer/src/main.rs:90:5:\n\
            failed to find any projects in [AbsPathBuf(\"/w\")]\n\
            stack backtrace:\n   0: rust_begin_unwind\n   1: core::panicking::panic_fmt\n\
            note: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose backtrace.\n";
        assert_eq!(
            explain(panic),
            "INFO starting | thread 'main' panicked at crates/rust-analyzer/src/main.rs:90:5: | failed to find any projects in [AbsPathBuf(\"/w\")]"
        );
        // RUST_BACKTRACE=1 without the header line.
        let anyhow = "error: Unknown binary 'x'\n\nStack backtrace:\n   0: rustup::main\n";
        assert_eq!(explain(anyhow), "error: Unknown binary 'x'");
        let frames = "error: boom\n   0: std::backtrace\n   1: main\n   2: start\n   3: end\n";
        assert_eq!(explain(frames), "error: boom");
        let node = "/x/langserver.js:34880\n    throw new Error(\"not set\");\n    ^\n\n\
            Error: Connection input stream is not set.\n    at createConnection (/x/a.js:1:2)\n    at main (/x/a.js:3:4)\n\nNode.js v20.0.0\n";
        assert_eq!(
            explain(node),
            "throw new Error(\"not set\"); | ^ | Error: Connection input stream is not set."
        );
        // No backtrace: the error is at the end.
        assert_eq!(
            explain("a\nb\n\nc\nerror: Unknown binary 'rust-analyzer'\n"),
            "b | c | error: Unknown binary 'rust-analyzer'"
        );
        assert_eq!(explain(""), "");
    }

    #[test]
    fn a_long_backtrace_does_not_push_the_message_out() {
        let mut log = Capped::new(4000, 2000);
        log.push(b"thread 'main' panicked at src/main.rs:1:1:\nout of cheese\nstack backtrace:\n");
        for frame in 0..2000 {
            log.push(format!("  {frame:3}: some::frame\n             at /src/x.rs:1\n").as_bytes());
        }
        assert_eq!(
            explain(&log.text()),
            "thread 'main' panicked at src/main.rs:1:1: | out of cheese"
        );
        assert!(log.head().len() <= 4000 && log.tail().len() <= 2000);
    }
}
