//! One file's matches as the searcher reports them: lines stored in one
//! buffer per walker thread, reused from file to file, so a match costs no
//! allocation.

use std::io;

use gantry_core::CancellationToken;
use grep_matcher::Matcher as _;
use grep_regex::RegexMatcher;
use grep_searcher::{Searcher, Sink, SinkContext, SinkFinish, SinkMatch};

use super::MAX_LINE_CHARS;

/// Bytes of a long line stored: enough for [`MAX_LINE_CHARS`] characters
/// of up to four bytes on either side of the match.
const KEEP_BYTES: usize = MAX_LINE_CHARS * 4;

/// What a stored line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Match,
    Context,
    /// A gap between two groups of context lines.
    Break,
}

/// One stored line; its text is `text[start..end]` of the file's buffer.
#[derive(Debug, Clone, Copy)]
pub(super) struct Line {
    pub(super) kind: Kind,
    pub(super) number: u64,
    pub(super) start: usize,
    pub(super) end: usize,
    /// Where the match starts in the stored text, for a long line.
    pub(super) match_at: Option<usize>,
    /// The stored text starts after the line's start / ends before its end.
    pub(super) cut_front: bool,
    pub(super) cut_back: bool,
}

/// What a file contributed, handed from a walker thread to the shared
/// collection in two allocations, however many lines matched.
pub(super) struct FileHits {
    /// Matching lines stored (at most the cap).
    pub(super) stored: u64,
    pub(super) lines: Box<[Line]>,
    pub(super) text: Box<[u8]>,
}

/// What the sink does with the file being searched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    /// Store lines: the file may be shown.
    Collect,
    /// Only count: the file sorts after the cutoff.
    Count,
}

/// Receives one file's matches; one per walker thread, reused from file
/// to file so a match costs no allocation.
pub(super) struct FileSink<'a> {
    pub(super) matcher: &'a RegexMatcher,
    pub(super) cancel: &'a CancellationToken,
    pub(super) mode: Mode,
    pub(super) cap: u64,
    pub(super) matches: u64,
    pub(super) stored: u64,
    /// A match past the per-file cap was seen: nothing more is stored.
    pub(super) full: bool,
    pub(super) binary: bool,
    pub(super) lines: Vec<Line>,
    pub(super) text: Vec<u8>,
}

impl FileSink<'_> {
    pub(super) fn reset(&mut self, mode: Mode) {
        self.mode = mode;
        self.matches = 0;
        self.stored = 0;
        self.full = false;
        self.binary = false;
        self.lines.clear();
        self.text.clear();
    }

    fn storing(&self) -> bool {
        self.mode == Mode::Collect && !self.full
    }

    fn push(&mut self, kind: Kind, number: u64, bytes: &[u8]) {
        let mut line = bytes;
        while let Some((last, rest)) = line.split_last()
            && (*last == b'\n' || *last == b'\r')
        {
            line = rest;
        }
        let (mut from, mut to) = (0, line.len());
        let mut match_at = None;
        if line.len() > MAX_LINE_CHARS {
            let found = if kind == Kind::Match {
                self.matcher.find(line).ok().flatten().map(|m| m.start())
            } else {
                None
            };
            if line.len() > KEEP_BYTES {
                from = found.map_or(0, |at| at.saturating_sub(KEEP_BYTES / 2));
                to = (from + KEEP_BYTES).min(line.len());
                // Whole characters only; a UTF-8 character has at most
                // three continuation bytes, and bytes that are not UTF-8
                // are shown as U+FFFD whatever the cut.
                let continues = |at: usize| line.get(at).is_some_and(|b| b & 0xc0 == 0x80);
                for _ in 0..3 {
                    if from > 0 && continues(from) {
                        from += 1;
                    }
                    if continues(to) {
                        to -= 1;
                    }
                }
            }
            match_at = found.map(|at| at.saturating_sub(from));
        }
        let start = self.text.len();
        self.text.extend_from_slice(&line[from..to]);
        self.lines.push(Line {
            kind,
            number,
            start,
            end: self.text.len(),
            match_at,
            cut_front: from > 0,
            cut_back: to < line.len(),
        });
    }
}

impl Sink for FileSink<'_> {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, found: &SinkMatch<'_>) -> Result<bool, io::Error> {
        self.matches += 1;
        if self.storing() {
            if self.stored < self.cap {
                self.stored += 1;
                self.push(
                    Kind::Match,
                    found.line_number().unwrap_or_default(),
                    found.bytes(),
                );
            } else {
                self.full = true;
            }
        }
        Ok(!self.cancel.is_cancelled())
    }

    fn context(&mut self, _: &Searcher, context: &SinkContext<'_>) -> Result<bool, io::Error> {
        if self.storing() {
            self.push(
                Kind::Context,
                context.line_number().unwrap_or_default(),
                context.bytes(),
            );
        }
        Ok(true)
    }

    fn context_break(&mut self, _: &Searcher) -> Result<bool, io::Error> {
        if self.storing() && !self.lines.is_empty() {
            self.lines.push(Line {
                kind: Kind::Break,
                number: 0,
                start: 0,
                end: 0,
                match_at: None,
                cut_front: false,
                cut_back: false,
            });
        }
        Ok(true)
    }

    fn binary_data(&mut self, _: &Searcher, _: u64) -> Result<bool, io::Error> {
        self.binary = true;
        Ok(false)
    }

    fn finish(&mut self, _: &Searcher, finish: &SinkFinish) -> Result<(), io::Error> {
        // A NUL found while reading (not only in the first buffer) also
        // makes the file binary: its matches before that are dropped.
        if finish.binary_byte_offset().is_some() {
            self.binary = true;
        }
        Ok(())
    }
}
