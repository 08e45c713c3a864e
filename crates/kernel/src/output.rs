//! A kernel's raw stdout and stderr (a subprocess, C code, Node's
//! `console.log`), put in order with its frames.
//!
//! The two travel on different pipes, so which came first cannot be told
//! from the order they are read in. The driver therefore writes a marker
//! into the raw pipe just before each frame it sends (after its hello): the
//! bytes before a frame's marker were printed before the frame, those after
//! it after. The marker carries a nonce drawn per kernel, so output cannot
//! hold one by chance.

use std::hash::{BuildHasher, RandomState};
use std::time::Duration;

use memchr::memmem;
use tokio::net::unix::pipe;

use crate::transcript::Transcript;

/// How long the raw output of a dead kernel is still read.
const LAST_WORDS: Duration = Duration::from_millis(300);
/// How often a running cell's output is read between its frames. Not at
/// each write: every marker would then wake the host once more than its
/// frame does, a tenth of a millisecond on each trivial cell. A cell
/// done sooner is never woken for; one printing a flood is read at
/// [`PIPE_SIZE`] per tick at least.
pub const READ_EVERY: Duration = Duration::from_millis(10);
/// The raw pipe's size asked for: 1 MiB, the usual unprivileged limit.
const PIPE_SIZE: usize = 1 << 20;

/// A new kernel's marker, told to its driver in its environment.
pub fn marker() -> String {
    // std's hasher keys are drawn from the OS's randomness: two of them
    // make an unguessable nonce without a crate for it.
    let nonce = RandomState::new().hash_one(std::process::id()) as u128
        | (RandomState::new().hash_one(0u8) as u128) << 64;
    format!("\x1b]gantry-sync;{nonce:032x}\x07")
}

/// The raw pipe and what was read from it but not yet shown.
pub struct RawOutput {
    pipe: pipe::Receiver,
    marker: Vec<u8>,
    /// Read, not shown: from a marker whose frame is not handled yet, a
    /// marker's first bytes, or a character cut by a read.
    held: Vec<u8>,
    open: bool,
}

impl RawOutput {
    /// Reads `pipe`, whose kernel writes `marker` before each frame. The
    /// pipe is made as large as the system lets a user make it: it is
    /// read at each frame and every [`READ_EVERY`], not at every write.
    pub fn new(pipe: pipe::Receiver, marker: String) -> RawOutput {
        // Past the limit (/proc/sys/fs/pipe-max-size) the default stays.
        let _ = rustix::pipe::fcntl_setpipe_size(&pipe, PIPE_SIZE);
        RawOutput {
            pipe,
            marker: marker.into_bytes(),
            held: Vec::new(),
            open: true,
        }
    }

    /// Whether the pipe may still give bytes (a dead kernel's pipe is
    /// always readable, at its end).
    pub fn open(&self) -> bool {
        self.open
    }

    /// The ticks at which a running cell's output is read between its
    /// frames, the first one [`READ_EVERY`] from now.
    pub fn reads() -> tokio::time::Interval {
        let mut reads =
            tokio::time::interval_at(tokio::time::Instant::now() + READ_EVERY, READ_EVERY);
        reads.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        reads
    }

    /// Reads what the pipe holds now (up to a bound, so a flood does not
    /// hold up the frames) and shows what came before the next frame not
    /// handled yet.
    pub fn read_now(&mut self, transcript: &mut Transcript) {
        self.fill(Until::Empty);
        self.show_before_marker(transcript);
    }

    /// A frame is about to be handled: shows what was printed before it
    /// and passes its marker; what follows the marker waits for the frame
    /// to be shown. The driver wrote the marker before the frame, so it is
    /// in the pipe now, behind at most a pipe's worth of bytes; it is
    /// missing only where writing it failed, and then what was read is
    /// shown.
    pub fn pass_marker(&mut self, transcript: &mut Transcript) {
        self.fill(Until::Marker);
        match memmem::find(&self.held, &self.marker) {
            Some(at) => {
                self.show(transcript, at);
                self.held.drain(..self.marker.len());
            }
            None => self.show_before_marker(transcript),
        }
    }

    /// What is left of a dead kernel's output, markers removed; read for
    /// a bounded time, since its children may hold the pipe open.
    pub async fn last_words(&mut self, transcript: &mut Transcript) {
        let _ = tokio::time::timeout(LAST_WORDS, async {
            loop {
                self.fill(Until::Empty);
                if !self.open || self.pipe.readable().await.is_err() {
                    break;
                }
            }
        })
        .await;
        while let Some(at) = memmem::find(&self.held, &self.marker) {
            self.show(transcript, at);
            self.held.drain(..self.marker.len());
        }
        transcript.raw(&std::mem::take(&mut self.held));
    }

    /// Reads without waiting, until the pipe is empty or `until`.
    fn fill(&mut self, until: Until) {
        const BOUND: usize = 2 * PIPE_SIZE;
        let mut buffer = [0u8; 16 * 1024];
        let mut read = 0;
        // Where a marker not yet held could begin: only new bytes are searched.
        let mut unsearched = 0;
        while self.open {
            let done = match until {
                Until::Marker => memmem::find(&self.held[unsearched..], &self.marker).is_some(),
                Until::Empty => read >= BOUND,
            };
            if done {
                return;
            }
            unsearched = self.held.len().saturating_sub(self.marker.len() - 1);
            match self.read_once(&mut buffer) {
                Ok(0) => self.open = false,
                Ok(n) => {
                    read += n;
                    self.held.extend_from_slice(&buffer[..n]);
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => self.open = false,
            }
        }
    }

    /// One read without waiting. Through tokio's `try_io` where it has
    /// seen the pipe readable (an empty pipe then clears that, without
    /// losing a wake-up), and a syscall of its own otherwise: tokio trusts
    /// the readiness its reactor last saw, and a marker just written may
    /// not have been seen yet.
    fn read_once(&self, buffer: &mut [u8]) -> std::io::Result<usize> {
        let read = || rustix::io::read(&self.pipe, &mut *buffer).map_err(Into::into);
        match self.pipe.try_io(read) {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                rustix::io::read(&self.pipe, buffer).map_err(Into::into)
            }
            done => done,
        }
    }

    /// Shows the held bytes before the first marker, keeping back a
    /// possible start of one and a character not yet whole.
    fn show_before_marker(&mut self, transcript: &mut Transcript) {
        let end = match memmem::find(&self.held, &self.marker) {
            Some(at) => at,
            None => {
                let whole = self.held.len() - partial_marker(&self.held, &self.marker);
                let text = &self.held[..whole];
                match std::str::from_utf8(text) {
                    Err(e) if e.error_len().is_none() && self.open => e.valid_up_to(),
                    _ => whole,
                }
            }
        };
        self.show(transcript, end);
    }

    fn show(&mut self, transcript: &mut Transcript, end: usize) {
        if end > 0 {
            transcript.raw(&self.held[..end]);
            self.held.drain(..end);
        }
    }
}

/// How far [`RawOutput::fill`] reads.
enum Until {
    /// To the next marker.
    Marker,
    /// Everything there is (up to a bound).
    Empty,
}

/// The length of the longest end of `held` that begins `marker`.
fn partial_marker(held: &[u8], marker: &[u8]) -> usize {
    (1..marker.len().min(held.len() + 1))
        .rev()
        .find(|&n| held.ends_with(&marker[..n]))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn output() -> (RawOutput, std::io::PipeWriter) {
        let (reader, writer) = std::io::pipe().unwrap();
        let pipe = pipe::Receiver::from_owned_fd(reader.into()).unwrap();
        (RawOutput::new(pipe, marker()), writer)
    }

    fn text(transcript: Transcript) -> String {
        transcript
            .into_parts("")
            .into_iter()
            .map(|part| match part {
                gantry_core::Part::Text { text } => text,
                _ => String::new(),
            })
            .collect()
    }

    #[tokio::test]
    async fn bytes_after_a_marker_wait_for_its_frame() {
        use std::io::Write;
        let (mut raw, mut writer) = output();
        let marker = String::from_utf8(raw.marker.clone()).unwrap();
        write!(writer, "before{marker}after").unwrap();
        let mut transcript = Transcript::default();
        raw.read_now(&mut transcript);
        raw.pass_marker(&mut transcript);
        transcript.text("|frame|");
        raw.read_now(&mut transcript);
        assert_eq!(text(transcript), "before|frame|after");
    }

    #[tokio::test]
    async fn a_marker_or_a_character_cut_by_a_read_is_held_whole() {
        use std::io::Write;
        let (mut raw, mut writer) = output();
        let marker = String::from_utf8(raw.marker.clone()).unwrap();
        let (head, tail) = marker.split_at(7);
        let mut transcript = Transcript::default();
        writer.write_all("é".as_bytes()[..1].as_ref()).unwrap();
        raw.read_now(&mut transcript);
        writer.write_all(&"é".as_bytes()[1..]).unwrap();
        write!(writer, "x{head}").unwrap();
        raw.read_now(&mut transcript);
        write!(writer, "{tail}y").unwrap();
        raw.pass_marker(&mut transcript);
        transcript.text("|frame|");
        raw.read_now(&mut transcript);
        assert_eq!(text(transcript), "éx|frame|y");
    }

    #[tokio::test]
    async fn last_words_drop_the_markers() {
        use std::io::Write;
        let (mut raw, mut writer) = output();
        let marker = String::from_utf8(raw.marker.clone()).unwrap();
        write!(writer, "a{marker}b{marker}c").unwrap();
        drop(writer);
        let mut transcript = Transcript::default();
        raw.last_words(&mut transcript).await;
        assert_eq!(text(transcript), "abc");
    }
}
