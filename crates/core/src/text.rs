//! Numbers and text for people and models, one way each for every family:
//! a count with its noun (`1 file`, `1,234 files`), a number with
//! thousands separators, text cut to a number of characters.

/// `n` as people read it: `1,234`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// `n` with its noun: `1 file`, `0 files`, `1,234 entries`. Both forms are
/// given, since English plurals are not all an added `s`.
pub fn counted(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", thousands(n), if n == 1 { one } else { many })
}

/// The first `max` characters of `text` when it has more, else `None`:
/// for a caller that says in its own words what was cut.
pub fn char_prefix(text: &str, max: usize) -> Option<&str> {
    text.char_indices().nth(max).map(|(at, _)| &text[..at])
}

/// `text` cut to at most `max` characters, the cut said with an ellipsis.
pub fn shorten(text: &str, max: usize) -> String {
    match char_prefix(text, max) {
        Some(kept) => format!("{kept}…"),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_counts_read_as_people_write_them() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(counted(1, "entry", "entries"), "1 entry");
        assert_eq!(counted(0, "entry", "entries"), "0 entries");
        assert_eq!(counted(2_000, "line", "lines"), "2,000 lines");
    }

    #[test]
    fn text_is_cut_on_characters_not_bytes() {
        assert_eq!(shorten("héllo", 2), "hé…");
        assert_eq!(shorten("hé", 2), "hé");
        assert_eq!(char_prefix("héllo", 2), Some("hé"));
        assert_eq!(char_prefix("hé", 2), None);
    }
}
