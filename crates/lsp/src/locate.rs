//! The position rule: a 1-based line plus a symbol substring of it (and
//! which occurrence), never a column. A model asked for a column guesses,
//! and a wrong guess lands on a neighbouring symbol: an answer that looks
//! right and is about something else.

use crate::convert::LineIndex;

/// A symbol found on its line.
#[derive(Debug, Clone, PartialEq)]
pub struct Located {
    /// 0-based line.
    pub line: usize,
    /// Byte offset in the line of the point asked about.
    pub byte: usize,
    /// Byte offset in the line where the match ends.
    pub end: usize,
    /// The line's text.
    pub text: String,
}

/// Whether `c` can be part of an identifier in the languages served.
pub fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

/// Finds occurrence `occurrence` (1-based) of `symbol` on 1-based `line` of
/// `text`. The point is the first identifier character of the match, so
/// `(x` or ` foo` still land on a name. Every error quotes what a retry
/// needs.
pub fn locate(
    text: &str,
    file: &str,
    line: u32,
    symbol: &str,
    occurrence: u32,
) -> Result<Located, String> {
    let index = LineIndex::new(text);
    let count = index.line_count();
    if line == 0 {
        return Err("line: lines are 1-based; the first line is 1".into());
    }
    if symbol.is_empty() {
        return Err("symbol: must not be empty; give the name as written on the line".into());
    }
    if occurrence == 0 {
        return Err("occurrence: is 1-based; the first occurrence is 1".into());
    }
    let line0 = line as usize - 1;
    let Some(content) = index.line(line0).filter(|_| line0 < count) else {
        return Err(format!(
            "line {line} is beyond the end of {file} (the file has {count} lines)"
        ));
    };
    let starts: Vec<usize> = content.match_indices(symbol).map(|(i, _)| i).collect();
    if starts.is_empty() {
        let elsewhere: Vec<String> = (0..count)
            .filter(|&l| l != line0 && index.line(l).is_some_and(|t| t.contains(symbol)))
            .min_by_key(|&l| l.abs_diff(line0))
            .map(|l| format!(" It does appear on line {}.", l + 1))
            .into_iter()
            .collect();
        return Err(format!(
            "symbol `{symbol}` is not on line {line} of {file}. Line {line} is: `{}`{}",
            content.trim(),
            elsewhere.concat()
        ));
    }
    let Some(&start) = starts.get(occurrence as usize - 1) else {
        return Err(format!(
            "`{symbol}` occurs {} time(s) on line {line} of {file}, so there is no occurrence {occurrence}. Line {line} is: `{}`",
            starts.len(),
            content.trim()
        ));
    };
    let matched = &content[start..start + symbol.len()];
    let byte = matched
        .char_indices()
        .find(|(_, c)| is_ident(*c))
        .map(|(i, _)| start + i)
        .unwrap_or(start);
    Ok(Located {
        line: line0,
        byte,
        end: start + symbol.len(),
        text: content.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "def f(x):\n    return g(x) + g(y)  # é g\n\nprint(f(1))\n";

    #[test]
    fn finds_the_chosen_occurrence_on_the_line() {
        let first = locate(FILE, "a.py", 2, "g", 1).unwrap();
        let second = locate(FILE, "a.py", 2, "g", 2).unwrap();
        assert_eq!(&first.text[first.byte..first.byte + 4], "g(x)");
        assert_eq!(&second.text[second.byte..second.byte + 4], "g(y)");
        // Leading punctuation is skipped to the name.
        let call = locate(FILE, "a.py", 4, "(f", 1).unwrap();
        assert_eq!(&call.text[call.byte..call.byte + 1], "f");
        // After a non-ASCII character.
        let third = locate(FILE, "a.py", 2, "g", 3).unwrap();
        assert_eq!(third.byte, FILE.lines().nth(1).unwrap().rfind('g').unwrap());
    }

    #[test]
    fn errors_quote_the_line_and_say_what_to_do() {
        let missing = locate(FILE, "a.py", 1, "print", 1).unwrap_err();
        assert!(
            missing.contains("`print` is not on line 1 of a.py"),
            "{missing}"
        );
        assert!(missing.contains("Line 1 is: `def f(x):`"), "{missing}");
        assert!(missing.contains("It does appear on line 4."), "{missing}");
        let beyond = locate(FILE, "a.py", 9, "f", 1).unwrap_err();
        assert_eq!(
            beyond,
            "line 9 is beyond the end of a.py (the file has 4 lines)"
        );
        let too_many = locate(FILE, "a.py", 2, "g", 4).unwrap_err();
        assert!(too_many.contains("occurs 3 time(s)"), "{too_many}");
        assert!(
            locate(FILE, "a.py", 0, "f", 1)
                .unwrap_err()
                .contains("1-based")
        );
        assert!(
            locate(FILE, "a.py", 1, "", 1)
                .unwrap_err()
                .contains("empty")
        );
    }

    #[test]
    fn agrees_with_str_match_indices() {
        // Oracle: the n-th match of str::match_indices on the line.
        let line = "aa a_a aaa éa a";
        for needle in ["a", "aa", "a_", "éa", " a"] {
            let all: Vec<usize> = line.match_indices(needle).map(|(i, _)| i).collect();
            for (n, start) in all.iter().enumerate() {
                let found = locate(line, "x", 1, needle, n as u32 + 1).unwrap();
                assert_eq!(found.end, start + needle.len());
                assert!(found.byte >= *start && found.byte < found.end);
            }
        }
    }
}
