//! Bounded capture of a command's output: the head and the tail are kept,
//! the middle is counted, so a runaway build log cannot fill memory or the
//! model's context, and the cut is always said.

/// Bytes kept from the start of the output.
pub const HEAD_BYTES: usize = 8 * 1024;
/// Bytes kept from the end of the output.
pub const TAIL_BYTES: usize = 24 * 1024;

/// Output with its head and tail kept.
#[derive(Debug, Default, Clone)]
pub struct CappedOutput {
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    cut: u64,
    total: u64,
}

impl CappedOutput {
    /// Appends a chunk, dropping from the middle once both ends are full.
    pub fn push(&mut self, mut chunk: &[u8]) {
        self.total += chunk.len() as u64;
        if self.head.len() < HEAD_BYTES {
            let take = chunk.len().min(HEAD_BYTES - self.head.len());
            self.head.extend_from_slice(&chunk[..take]);
            chunk = &chunk[take..];
        }
        self.tail.extend(chunk);
        if self.tail.len() > TAIL_BYTES {
            let excess = self.tail.len() - TAIL_BYTES;
            self.tail.drain(..excess);
            self.cut += excess as u64;
        }
    }

    /// Bytes seen in all.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The kept text, with a marker where bytes were cut.
    pub fn render(&self) -> String {
        let mut out = String::from_utf8_lossy(&self.head).into_owned();
        if self.cut > 0 {
            out.push_str(&format!(
                "\n[... {} bytes of output cut; the first {} and last {} bytes are shown ...]\n",
                self.cut, HEAD_BYTES, TAIL_BYTES
            ));
        }
        let (a, b) = self.tail.as_slices();
        let mut tail = Vec::with_capacity(a.len() + b.len());
        tail.extend_from_slice(a);
        tail.extend_from_slice(b);
        out.push_str(&String::from_utf8_lossy(&tail));
        out
    }

    /// Takes what was captured so far, leaving an empty buffer (background
    /// jobs report only new output on each poll).
    pub fn take(&mut self) -> CappedOutput {
        std::mem::take(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_output_is_kept_whole() {
        let mut out = CappedOutput::default();
        out.push(b"hello ");
        out.push(b"world");
        assert_eq!(out.render(), "hello world");
        assert_eq!(out.total(), 11);
    }

    #[test]
    fn large_output_keeps_head_and_tail_and_says_the_cut() {
        let mut out = CappedOutput::default();
        let line = b"0123456789abcdef";
        for _ in 0..10_000 {
            out.push(line);
        }
        out.push(b"THE END");
        let text = out.render();
        assert!(text.starts_with("0123456789abcdef"));
        assert!(text.ends_with("THE END"));
        let cut = 10_000 * 16 + 7 - (HEAD_BYTES + TAIL_BYTES);
        assert!(
            text.contains(&format!("{cut} bytes of output cut")),
            "{}",
            &text[HEAD_BYTES..HEAD_BYTES + 120]
        );
        assert!(text.len() < HEAD_BYTES + TAIL_BYTES + 200);
    }
}
