//! A cell's output as the model gets it: printed text, tables and images
//! in the order they came, ANSI codes stripped, the text capped with its
//! head and tail kept and the cut said.

use base64::Engine;
use gantry_core::Part;
use gantry_process::Capped;

use crate::protocol::Bundle;

/// Bytes of a cell's text kept from its start.
pub const HEAD_BYTES: usize = 16 * 1024;
/// Bytes of a cell's text kept from its end.
pub const TAIL_BYTES: usize = 16 * 1024;

/// What a cell has shown so far.
pub struct Transcript {
    parts: Vec<Part>,
    /// Text bytes still allowed into `parts`; after that, text goes to
    /// `tail`, of which the end is kept.
    head_left: usize,
    tail: Capped,
    /// Whether anything at all was shown (the kernel may print nothing).
    shown: bool,
}

impl Default for Transcript {
    fn default() -> Self {
        Transcript {
            parts: Vec::new(),
            head_left: HEAD_BYTES,
            tail: Capped::new(0, TAIL_BYTES),
            shown: false,
        }
    }
}

impl Transcript {
    /// Appends text, ANSI codes stripped.
    pub fn text(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        self.shown = true;
        let clean = strip_ansi_escapes::strip_str(text);
        if self.tail.total() > 0 || clean.len() > self.head_left {
            let fits = floor_char_boundary(&clean, self.head_left);
            self.push_text(&clean[..fits]);
            self.head_left -= fits;
            self.tail.push(&clean.as_bytes()[fits..]);
        } else {
            self.head_left -= clean.len();
            self.push_text(&clean);
        }
    }

    /// Raw bytes of the kernel's stdout and stderr (a subprocess, C code,
    /// a crash's last words).
    pub fn raw(&mut self, bytes: &[u8]) {
        self.text(&String::from_utf8_lossy(bytes));
    }

    fn push_text(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        match self.parts.last_mut() {
            Some(Part::Text { text: last }) => last.push_str(text),
            _ => self.parts.push(Part::text(text)),
        }
    }

    /// Appends an error the cell raised: its traceback, or its name and
    /// message when it has none.
    pub fn error(&mut self, name: &str, message: &str, traceback: &str) {
        self.ensure_line_start();
        if traceback.trim().is_empty() {
            self.text(&format!("{name}: {message}\n"));
        } else {
            self.text(traceback);
        }
    }

    /// Appends a mime bundle, its best form: an image, else Markdown, else
    /// plain text.
    pub fn bundle(&mut self, data: &Bundle) {
        let text_of = |mime: &str| data.get(mime).and_then(|value| value.as_str());
        if let Some(png) = text_of("image/png") {
            match base64::engine::general_purpose::STANDARD.decode(png) {
                Ok(bytes) => {
                    self.shown = true;
                    self.parts.push(Part::Image {
                        mime_type: "image/png".into(),
                        data: bytes,
                    });
                    return;
                }
                Err(error) => self.text(&format!("[an image that does not decode: {error}]\n")),
            }
        }
        if let Some(text) = text_of("text/markdown").or_else(|| text_of("text/plain")) {
            self.ensure_line_start();
            self.text(text);
            self.text("\n");
        }
    }

    /// Starts what follows on a line of its own.
    pub fn ensure_line_start(&mut self) {
        let ends_open = match self.parts.last() {
            Some(Part::Text { text }) => !text.is_empty() && !text.ends_with('\n'),
            _ => false,
        };
        if ends_open && self.tail.total() == 0 {
            self.text("\n");
        }
    }

    /// The parts for the model, the text's cut said where it happened;
    /// `empty` stands in when nothing was shown.
    pub fn into_parts(mut self, empty: &str) -> Vec<Part> {
        if self.tail.total() > 0 {
            let tail = String::from_utf8_lossy(&self.tail.tail()).into_owned();
            self.push_text(&format!(
                "\n[... {} bytes of output cut; the first {HEAD_BYTES} and last {TAIL_BYTES} bytes are shown ...]\n{tail}",
                self.tail.cut()
            ));
        }
        if !self.shown {
            self.parts.push(Part::text(empty));
        }
        self.parts
    }
}

fn floor_char_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::text_of;

    #[test]
    fn ansi_codes_are_stripped() {
        let mut transcript = Transcript::default();
        transcript.text("\x1b[31mred\x1b[0m and \x1b]0;title\x07plain\n");
        assert_eq!(text_of(&transcript.into_parts("")), "red and plain\n");
    }

    #[test]
    fn long_output_keeps_head_and_tail_and_says_the_cut() {
        let mut transcript = Transcript::default();
        transcript.text("START\n");
        for line in 0..10_000 {
            transcript.text(&format!("line {line}\n"));
        }
        transcript.text("THE END\n");
        let text = text_of(&transcript.into_parts(""));
        assert!(text.starts_with("START\n"));
        assert!(text.ends_with("THE END\n"));
        assert!(text.contains("bytes of output cut"), "{}", &text[..200]);
        assert!(text.len() < HEAD_BYTES + TAIL_BYTES + 200);
    }

    #[test]
    fn images_keep_their_place_among_text() {
        let mut transcript = Transcript::default();
        transcript.text("before");
        let png = base64::engine::general_purpose::STANDARD.encode(b"\x89PNG");
        let bundle: Bundle = serde_json::from_value(serde_json::json!({
            "image/png": png, "text/plain": "<Figure>"
        }))
        .unwrap();
        transcript.bundle(&bundle);
        transcript.text("after");
        let parts = transcript.into_parts("");
        assert!(matches!(&parts[0], Part::Text { text } if text == "before"));
        assert!(matches!(&parts[1], Part::Image { data, .. } if data == b"\x89PNG"));
        assert!(matches!(&parts[2], Part::Text { text } if text == "after"));
    }

    #[test]
    fn markdown_wins_over_plain_text_and_nothing_shown_says_so() {
        let mut transcript = Transcript::default();
        let bundle: Bundle = serde_json::from_value(serde_json::json!({
            "text/markdown": "| a |\n|---|", "text/plain": "   a"
        }))
        .unwrap();
        transcript.bundle(&bundle);
        assert_eq!(text_of(&transcript.into_parts("")), "| a |\n|---|\n");
        assert_eq!(
            text_of(&Transcript::default().into_parts("(no output)")),
            "(no output)"
        );
    }
}
