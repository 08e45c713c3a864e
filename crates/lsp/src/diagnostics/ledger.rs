//! The per-run ledger that decides what a write introduced: per file, the
//! problems last seen, counted by what they say rather than where they
//! are, so that a problem that only moved is not new.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use lsp_types::{Diagnostic, DiagnosticSeverity, DiagnosticTag};

/// The identity of a problem, deliberately without its position: a
/// problem that only moved is the same problem.
type Key = (u8, String, String);

fn key(d: &Diagnostic) -> Key {
    let code = match &d.code {
        Some(lsp_types::NumberOrString::Number(n)) => n.to_string(),
        Some(lsp_types::NumberOrString::String(s)) => s.clone(),
        None => String::new(),
    };
    (severity_rank(d), code, d.message.clone())
}

pub(super) fn severity_rank(d: &Diagnostic) -> u8 {
    match d.severity {
        Some(DiagnosticSeverity::WARNING) => 2,
        _ => 1,
    }
}

/// Errors and warnings only: hints, information and code the server
/// merely greys out as unnecessary are noise for a model.
pub fn relevant(d: &Diagnostic) -> bool {
    let severe = matches!(
        d.severity,
        None | Some(DiagnosticSeverity::ERROR) | Some(DiagnosticSeverity::WARNING)
    );
    let unnecessary = d
        .tags
        .as_ref()
        .is_some_and(|tags| tags.contains(&DiagnosticTag::UNNECESSARY));
    severe && !unnecessary
}

/// What a fresh set of diagnostics means against the ledger.
#[derive(Debug, Clone, PartialEq)]
pub enum Delta {
    /// Problems whose count went up.
    New(Vec<Diagnostic>),
    /// The run had no earlier diagnostics for the file: these are all its
    /// problems, not necessarily introduced.
    NoBaseline(Vec<Diagnostic>),
}

/// Per file, the multiset of (severity, code, message) last seen.
#[derive(Debug, Default)]
pub struct Ledger {
    files: HashMap<PathBuf, HashMap<Key, usize>>,
}

fn multiset(items: &[Diagnostic]) -> HashMap<Key, usize> {
    let mut set = HashMap::new();
    for d in items.iter().filter(|d| relevant(d)) {
        *set.entry(key(d)).or_insert(0) += 1;
    }
    set
}

impl Ledger {
    /// How many files have a baseline.
    pub fn baselines(&self) -> usize {
        self.files.len()
    }

    /// Whether `path` has a baseline.
    pub fn has(&self, path: &Path) -> bool {
        self.files.contains_key(path)
    }

    /// Forgets `path` (closed in its server): when it opens again, what it
    /// has then is the baseline.
    pub fn forget(&mut self, path: &Path) {
        self.files.remove(path);
    }

    /// Takes `items` as the baseline of `path` unless it has one.
    pub fn seed(&mut self, path: &Path, items: &[Diagnostic]) {
        self.files
            .entry(path.to_path_buf())
            .or_insert_with(|| multiset(items));
    }

    /// Compares `items` with the ledger, then records them, so that a
    /// problem fixed and brought back is new again.
    pub fn update(&mut self, path: &Path, items: &[Diagnostic]) -> Delta {
        let mut current: Vec<Diagnostic> = items.iter().filter(|d| relevant(d)).cloned().collect();
        current.sort_by_key(|d| (d.range.start.line, d.range.start.character));
        let before = self.files.insert(path.to_path_buf(), multiset(&current));
        let Some(before) = before else {
            return Delta::NoBaseline(current);
        };
        // For each key, the instances past its old count are the new ones
        // (the last ones in the file: where they are is not part of the
        // key, so which of equal problems is "new" is a convention).
        let mut seen: HashMap<Key, usize> = HashMap::new();
        let mut new = Vec::new();
        for d in current {
            let k = key(&d);
            let old = before.get(&k).copied().unwrap_or(0);
            let index = seen.entry(k).or_insert(0);
            *index += 1;
            if *index > old {
                new.push(d);
            }
        }
        Delta::New(new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lsp_types::{NumberOrString, Position, Range};

    fn diag(line: u32, message: &str, severity: DiagnosticSeverity) -> Diagnostic {
        Diagnostic {
            range: Range::new(Position::new(line, 0), Position::new(line, 1)),
            severity: Some(severity),
            code: Some(NumberOrString::String("E1".into())),
            message: message.into(),
            ..Diagnostic::default()
        }
    }

    #[test]
    fn the_ledger_reports_counts_that_went_up_and_ignores_moves() {
        let mut ledger = Ledger::default();
        let path = Path::new("/w/a.py");
        let err = |line| diag(line, "undefined name x", DiagnosticSeverity::ERROR);
        assert_eq!(ledger.update(path, &[]), Delta::NoBaseline(vec![]));
        // Introduced.
        assert_eq!(ledger.update(path, &[err(3)]), Delta::New(vec![err(3)]));
        // Moved four lines down: not new.
        assert_eq!(ledger.update(path, &[err(7)]), Delta::New(vec![]));
        // A second one of the same kind: one new.
        assert_eq!(
            ledger.update(path, &[err(7), err(9)]),
            Delta::New(vec![err(9)])
        );
        // Fixed, then back: new again.
        assert_eq!(ledger.update(path, &[]), Delta::New(vec![]));
        assert_eq!(ledger.update(path, &[err(2)]), Delta::New(vec![err(2)]));
    }

    #[test]
    fn hints_and_unnecessary_code_are_dropped_and_seeds_do_not_overwrite() {
        let mut hint = diag(1, "unused", DiagnosticSeverity::HINT);
        assert!(!relevant(&hint));
        hint.severity = Some(DiagnosticSeverity::WARNING);
        hint.tags = Some(vec![DiagnosticTag::UNNECESSARY]);
        assert!(!relevant(&hint));
        let warning = diag(1, "shadowed", DiagnosticSeverity::WARNING);
        assert!(relevant(&warning));

        let mut ledger = Ledger::default();
        let path = Path::new("/w/b.py");
        ledger.seed(path, std::slice::from_ref(&warning));
        ledger.seed(path, &[]);
        assert_eq!(
            ledger.update(path, &[warning.clone(), hint]),
            Delta::New(vec![])
        );
    }
}
