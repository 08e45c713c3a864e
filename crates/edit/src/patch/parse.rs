//! Reading a patch: the `*** Begin Patch` format models are trained to
//! emit, and plain unified diffs (git's included).

/// One parsed patch.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Patch {
    pub files: Vec<FilePatch>,
}

/// What a patch does to one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    Add,
    Delete,
    Update,
}

/// One file's part of a patch.
#[derive(Debug, PartialEq)]
pub(crate) struct FilePatch {
    pub op: Op,
    pub path: String,
    /// Where an update moves the file.
    pub move_to: Option<String>,
    /// The patch line (1-based) of the file's header, for errors.
    pub line: usize,
    /// For an add, one hunk holding the new lines.
    pub hunks: Vec<Hunk>,
}

/// One hunk: lines to find (`old`) and what replaces them (`new`).
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Hunk {
    /// The patch line (1-based) where the hunk starts, for errors.
    pub line: usize,
    /// `@@ line` anchors to find first, in order (the model's way of
    /// saying "inside `fn main`").
    pub anchors: Vec<String>,
    pub old: Vec<String>,
    pub new: Vec<String>,
    /// A unified diff's old start, 0-based: where to look first.
    pub hint: Option<usize>,
    /// `*** End of File`: the hunk ends the file.
    pub eof: bool,
    /// `\ No newline at end of file` after an old or a new line.
    pub old_no_newline: bool,
    pub new_no_newline: bool,
}

impl Hunk {
    fn changes_something(&self) -> bool {
        self.old != self.new || self.old_no_newline != self.new_no_newline
    }
}

/// A patch that does not parse: which line, and what was wrong.
pub(crate) type ParseError = String;

fn at(line: usize, message: impl AsRef<str>) -> ParseError {
    format!("line {line}: {}", message.as_ref())
}

/// Parses either format, chosen by the first meaningful line.
pub(crate) fn parse(text: &str) -> Result<Patch, ParseError> {
    let lines: Vec<&str> = text.lines().collect();
    let (first, last) = unwrap_heredoc(&lines);
    let lines = &lines[first..last];
    let Some(start) = lines.iter().position(|l| !l.trim().is_empty()) else {
        return Err("the patch is empty".into());
    };
    let head = lines[start].trim();
    let patch = if head == "*** Begin Patch" {
        parse_codex(lines, start, first)?
    } else if lines
        .iter()
        .any(|l| l.starts_with("@@ ") || l.starts_with("--- ") || l.starts_with("diff --git "))
    {
        parse_unified(lines, first)?
    } else {
        return Err(at(
            first + start + 1,
            format!(
                "`{}` starts no known patch format: expected `*** Begin Patch` (with `*** Add File:`, `*** Update File:`, `*** Delete File:` sections and `*** End Patch`) or a unified diff (`--- a/path`, `+++ b/path`, `@@ -l,n +l,n @@`)",
                preview(head)
            ),
        ));
    };
    if patch.files.is_empty() {
        return Err("the patch changes no file".into());
    }
    Ok(patch)
}

/// The lines inside a shell heredoc (`apply_patch <<'EOF'` ... `EOF`),
/// which models sometimes wrap the patch in.
fn unwrap_heredoc(lines: &[&str]) -> (usize, usize) {
    let first = lines.iter().position(|l| !l.trim().is_empty()).unwrap_or(0);
    let Some(marker) = lines
        .get(first)
        .and_then(|l| l.split_once("<<"))
        .map(|(_, m)| m)
    else {
        return (0, lines.len());
    };
    let marker = marker.trim().trim_matches(|c| c == '\'' || c == '"');
    let last = lines
        .iter()
        .rposition(|l| !l.trim().is_empty())
        .unwrap_or(0);
    if !marker.is_empty() && lines[last].trim() == marker && last > first {
        (first + 1, last)
    } else {
        (0, lines.len())
    }
}

fn preview(line: &str) -> String {
    if line.chars().count() > 60 {
        format!("{}...", line.chars().take(57).collect::<String>())
    } else {
        line.to_string()
    }
}

// ---- *** Begin Patch ------------------------------------------------------

fn header<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    line.trim_end()
        .strip_prefix("*** ")?
        .strip_prefix(name)?
        .strip_prefix(':')
        .map(str::trim)
}

fn is_section_header(line: &str) -> bool {
    ["Add File", "Update File", "Delete File"]
        .iter()
        .any(|name| header(line, name).is_some())
        || line.trim() == "*** End Patch"
}

/// `lines[start]` is `*** Begin Patch`; `offset` turns indices into patch
/// line numbers.
fn parse_codex(lines: &[&str], start: usize, offset: usize) -> Result<Patch, ParseError> {
    let number = |i: usize| offset + i + 1;
    let mut patch = Patch::default();
    let mut i = start + 1;
    loop {
        let Some(&line) = lines.get(i) else {
            return Err(at(
                number(lines.len().saturating_sub(1)),
                "the patch ends without `*** End Patch` (was it cut off?)",
            ));
        };
        if line.trim().is_empty() {
            i += 1;
        } else if line.trim() == "*** End Patch" {
            if let Some(extra) = lines[i + 1..].iter().position(|l| !l.trim().is_empty()) {
                return Err(at(number(i + 1 + extra), "text after `*** End Patch`"));
            }
            return Ok(patch);
        } else if let Some(path) = header(line, "Add File") {
            let file_line = number(i);
            let path = nonempty(path, file_line)?;
            i += 1;
            let mut hunk = Hunk {
                line: file_line,
                ..Hunk::default()
            };
            while let Some(&line) = lines.get(i) {
                if let Some(added) = line.strip_prefix('+') {
                    hunk.new.push(added.to_string());
                } else if line.trim().is_empty()
                    && more_before_header(lines, i, |l| l.starts_with('+'))
                {
                    hunk.new.push(String::new());
                } else if line.trim().is_empty() || is_section_header(line) {
                    break;
                } else {
                    return Err(at(
                        number(i),
                        format!(
                            "in `*** Add File: {path}` every line must start with `+`, got `{}`",
                            preview(line)
                        ),
                    ));
                }
                i += 1;
            }
            patch.files.push(FilePatch {
                op: Op::Add,
                path,
                move_to: None,
                line: file_line,
                hunks: vec![hunk],
            });
        } else if let Some(path) = header(line, "Delete File") {
            patch.files.push(FilePatch {
                op: Op::Delete,
                path: nonempty(path, number(i))?,
                move_to: None,
                line: number(i),
                hunks: Vec::new(),
            });
            i += 1;
        } else if let Some(path) = header(line, "Update File") {
            let file_line = number(i);
            let path = nonempty(path, file_line)?;
            i += 1;
            let move_to = match lines.get(i).and_then(|l| header(l, "Move to")) {
                Some(to) => {
                    i += 1;
                    Some(nonempty(to, number(i - 1))?)
                }
                None => None,
            };
            let (hunks, next) = parse_codex_hunks(lines, i, offset, &path)?;
            i = next;
            if hunks.is_empty() && move_to.is_none() {
                return Err(at(
                    file_line,
                    format!(
                        "`*** Update File: {path}` has no hunk (lines starting with `@@`, ` `, `-` or `+`)"
                    ),
                ));
            }
            patch.files.push(FilePatch {
                op: Op::Update,
                path,
                move_to,
                line: file_line,
                hunks,
            });
        } else {
            return Err(at(
                number(i),
                format!(
                    "expected `*** Add File: <path>`, `*** Update File: <path>`, `*** Delete File: <path>` or `*** End Patch`, got `{}`",
                    preview(line)
                ),
            ));
        }
    }
}

fn nonempty(path: &str, line: usize) -> Result<String, ParseError> {
    if path.is_empty() {
        Err(at(line, "the file header names no path"))
    } else {
        Ok(path.to_string())
    }
}

/// Whether a line satisfying `wanted` follows `i` before the next
/// section header (so a blank line at `i` belongs to the body).
fn more_before_header(lines: &[&str], i: usize, wanted: impl Fn(&str) -> bool) -> bool {
    lines[i + 1..]
        .iter()
        .find(|l| !l.trim().is_empty())
        .is_some_and(|l| !is_section_header(l) && wanted(l))
}

/// The hunks of an `*** Update File` section from `lines[i]` on; returns
/// them and the index of the first line after the section.
fn parse_codex_hunks(
    lines: &[&str],
    mut i: usize,
    offset: usize,
    path: &str,
) -> Result<(Vec<Hunk>, usize), ParseError> {
    let number = |i: usize| offset + i + 1;
    let mut hunks: Vec<Hunk> = Vec::new();
    let mut current: Option<Hunk> = None;
    let body_line = |l: &str| {
        l.starts_with([' ', '-', '+']) || l.starts_with("@@") || l.trim() == "*** End of File"
    };
    while let Some(&line) = lines.get(i) {
        if is_section_header(line) {
            break;
        }
        if let Some(anchor) = line.strip_prefix("@@") {
            // Several `@@` lines in a row narrow the search step by step.
            let stacked = current
                .as_ref()
                .is_some_and(|h| h.old.is_empty() && h.new.is_empty() && !h.eof);
            if !stacked {
                hunks.extend(current.take());
                current = Some(Hunk {
                    line: number(i),
                    ..Hunk::default()
                });
            }
            let anchor = anchor.trim().trim_end_matches("@@").trim();
            if let Some(hunk) = current.as_mut().filter(|_| !anchor.is_empty()) {
                hunk.anchors.push(anchor.to_string());
            }
        } else if line.trim() == "*** End of File" {
            let hunk = current.get_or_insert_with(|| Hunk {
                line: number(i),
                ..Hunk::default()
            });
            hunk.eof = true;
        } else if line.starts_with([' ', '-', '+']) || line.trim().is_empty() {
            if line.trim().is_empty() && !more_before_header(lines, i, body_line) {
                // Blank lines before the next section are not context.
                i += 1;
                continue;
            }
            let hunk = current.get_or_insert_with(|| Hunk {
                line: number(i),
                ..Hunk::default()
            });
            if hunk.eof {
                return Err(at(
                    number(i),
                    format!(
                        "in `{path}`: a hunk line after `*** End of File`; start a new hunk with `@@`"
                    ),
                ));
            }
            // By its first character, which may be any whitespace a model
            // wrote (U+2006 is three bytes).
            let (kind, rest) = line.split_at(line.chars().next().map_or(0, char::len_utf8));
            match kind {
                "-" => hunk.old.push(rest.to_string()),
                "+" => hunk.new.push(rest.to_string()),
                " " => {
                    hunk.old.push(rest.to_string());
                    hunk.new.push(rest.to_string());
                }
                // An empty or whitespace-only line: context whose leading
                // space was stripped on the way.
                _ => {
                    hunk.old.push(line.trim().to_string());
                    hunk.new.push(line.trim().to_string());
                }
            }
        } else {
            return Err(at(
                number(i),
                format!(
                    "in `*** Update File: {path}`: expected a hunk line starting with ` ` (context), `-` (remove), `+` (add) or `@@`, got `{}`",
                    preview(line)
                ),
            ));
        }
        i += 1;
    }
    hunks.extend(current);
    hunks.retain(|h| h.changes_something());
    Ok((hunks, i))
}

// ---- unified diffs --------------------------------------------------------

/// A unified diff's file section being read.
#[derive(Default)]
struct Section {
    line: usize,
    /// The two paths of a `diff --git a/x b/y` line.
    git: Option<(String, String)>,
    /// The `---` and `+++` paths (`None` inside: /dev/null).
    files: Option<(Option<String>, Option<String>)>,
    rename: (Option<String>, Option<String>),
    new_file: bool,
    deleted_file: bool,
    hunks: Vec<Hunk>,
}

fn parse_unified(lines: &[&str], offset: usize) -> Result<Patch, ParseError> {
    let number = |i: usize| offset + i + 1;
    let mut patch = Patch::default();
    let mut section: Option<Section> = None;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if let Some(paths) = line.strip_prefix("diff --git ") {
            finish(section.take(), &mut patch)?;
            section = Some(Section {
                line: number(i),
                git: paths
                    .split_once(" b/")
                    .map(|(a, b)| (unquote(a), format!("b/{}", unquote(b)))),
                ..Section::default()
            });
        } else if line.starts_with("--- ")
            && lines.get(i + 1).is_some_and(|n| n.starts_with("+++ "))
        {
            let files = (diff_path(&line[4..]), diff_path(&lines[i + 1][4..]));
            // These lines belong to the `diff --git` line before them when
            // they name its paths; otherwise they start a file of their own.
            let belongs = section.as_ref().is_some_and(|s| {
                s.files.is_none()
                    && s.hunks.is_empty()
                    && s.git.as_ref().is_none_or(|(a, b)| {
                        files.0.as_ref().is_none_or(|old| old == a)
                            && files.1.as_ref().is_none_or(|new| new == b)
                    })
            });
            if !belongs {
                finish(section.take(), &mut patch)?;
            }
            let s = section.get_or_insert_with(|| Section {
                line: number(i),
                ..Section::default()
            });
            s.files = Some(files);
            i += 1;
        } else if line.starts_with("@@") {
            let Some(s) = section.as_mut().filter(|s| s.files.is_some()) else {
                return Err(at(
                    number(i),
                    "a hunk with no file header before it (`--- a/path` and `+++ b/path`)",
                ));
            };
            let (hunk, next) = parse_unified_hunk(lines, i, offset)?;
            s.hunks.push(hunk);
            i = next;
            continue;
        } else if let Some(s) = section.as_mut() {
            if let Some(from) = line.strip_prefix("rename from ") {
                s.rename.0 = Some(unquote(from));
            } else if let Some(to) = line.strip_prefix("rename to ") {
                s.rename.1 = Some(unquote(to));
            } else if line.starts_with("new file mode") {
                s.new_file = true;
            } else if line.starts_with("deleted file mode") {
                s.deleted_file = true;
            } else if line.starts_with("Binary files ") || line.starts_with("GIT binary patch") {
                return Err(at(
                    number(i),
                    "binary patches are not supported; use write_file for binary content",
                ));
            } else if line.starts_with("copy from ") {
                return Err(at(
                    number(i),
                    "git copy patches are not supported; add the copy as a new file",
                ));
            }
            // Anything else (index and mode lines, commit text) says
            // nothing about content.
        }
        i += 1;
    }
    finish(section, &mut patch)?;
    Ok(patch)
}

/// Turns a finished section into a file patch; a section that changes no
/// content (a mode change) adds nothing.
fn finish(section: Option<Section>, patch: &mut Patch) -> Result<(), ParseError> {
    let Some(s) = section else {
        return Ok(());
    };
    let (old, new) = match (s.files, &s.git) {
        (Some(files), _) => files,
        // Git writes no `---`/`+++` for an empty new or deleted file.
        (None, Some((a, b))) => (
            (!s.new_file).then(|| a.clone()),
            (!s.deleted_file).then(|| b.clone()),
        ),
        (None, None) => return Ok(()),
    };
    // Git's a/ and b/ prefixes: stripped when the diff is git's, or when
    // the sides there are carry them.
    let prefixed = s.git.is_some()
        || match (&old, &new) {
            (Some(o), Some(n)) => o.starts_with("a/") && n.starts_with("b/"),
            (Some(o), None) => o.starts_with("a/"),
            (None, Some(n)) => n.starts_with("b/"),
            (None, None) => false,
        };
    let strip = |path: Option<String>, prefix: &str| {
        path.map(|p| match p.strip_prefix(prefix) {
            Some(rest) if prefixed => rest.to_string(),
            _ => p,
        })
    };
    let (old, new) = match s.rename {
        (Some(from), Some(to)) => (Some(from), Some(to)),
        _ => (strip(old, "a/"), strip(new, "b/")),
    };
    let mut hunks = s.hunks;
    let (op, path, move_to) = match (old, new) {
        (None, Some(new)) => {
            // A new file is its added lines, whatever the hunk headers said.
            let mut all = Hunk {
                line: s.line,
                ..Hunk::default()
            };
            for hunk in hunks {
                all.new.extend(hunk.new);
                all.new_no_newline |= hunk.new_no_newline;
            }
            hunks = vec![all];
            (Op::Add, new, None)
        }
        (Some(old), None) => (Op::Delete, old, None),
        (Some(old), Some(new)) => {
            let move_to = (old != new).then_some(new);
            if hunks.is_empty() && move_to.is_none() {
                return Ok(());
            }
            (Op::Update, old, move_to)
        }
        (None, None) => return Err(at(s.line, "both sides of the file header are /dev/null")),
    };
    patch.files.push(FilePatch {
        op,
        path,
        move_to,
        line: s.line,
        hunks,
    });
    Ok(())
}

/// A path of a `---`/`+++` line: `None` for /dev/null; timestamps after a
/// tab dropped, git's quoting undone.
fn diff_path(raw: &str) -> Option<String> {
    let path = raw.split('\t').next().unwrap_or(raw).trim_end();
    if path == "/dev/null" {
        None
    } else {
        Some(unquote(path))
    }
}

fn unquote(path: &str) -> String {
    let path = path.trim();
    match path.strip_prefix('"').and_then(|p| p.strip_suffix('"')) {
        Some(inner) => inner
            .replace("\\\"", "\"")
            .replace("\\\\", "\\")
            .replace("\\t", "\t"),
        None => path.to_string(),
    }
}

/// Parses `@@ -a,b +c,d @@` at `lines[i]` and its body. The counts say
/// where the body ends, but models miscount, so a body that goes on past
/// them is read on while its lines look like hunk lines.
fn parse_unified_hunk(
    lines: &[&str],
    i: usize,
    offset: usize,
) -> Result<(Hunk, usize), ParseError> {
    let number = |i: usize| offset + i + 1;
    let bad = || {
        at(
            number(i),
            format!(
                "malformed hunk header `{}`: expected `@@ -start,count +start,count @@`",
                preview(lines[i])
            ),
        )
    };
    let inner = lines[i].strip_prefix("@@").ok_or_else(bad)?;
    let (ranges, _) = inner.split_once("@@").ok_or_else(bad)?;
    let mut ranges = ranges.split_whitespace();
    let range = |text: Option<&str>, sign: char| -> Option<(usize, usize)> {
        let text = text?.strip_prefix(sign)?;
        let (start, count) = match text.split_once(',') {
            Some((s, c)) => (s.parse().ok()?, c.parse().ok()?),
            None => (text.parse().ok()?, 1),
        };
        Some((start, count))
    };
    let (old_start, old_count) = range(ranges.next(), '-').ok_or_else(bad)?;
    let (_, new_count) = range(ranges.next(), '+').ok_or_else(bad)?;
    let mut hunk = Hunk {
        line: number(i),
        // `-10,0` inserts after line 10; `-10,3` starts at line 10.
        hint: Some(if old_count == 0 {
            old_start
        } else {
            old_start.saturating_sub(1)
        }),
        ..Hunk::default()
    };
    let (mut old_left, mut new_left) = (old_count, new_count);
    let mut last_kind = ' ';
    let mut j = i + 1;
    while let Some(&line) = lines.get(j) {
        let counted = old_left > 0 || new_left > 0;
        let next_file =
            line.starts_with("--- ") && lines.get(j + 1).is_some_and(|n| n.starts_with("+++ "));
        if line.starts_with("@@")
            || line.starts_with("diff ")
            || next_file
            || (!counted && line == "-- ")
        {
            break;
        }
        if line.starts_with('\\') {
            // `\ No newline at end of file`, about the line before.
            match last_kind {
                '-' => hunk.old_no_newline = true,
                '+' => hunk.new_no_newline = true,
                _ => {
                    hunk.old_no_newline = true;
                    hunk.new_no_newline = true;
                }
            }
            j += 1;
            continue;
        }
        let kind = line.chars().next().unwrap_or(' ');
        let rest = line.get(1..).unwrap_or("");
        match kind {
            '-' => {
                hunk.old.push(rest.to_string());
                old_left = old_left.saturating_sub(1);
            }
            '+' => {
                hunk.new.push(rest.to_string());
                new_left = new_left.saturating_sub(1);
            }
            ' ' => {
                hunk.old.push(rest.to_string());
                hunk.new.push(rest.to_string());
                old_left = old_left.saturating_sub(1);
                new_left = new_left.saturating_sub(1);
            }
            // A blank line inside the counted body is context that lost
            // its space; past the counts it ends the hunk.
            _ if line.trim().is_empty() && counted => {
                hunk.old.push(String::new());
                hunk.new.push(String::new());
                old_left = old_left.saturating_sub(1);
                new_left = new_left.saturating_sub(1);
            }
            _ => break,
        }
        last_kind = kind;
        j += 1;
    }
    if hunk.old.is_empty() && hunk.new.is_empty() {
        return Err(at(number(i), "the hunk has no lines"));
    }
    Ok((hunk, j))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codex_format_sections_and_hunks() {
        let patch = parse(
            "*** Begin Patch\n*** Add File: a.txt\n+one\n+\n+two\n*** Update File: b.rs\n*** Move to: c.rs\n@@ fn main() {\n-    old();\n+    new();\n context\n@@\n-x\n+y\n*** End of File\n*** Delete File: d.txt\n*** End Patch\n",
        )
        .unwrap();
        assert_eq!(patch.files.len(), 3);
        assert_eq!(patch.files[0].op, Op::Add);
        assert_eq!(patch.files[0].hunks[0].new, ["one", "", "two"]);
        let update = &patch.files[1];
        assert_eq!(
            (update.op, update.path.as_str(), update.move_to.as_deref()),
            (Op::Update, "b.rs", Some("c.rs"))
        );
        assert_eq!(update.hunks.len(), 2);
        assert_eq!(update.hunks[0].anchors, ["fn main() {"]);
        assert_eq!(update.hunks[0].old, ["    old();", "context"]);
        assert_eq!(update.hunks[0].new, ["    new();", "context"]);
        assert!(update.hunks[1].eof);
        assert_eq!(patch.files[2].op, Op::Delete);
    }

    #[test]
    fn codex_errors_name_the_line() {
        let err =
            parse("*** Begin Patch\n*** Update File: a\n@@\n-x\nbogus\n*** End Patch").unwrap_err();
        assert!(
            err.starts_with("line 5: in `*** Update File: a`: expected a hunk line"),
            "{err}"
        );
        let err = parse("*** Begin Patch\n*** Update File: a\n-x\n+y\n").unwrap_err();
        assert!(err.contains("ends without `*** End Patch`"), "{err}");
        let err = parse("*** Begin Patch\n*** Frobnicate: a\n*** End Patch").unwrap_err();
        assert!(
            err.starts_with("line 2: expected `*** Add File: <path>`"),
            "{err}"
        );
        let err = parse("*** Begin Patch\n*** Add File: a\nno plus\n*** End Patch").unwrap_err();
        assert!(
            err.starts_with("line 3: in `*** Add File: a` every line must start with `+`"),
            "{err}"
        );
        let err = parse("hello").unwrap_err();
        assert!(
            err.starts_with("line 1: `hello` starts no known patch format"),
            "{err}"
        );
    }

    #[test]
    fn heredoc_wrapping_is_undone() {
        let patch =
            parse("apply_patch <<'EOF'\n*** Begin Patch\n*** Delete File: x\n*** End Patch\nEOF\n")
                .unwrap();
        assert_eq!(patch.files[0].path, "x");
    }

    #[test]
    fn unified_diffs_with_git_headers_renames_adds_and_deletes() {
        let patch = parse(
            "diff --git a/src/a.rs b/src/a.rs\nindex 1..2 100644\n--- a/src/a.rs\n+++ b/src/a.rs\n@@ -1,3 +1,3 @@ fn x\n one\n-two\n+TWO\n three\n\\ No newline at end of file\n\
diff --git a/old.txt b/new.txt\nsimilarity index 100%\nrename from old.txt\nrename to new.txt\n\
--- /dev/null\n+++ b/added.txt\n@@ -0,0 +1,2 @@\n+a\n+b\n\
--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n",
        )
        .unwrap();
        let summary: Vec<_> = patch
            .files
            .iter()
            .map(|f| (f.op, f.path.as_str(), f.move_to.as_deref()))
            .collect();
        assert_eq!(
            summary,
            [
                (Op::Update, "src/a.rs", None),
                (Op::Update, "old.txt", Some("new.txt")),
                (Op::Add, "added.txt", None),
                (Op::Delete, "gone.txt", None)
            ]
        );
        let hunk = &patch.files[0].hunks[0];
        assert_eq!(hunk.hint, Some(0));
        assert_eq!(hunk.old, ["one", "two", "three"]);
        assert!(hunk.old_no_newline && hunk.new_no_newline);
        assert_eq!(patch.files[2].hunks[0].new, ["a", "b"]);
    }

    #[test]
    fn unified_diffs_tolerate_miscounted_hunks_and_plain_paths() {
        // Header says 2 lines but the body has 4; a removed line that looks
        // like a header is still a removed line.
        let patch = parse(
            "--- x.sql\n+++ x.sql\n@@ -1,2 +1,2 @@\n a\n--- comment\n+-- new comment\n b\n c\n",
        )
        .unwrap();
        let hunk = &patch.files[0].hunks[0];
        assert_eq!(patch.files[0].path, "x.sql");
        assert_eq!(hunk.old, ["a", "-- comment", "b", "c"]);
        let err = parse("--- a/x\n+++ b/x\n@@ -1,2 +1,2\n").unwrap_err();
        assert!(err.starts_with("line 3: malformed hunk header"), "{err}");
        let err = parse("@@ -1 +1 @@\n-a\n+b\n").unwrap_err();
        assert!(
            err.starts_with("line 1: a hunk with no file header"),
            "{err}"
        );
    }
}
