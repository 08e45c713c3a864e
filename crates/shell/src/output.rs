//! How much of a command's output the model sees: the head and the tail
//! that the capture keeps ([`Capped::shown`] says how much of the middle
//! was cut), so a runaway build log cannot fill memory or the model's
//! context.

/// Bytes kept from the start of the output.
pub const HEAD_BYTES: usize = 8 * 1024;
/// Bytes kept from the end of the output.
pub const TAIL_BYTES: usize = 24 * 1024;

#[cfg(test)]
mod tests {
    use super::*;
    use gantry_process::Capped;

    #[test]
    fn small_output_is_kept_whole() {
        let mut out = Capped::new(HEAD_BYTES, TAIL_BYTES);
        out.push(b"hello ");
        out.push(b"world");
        assert_eq!(out.shown(), "hello world");
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
        let text = out.shown();
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
