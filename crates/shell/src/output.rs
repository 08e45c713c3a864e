//! A command's output as the model sees it: the head and the tail that
//! the capture kept, so a runaway build log cannot fill memory or the
//! model's context, and how much of the middle was cut, always said.

use gantry_process::Capped;

/// Bytes kept from the start of the output.
pub const HEAD_BYTES: usize = 8 * 1024;
/// Bytes kept from the end of the output.
pub const TAIL_BYTES: usize = 24 * 1024;

/// The kept text of a command's output, with a marker saying how much
/// was cut between the head and the tail.
pub fn render(output: &Capped) -> String {
    let mut out = String::from_utf8_lossy(output.head()).into_owned();
    if output.cut() > 0 {
        out.push_str(&format!(
            "\n[... {} bytes of output cut; the first {} and last {} bytes are shown ...]\n",
            output.cut(),
            HEAD_BYTES,
            TAIL_BYTES
        ));
    }
    out.push_str(&String::from_utf8_lossy(&output.tail()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_output_is_kept_whole() {
        let mut out = Capped::new(HEAD_BYTES, TAIL_BYTES);
        out.push(b"hello ");
        out.push(b"world");
        assert_eq!(render(&out), "hello world");
        assert_eq!(out.total(), 11);
    }

    #[test]
    fn large_output_keeps_head_and_tail_and_says_the_cut() {
        let mut out = Capped::new(HEAD_BYTES, TAIL_BYTES);
        let line = b"0123456789abcdef";
        for _ in 0..10_000 {
            out.push(line);
        }
        out.push(b"THE END");
        let text = render(&out);
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
