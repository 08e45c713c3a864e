//! Pattern compilation (SPEC §7): a fragment is parsed by the file's own
//! grammar inside a ladder of scaffolds, and the pattern node is the one
//! whose byte range is exactly the fragment's. Contexts that accept the
//! fragment and mean different things are all kept and searched together.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::ops::Range;

use ast_grep_core::matcher::{Matcher, MatcherExt, PatternNode};
use ast_grep_core::meta_var::{MetaVarEnv, MetaVariable};
use ast_grep_core::replacer::{Replacer, TemplateFix};
use ast_grep_core::tree_sitter::StrDoc;
use ast_grep_core::{AstGrep, Language, Node, NodeMatch, Pattern};
use ast_grep_language::SupportLang;
use memchr::memmem;

use crate::lang::{self, Scaffold};

/// A parsed file (its text and tree).
pub type AstRoot = AstGrep<StrDoc<SupportLang>>;
type AstNode<'r> = Node<'r, StrDoc<SupportLang>>;

/// A compiled pattern: one or more alternatives, searched together.
pub struct Query {
    /// The grammar the fragment was parsed with.
    pub lang: SupportLang,
    /// The pattern as the caller gave it.
    pub source: String,
    alternatives: Vec<Alternative>,
    /// Metavariable names bound by the pattern; `true` for `$$$` ones.
    vars: BTreeMap<String, bool>,
    /// Things the caller should know about how the pattern was read
    /// (metavariables that ended up as text).
    pub notes: Vec<String>,
}

/// One reading of the fragment in one context.
struct Alternative {
    context: &'static str,
    shape: Shape,
    /// What the fragment compiled to, for people.
    kind: String,
    /// Text every match must contain (named leaves of the pattern).
    literals: Vec<Literal>,
    /// Root kind ids a match can have; `None` when any node can match.
    root_kinds: Option<Vec<u16>>,
}

/// A named leaf's text, which any match holds verbatim as a whole token.
struct Literal {
    finder: memmem::Finder<'static>,
    /// Identifier-like (`unwrap`, `42`): an occurrence glued to more
    /// identifier characters (`unwrap_or`) is another token and does not
    /// count.
    word: bool,
}

impl Literal {
    fn new(text: &str) -> Self {
        Literal {
            finder: memmem::Finder::new(text.as_bytes()).into_owned(),
            word: text.bytes().all(is_word_byte),
        }
    }

    fn occurs_in(&self, text: &[u8]) -> bool {
        if !self.word {
            return self.finder.find(text).is_some();
        }
        let len = self.finder.needle().len();
        self.finder.find_iter(text).any(|at| {
            let before = at.checked_sub(1).map(|i| text[i]);
            let after = text.get(at + len).copied();
            !before.is_some_and(is_word_byte) && !after.is_some_and(is_word_byte)
        })
    }
}

/// ASCII identifier bytes. Anything else (including non-ASCII) counts as
/// a boundary, so the filter only ever lets more files through, never
/// fewer.
fn is_word_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

enum Shape {
    Node(Pattern),
    /// Consecutive siblings (`let a = 1; let b = 2;`).
    Sequence(Vec<Pattern>),
}

/// Why a fragment could not be compiled; the message lists every
/// context tried and where each failed.
#[derive(Debug, Clone, PartialEq)]
pub struct CompileError(pub String);

impl std::fmt::Display for CompileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// One match in a file.
#[derive(Debug, Clone)]
pub struct Found {
    /// Bytes of the file the match covers (for an edit: the bytes it
    /// replaces).
    pub range: Range<usize>,
    /// Captured metavariables, `$X` / `$$$ARGS` with their text, in name
    /// order.
    pub captures: Vec<(String, String)>,
    /// The rewrite of this match, when one was asked for.
    pub replacement: Option<String>,
}

impl Query {
    /// Compiles `source` for `lang`.
    pub fn compile(source: &str, lang: SupportLang) -> Result<Query, CompileError> {
        let trimmed = source.trim();
        if trimmed.is_empty() {
            return Err(CompileError(
                "pattern: empty; give a code fragment such as `$X.unwrap()`".into(),
            ));
        }
        let processed = lang.pre_process_pattern(trimmed).into_owned();
        let mut variants = vec![processed.clone()];
        if lang::has_braced_statements(lang) {
            let statements = terminate_lone_multis(&processed, lang.expando_char());
            if statements != processed {
                variants.insert(0, statements);
            }
        }
        let mut alternatives: Vec<Alternative> = Vec::new();
        let mut signatures = BTreeSet::new();
        let mut failures: Vec<(&'static str, String)> = Vec::new();
        let mut notes = Vec::new();
        // People write statement patterns without the final `;` all the
        // time; where the language ends statements with one and no context
        // takes the fragment as written, it is tried again with the `;`.
        let with_semicolon = (lang::ends_statements_with_semicolon(lang)
            && !processed.ends_with([';', '}']))
        .then(|| vec![format!("{processed};")]);
        let rounds = std::iter::once(variants).chain(with_semicolon);
        // The reasons reported are those of the fragment as written.
        let mut first_failures = None;
        for variants in rounds {
            if !alternatives.is_empty() {
                break;
            }
            if first_failures.is_none() && !failures.is_empty() {
                first_failures = Some(std::mem::take(&mut failures));
            }
            for scaffold in lang::scaffolds(lang) {
                let mut failure = None;
                for variant in &variants {
                    match try_context(variant, &scaffold, lang) {
                        Ok((alternative, signature, swallowed)) => {
                            failure = None;
                            for note in swallowed {
                                if !notes.contains(&note) {
                                    notes.push(note);
                                }
                            }
                            if signatures.insert(signature) {
                                alternatives.push(alternative);
                            }
                        }
                        Err(reason) if failure.is_none() => failure = Some(reason),
                        Err(_) => {}
                    }
                }
                if let Some(reason) = failure
                    && !alternatives.iter().any(|a| a.context == scaffold.name)
                {
                    failures.push((scaffold.name, reason));
                }
            }
        }
        if let Some(first) = first_failures {
            failures = first;
        }
        if alternatives.is_empty() {
            let mut message = format!(
                "pattern: `{trimmed}` does not parse as {} code in any context, so it was not searched. Tried:",
                lang::id(lang)
            );
            for (context, reason) in &failures {
                let _ = write!(message, "\n- {context}: {reason}");
            }
            message.push_str(
                "\nWrite the fragment as it would appear in real code (balanced brackets, a complete expression or statement); \
                 metavariables stand for whole nodes: `$X` one node, `$$$X` a run of them.",
            );
            return Err(CompileError(message));
        }
        let mut vars = BTreeMap::new();
        for alternative in &alternatives {
            match &alternative.shape {
                Shape::Node(pattern) => collect_vars(&pattern.node, &mut vars),
                Shape::Sequence(patterns) => {
                    for pattern in patterns {
                        collect_vars(&pattern.node, &mut vars);
                    }
                }
            }
        }
        Ok(Query {
            lang,
            source: trimmed.to_string(),
            alternatives,
            vars,
            notes,
        })
    }

    /// What the pattern compiled to, for results: `call_expression (as an
    /// initialiser expression)`, several joined with " or ".
    pub fn describe(&self) -> String {
        self.alternatives
            .iter()
            .map(|a| format!("`{}` ({})", a.kind, a.context))
            .collect::<Vec<_>>()
            .join(" or ")
    }

    /// The metavariables the pattern binds, with their sigils (`$X`,
    /// `$$$ARGS`); a rewrite may use only these.
    pub fn bound(&self) -> &BTreeMap<String, bool> {
        &self.vars
    }

    /// Whether a file's text can hold a match at all: every literal of
    /// some alternative occurs in it. Cheap, and it spares the parse of
    /// most files for most patterns.
    pub fn may_match(&self, text: &[u8]) -> bool {
        self.alternatives
            .iter()
            .any(|a| a.literals.iter().all(|literal| literal.occurs_in(text)))
    }

    /// Whether every match lies inside one top-level piece of a file and
    /// holds literal text, so parsing only the pieces [`Query::may_match`]
    /// accepts finds them all: each reading matches one node of a known
    /// kind (not a run of siblings, which can span pieces, nor `$X`, which
    /// can match the root) and has literal text.
    pub fn pieces_suffice(&self) -> bool {
        self.alternatives.iter().all(|a| {
            matches!(a.shape, Shape::Node(_)) && a.root_kinds.is_some() && !a.literals.is_empty()
        })
    }

    /// Whether a node of this kind can be a match's root.
    pub fn may_root_at(&self, kind: u16) -> bool {
        self.alternatives.iter().any(|a| {
            a.root_kinds
                .as_ref()
                .is_none_or(|kinds| kinds.contains(&kind))
        })
    }

    /// Every match in `root`, in document order (outer before inner); with
    /// `fix`, each carries its rewrite.
    pub fn find(&self, root: &AstRoot, fix: Option<&TemplateFix>) -> Vec<Found> {
        let mut found = Vec::new();
        let top = root.root();
        if self.pieces_suffice() && !self.may_root_at(top.kind_id()) {
            // Only the top-level pieces holding the literal text can hold
            // a match: the others are not walked.
            let text = root.source().as_bytes();
            for piece in top.children() {
                if self.may_match(&text[piece.range()]) {
                    self.find_under(piece, root.source(), fix, &mut found);
                }
            }
        } else {
            self.find_under(top, root.source(), fix, &mut found);
        }
        found
    }

    /// The matches at or under `start`, in document order.
    fn find_under<'r>(
        &self,
        start: AstNode<'r>,
        source: &str,
        fix: Option<&TemplateFix>,
        found: &mut Vec<Found>,
    ) {
        let any_kind = self.alternatives.iter().any(|a| a.root_kinds.is_none());
        for node in start.dfs() {
            let kind = node.kind_id();
            for alternative in &self.alternatives {
                let result = match &alternative.shape {
                    Shape::Node(pattern) => {
                        if !any_kind
                            && let Some(kinds) = &alternative.root_kinds
                            && !kinds.contains(&kind)
                        {
                            continue;
                        }
                        pattern.match_node(node.clone()).map(|m| {
                            let range = match fix {
                                Some(fix) => fix.get_replaced_range(&m, pattern),
                                None => m.range(),
                            };
                            (m, range)
                        })
                    }
                    Shape::Sequence(patterns) => match_sequence(&node, patterns),
                };
                if let Some((matched, range)) = result {
                    found.push(Found {
                        captures: captures(&matched, source, &self.vars),
                        replacement: fix.map(|fix| {
                            String::from_utf8_lossy(&fix.generate_replacement(&matched))
                                .into_owned()
                        }),
                        range,
                    });
                    // One match per node: alternatives are readings of the
                    // same fragment.
                    break;
                }
            }
        }
    }
}

/// The sequence starting at one of `parent`'s children, if any.
fn match_sequence<'r>(
    parent: &AstNode<'r>,
    patterns: &[Pattern],
) -> Option<(NodeMatch<'r, StrDoc<SupportLang>>, Range<usize>)> {
    let children: Vec<AstNode<'r>> = parent.children().filter(|c| !c.is_extra()).collect();
    if children.len() < patterns.len() {
        return None;
    }
    'start: for start in 0..=children.len() - patterns.len() {
        let mut env = Cow::Owned(MetaVarEnv::new());
        for (offset, pattern) in patterns.iter().enumerate() {
            if pattern
                .match_node_with_env(children[start + offset].clone(), &mut env)
                .is_none()
            {
                continue 'start;
            }
        }
        let first = children[start].clone();
        let range = first.range().start..children[start + patterns.len() - 1].range().end;
        return Some((NodeMatch::new(first, env.into_owned()), range));
    }
    None
}

fn captures(
    matched: &NodeMatch<'_, StrDoc<SupportLang>>,
    source: &str,
    vars: &BTreeMap<String, bool>,
) -> Vec<(String, String)> {
    let env = matched.get_env();
    let mut out = Vec::new();
    for (name, multi) in vars {
        if *multi {
            let nodes = env.get_multiple_matches(name);
            if let (Some(first), Some(last)) = (nodes.first(), nodes.last()) {
                out.push((
                    format!("$$${name}"),
                    source[first.range().start..last.range().end].to_string(),
                ));
            }
        } else if let Some(node) = env.get_match(name) {
            out.push((format!("${name}"), node.text().into_owned()));
        }
    }
    out
}

/// Tries one variant of the fragment in one scaffold: the alternative, a
/// signature of its meaning (to merge contexts that read it the same
/// way), and notes on metavariables that ended up inside text.
fn try_context(
    fragment: &str,
    scaffold: &Scaffold,
    lang: SupportLang,
) -> Result<(Alternative, String, Vec<String>), String> {
    let mut text = String::from(scaffold.prefix);
    let start = text.len() + scaffold.indent.len();
    for (index, line) in fragment.split('\n').enumerate() {
        if index > 0 {
            text.push('\n');
        }
        text.push_str(scaffold.indent);
        text.push_str(line);
    }
    let end = text.len();
    text.push_str(scaffold.suffix);

    let root = AstRoot::str(&text, lang);
    if let Some(problem) = first_problem(root.root(), lang) {
        return Err(describe_problem(&problem, &text, start, end, lang));
    }
    let nodes = select(root.root(), start, end).ok_or_else(|| {
        format!(
            "the fragment does not form whole syntax nodes here (it is part of a `{}`)",
            enclosing(root.root(), start, end).kind()
        )
    })?;
    let mut patterns = Vec::new();
    let mut kinds = Vec::new();
    for node in &nodes {
        let mut pattern = Pattern::from(node.clone());
        pattern.node = collapse_statement_multis(pattern.node, lang);
        if let PatternNode::MetaVar {
            meta_var: MetaVariable::MultiCapture(_) | MetaVariable::Multiple,
        } = &pattern.node
        {
            return Err(
                "a lone `$$$` matches a run of nodes and needs something around it, e.g. `foo($$$ARGS)` or `{ $$$BODY }`"
                    .into(),
            );
        }
        kinds.push(node.kind().into_owned());
        patterns.push(pattern);
    }
    let mut signature = String::new();
    for pattern in &patterns {
        sign(&pattern.node, &mut signature);
        signature.push('|');
    }
    let mut literals: Vec<String> = Vec::new();
    for pattern in &patterns {
        collect_literals(&pattern.node, &mut literals);
    }
    literals.sort_by_key(|l| std::cmp::Reverse(l.len()));
    literals.dedup();
    let swallowed = swallowed_metavars(fragment, &nodes, &patterns, lang);
    let (shape, kind, root_kinds) = if patterns.len() == 1 {
        let pattern = patterns.pop().expect("one pattern");
        let root_kinds = match &pattern.node {
            PatternNode::MetaVar { .. } => None,
            PatternNode::Terminal { kind_id, .. } | PatternNode::Internal { kind_id, .. } => {
                Some(vec![*kind_id])
            }
        };
        let kind = match &pattern.node {
            PatternNode::MetaVar { .. } => "any node".to_string(),
            _ => kinds.remove(0),
        };
        (Shape::Node(pattern), kind, root_kinds)
    } else {
        let kind = format!("a run of {} siblings: {}", patterns.len(), kinds.join(", "));
        (Shape::Sequence(patterns), kind, None)
    };
    Ok((
        Alternative {
            context: scaffold.name,
            shape,
            kind,
            literals: literals.iter().map(|l| Literal::new(l)).collect(),
            root_kinds,
        },
        signature,
        swallowed,
    ))
}

/// A syntax error in a parsed scaffold: an ERROR node or a MISSING one.
struct Problem {
    missing: bool,
    range: Range<usize>,
    kind: String,
}

/// The first real syntax problem; problems that are only a metavariable
/// standing where the grammar wants a statement (`{ $$$BODY }` without a
/// `;`) are not problems.
fn first_problem(root: AstNode<'_>, lang: SupportLang) -> Option<Problem> {
    if !root.get_inner_node().has_error() {
        return None;
    }
    for node in root.dfs() {
        if node.is_missing() {
            let parent_is_var = node
                .parent()
                .is_some_and(|p| lang.extract_meta_var(p.text().trim()).is_some());
            let after_var = node
                .prev()
                .is_some_and(|p| lang.extract_meta_var(p.text().trim()).is_some());
            if !(parent_is_var || after_var) {
                return Some(Problem {
                    missing: true,
                    range: node.range(),
                    kind: node.kind().into_owned(),
                });
            }
        } else if node.is_error() && lang.extract_meta_var(node.text().trim()).is_none() {
            return Some(Problem {
                missing: false,
                range: node.range(),
                kind: node.kind().into_owned(),
            });
        }
    }
    None
}

fn describe_problem(
    problem: &Problem,
    text: &str,
    start: usize,
    end: usize,
    lang: SupportLang,
) -> String {
    let at = if problem.range.start < start {
        "before the fragment".to_string()
    } else if problem.range.start >= end {
        "at the end of the fragment".to_string()
    } else {
        let offset = problem.range.start - start;
        let fragment = &text[start..end];
        let line = fragment[..offset].matches('\n').count() + 1;
        let column = fragment[..offset]
            .rsplit('\n')
            .next()
            .map_or(0, |l| l.chars().count())
            + 1;
        format!("at line {line}, column {column} of the fragment")
    };
    if problem.missing {
        format!("missing `{}` {at}", problem.kind)
    } else {
        let mut bad = restore_sigils(&text[problem.range.clone()], lang);
        if bad.chars().count() > 40 {
            bad = bad.chars().take(40).collect::<String>() + "…";
        }
        format!("unexpected `{}` {at}", bad.trim())
    }
}

/// The pattern's text with the parser's stand-in for `$` turned back.
fn restore_sigils(text: &str, lang: SupportLang) -> String {
    let expando = lang.expando_char();
    if expando == '$' {
        text.to_string()
    } else {
        text.replace(expando, "$")
    }
}

/// The nodes whose span is exactly `start..end`: one node (the innermost
/// of a chain of nodes sharing the span), or a run of siblings.
fn select<'r>(root: AstNode<'r>, start: usize, end: usize) -> Option<Vec<AstNode<'r>>> {
    let mut node = root;
    loop {
        let inner = node
            .children()
            .find(|c| c.range().start <= start && end <= c.range().end && !c.is_missing());
        match inner {
            Some(child) => node = child,
            None => break,
        }
    }
    if node.range() == (start..end) {
        return Some(vec![node]);
    }
    let children: Vec<AstNode<'r>> = node
        .children()
        .filter(|c| !c.is_missing() && !c.is_extra())
        .collect();
    let first = children.iter().position(|c| c.range().start == start)?;
    let last = children.iter().position(|c| c.range().end == end)?;
    (last > first).then(|| children[first..=last].to_vec())
}

/// The smallest node holding `start..end`, for messages.
fn enclosing<'r>(root: AstNode<'r>, start: usize, end: usize) -> AstNode<'r> {
    let mut node = root;
    loop {
        let inner = node
            .children()
            .find(|c| c.range().start <= start && end <= c.range().end);
        match inner {
            Some(child) => node = child,
            None => return node,
        }
    }
}

/// `{ $$$BODY }` → `{ $$$BODY; }` where statements end with `;`, so the
/// braces read as a block of statements rather than a set or object
/// literal. Both readings are tried.
fn terminate_lone_multis(fragment: &str, expando: char) -> String {
    let sigil: String = std::iter::repeat_n(expando, 3).collect();
    let mut out = String::with_capacity(fragment.len() + 8);
    let mut rest = fragment;
    while let Some(at) = rest.find(&sigil) {
        let (before, after) = rest.split_at(at);
        out.push_str(before);
        let name_len = after[sigil.len()..]
            .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
            .unwrap_or(after.len() - sigil.len());
        let token = &after[..sigil.len() + name_len];
        out.push_str(token);
        rest = &after[token.len()..];
        let opened = before.trim_end().ends_with('{');
        let closed = rest.trim_start().starts_with('}');
        if opened && closed {
            out.push(';');
        }
    }
    out.push_str(rest);
    out
}

/// `$$$BODY;` as a statement is the run itself: drop the statement node
/// around it so it matches any number of statements.
fn collapse_statement_multis(node: PatternNode, lang: SupportLang) -> PatternNode {
    match node {
        PatternNode::Internal { kind_id, children } => {
            let children: Vec<PatternNode> = children
                .into_iter()
                .map(|c| collapse_statement_multis(c, lang))
                .collect();
            if let [
                PatternNode::MetaVar {
                    meta_var: meta_var @ (MetaVariable::MultiCapture(_) | MetaVariable::Multiple),
                },
                PatternNode::Terminal {
                    text,
                    is_named: false,
                    ..
                },
            ] = children.as_slice()
                && text == ";"
                && lang::has_braced_statements(lang)
            {
                return PatternNode::MetaVar {
                    meta_var: meta_var.clone(),
                };
            }
            PatternNode::Internal { kind_id, children }
        }
        other => other,
    }
}

/// A text form of a pattern's meaning: kinds, leaf texts, metavariables.
fn sign(node: &PatternNode, out: &mut String) {
    match node {
        PatternNode::MetaVar { meta_var } => {
            let _ = write!(out, "{meta_var:?}");
        }
        PatternNode::Terminal { text, kind_id, .. } => {
            let _ = write!(out, "{kind_id}:{text:?}");
        }
        PatternNode::Internal { kind_id, children } => {
            let _ = write!(out, "{kind_id}(");
            for child in children {
                sign(child, out);
                out.push(',');
            }
            out.push(')');
        }
    }
}

/// Named leaves: their text must appear verbatim in any match.
fn collect_literals(node: &PatternNode, out: &mut Vec<String>) {
    match node {
        PatternNode::Terminal {
            text,
            is_named: true,
            ..
        } if !text.trim().is_empty() => out.push(text.clone()),
        PatternNode::Internal { children, .. } => {
            for child in children {
                collect_literals(child, out);
            }
        }
        _ => {}
    }
}

fn collect_vars(node: &PatternNode, out: &mut BTreeMap<String, bool>) {
    match node {
        PatternNode::MetaVar { meta_var } => match meta_var {
            MetaVariable::Capture(name, _) => {
                out.insert(name.clone(), false);
            }
            MetaVariable::MultiCapture(name) => {
                out.insert(name.clone(), true);
            }
            MetaVariable::Dropped(_) | MetaVariable::Multiple => {}
        },
        PatternNode::Internal { children, .. } => {
            for child in children {
                collect_vars(child, out);
            }
        }
        PatternNode::Terminal { .. } => {}
    }
}

fn count_metavars(node: &PatternNode) -> usize {
    match node {
        PatternNode::MetaVar { .. } => 1,
        PatternNode::Internal { children, .. } => children.iter().map(count_metavars).sum(),
        PatternNode::Terminal { .. } => 0,
    }
}

/// Metavariable tokens written in `text`: (`$X` or `$$$X` as written,
/// name, byte offset). `$_` and bare `$$$` count too.
pub(crate) fn metavar_tokens(text: &str, sigil: char) -> Vec<(String, String, usize)> {
    let mut tokens = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if c != sigil {
            continue;
        }
        let mut sigils = 1;
        while sigils < 3 && chars.peek().is_some_and(|&(_, c)| c == sigil) {
            chars.next();
            sigils += 1;
        }
        let mut name = String::new();
        while let Some(&(_, c)) = chars.peek() {
            if c.is_ascii_uppercase() || c == '_' || (!name.is_empty() && c.is_ascii_digit()) {
                name.push(c);
                chars.next();
            } else {
                break;
            }
        }
        if (sigils == 1 && !name.is_empty()) || sigils == 3 {
            let written = format!("{}{name}", "$".repeat(sigils));
            tokens.push((written, name, at));
        }
    }
    tokens
}

/// Metavariables the grammar read as plain text (inside a string, a
/// comment): explained, so a zero-match result is not a mystery.
fn swallowed_metavars(
    fragment: &str,
    nodes: &[AstNode<'_>],
    patterns: &[Pattern],
    lang: SupportLang,
) -> Vec<String> {
    let written = metavar_tokens(fragment, lang.expando_char());
    let compiled: usize = patterns.iter().map(|p| count_metavars(&p.node)).sum();
    if written.len() <= compiled {
        return Vec::new();
    }
    let mut notes = Vec::new();
    for node in nodes {
        for leaf in node.dfs().filter(|n| n.is_leaf()) {
            let text = leaf.text();
            if lang.extract_meta_var(text.trim()).is_some() {
                continue;
            }
            for (token, _, _) in metavar_tokens(&text, lang.expando_char()) {
                let parent = leaf.parent().map(|p| p.kind().into_owned());
                notes.push(format!(
                    "`{token}` is inside a `{}`{} where the grammar sees plain text, so it is not a metavariable: \
                     the pattern only matches code that literally contains `{token}` there. Put a metavariable \
                     where the grammar has a node (an interpolation such as `{{$X}}` or `${{$X}}`), or match the \
                     whole string or comment with one `$S`.",
                    leaf.kind(),
                    parent.map(|p| format!(" (in a `{p}`)")).unwrap_or_default(),
                ));
            }
        }
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metavar_tokens_are_found_as_written() {
        let tokens = metavar_tokens("f($A, $$$REST) + $_ + $$$ + $5 + $a", '$');
        let written: Vec<&str> = tokens.iter().map(|t| t.0.as_str()).collect();
        assert_eq!(written, ["$A", "$$$REST", "$_", "$$$"]);
    }

    #[test]
    fn identifier_literals_only_count_as_whole_tokens() {
        let unwrap = Literal::new("unwrap");
        assert!(unwrap.occurs_in(b"x.unwrap_or(1); y.unwrap()"));
        assert!(!unwrap.occurs_in(b"x.unwrap_or(1); unwrapped"));
        assert!(unwrap.occurs_in(b"unwrap"));
        assert!(unwrap.occurs_in("é\u{301}unwrap".as_bytes()));
        let string = Literal::new("a b");
        assert!(string.occurs_in(b"xa by"));
    }

    #[test]
    fn lone_multis_in_braces_become_statements() {
        assert_eq!(
            terminate_lone_multis("if ($C) { $$$ } else {$$$B}", '$'),
            "if ($C) { $$$; } else {$$$B;}"
        );
        assert_eq!(terminate_lone_multis("f($$$ARGS)", '$'), "f($$$ARGS)");
    }
}
