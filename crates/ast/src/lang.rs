//! The languages this build can parse, their ids, and the scaffolds a
//! pattern fragment is tried in.

use std::path::Path;

use ast_grep_core::Language as _;
use ast_grep_language::SupportLang;

/// Somewhere a fragment can stand: the text around it. `indent` is put
/// before every line of the fragment (Python and other indentation
/// languages need it inside a body).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Scaffold {
    /// Shown in errors and results: "as a statement in a function body".
    pub name: &'static str,
    pub prefix: &'static str,
    pub suffix: &'static str,
    pub indent: &'static str,
}

const fn ctx(name: &'static str, prefix: &'static str, suffix: &'static str) -> Scaffold {
    Scaffold {
        name,
        prefix,
        suffix,
        indent: "",
    }
}

const fn indented(name: &'static str, prefix: &'static str, suffix: &'static str) -> Scaffold {
    Scaffold {
        name,
        prefix,
        suffix,
        indent: "    ",
    }
}

const TOP: Scaffold = ctx("at top level", "", "");
const STATEMENT: &str = "as a statement in a function body";
const EXPRESSION: &str = "as an initialiser expression";
const MEMBER: &str = "as a class member";

/// Every language this build was compiled with (cargo features), in the
/// order they are listed to the model.
pub(crate) fn enabled() -> Vec<SupportLang> {
    let mut langs = Vec::new();
    if cfg!(feature = "bash") {
        langs.push(SupportLang::Bash);
    }
    if cfg!(feature = "c") {
        langs.push(SupportLang::C);
    }
    if cfg!(feature = "cpp") {
        langs.push(SupportLang::Cpp);
    }
    if cfg!(feature = "csharp") {
        langs.push(SupportLang::CSharp);
    }
    if cfg!(feature = "dart") {
        langs.push(SupportLang::Dart);
    }
    if cfg!(feature = "go") {
        langs.push(SupportLang::Go);
    }
    if cfg!(feature = "java") {
        langs.push(SupportLang::Java);
    }
    if cfg!(feature = "javascript") {
        langs.push(SupportLang::JavaScript);
    }
    if cfg!(feature = "kotlin") {
        langs.push(SupportLang::Kotlin);
    }
    if cfg!(feature = "lua") {
        langs.push(SupportLang::Lua);
    }
    if cfg!(feature = "php") {
        langs.push(SupportLang::Php);
    }
    if cfg!(feature = "python") {
        langs.push(SupportLang::Python);
    }
    if cfg!(feature = "ruby") {
        langs.push(SupportLang::Ruby);
    }
    if cfg!(feature = "rust") {
        langs.push(SupportLang::Rust);
    }
    if cfg!(feature = "swift") {
        langs.push(SupportLang::Swift);
    }
    if cfg!(feature = "typescript") {
        langs.push(SupportLang::TypeScript);
        langs.push(SupportLang::Tsx);
    }
    langs
}

/// The grammar id the model uses (`rust`, `tsx`, `csharp`).
pub(crate) fn id(lang: SupportLang) -> &'static str {
    use SupportLang::*;
    match lang {
        Bash => "bash",
        C => "c",
        Cpp => "cpp",
        CSharp => "csharp",
        Dart => "dart",
        Go => "go",
        Java => "java",
        JavaScript => "javascript",
        Kotlin => "kotlin",
        Lua => "lua",
        Php => "php",
        Python => "python",
        Ruby => "ruby",
        Rust => "rust",
        Swift => "swift",
        TypeScript => "typescript",
        Tsx => "tsx",
        Css => "css",
        Elixir => "elixir",
        Haskell => "haskell",
        Hcl => "hcl",
        Html => "html",
        Json => "json",
        Markdown => "markdown",
        Nix => "nix",
        Scala => "scala",
        Solidity => "solidity",
        Yaml => "yaml",
        Zig => "zig",
    }
}

/// The ids of every enabled language, for messages.
pub(crate) fn ids() -> String {
    enabled().into_iter().map(id).collect::<Vec<_>>().join(", ")
}

/// Parses a `language` argument (ids and the usual aliases: `rs`, `py`,
/// `ts`, `c++`), refusing grammars this build does not carry.
pub(crate) fn parse(given: &str) -> Result<SupportLang, String> {
    let lang = given.trim().parse::<SupportLang>().ok();
    match lang {
        Some(lang) if enabled().contains(&lang) => Ok(lang),
        Some(lang) => Err(format!(
            "language: `{given}` ({}) is not compiled into this build; available: {}",
            id(lang),
            ids()
        )),
        None => Err(format!(
            "language: `{given}` is not a known grammar; available: {}",
            ids()
        )),
    }
}

/// The enabled language of a file, by its extension.
pub(crate) fn of_path(path: &Path) -> Option<SupportLang> {
    SupportLang::from_path(path).filter(|lang| enabled().contains(lang))
}

/// The contexts a fragment is tried in, bare (top level) first. Where a
/// fragment parses in several and means different things there, the
/// pattern searches with all of them.
pub(crate) fn scaffolds(lang: SupportLang) -> Vec<Scaffold> {
    use SupportLang::*;
    let mut ladder = vec![TOP];
    ladder.extend(match lang {
        Dart => vec![
            ctx(STATEMENT, "void __gantry() {\n", "\n}"),
            ctx(EXPRESSION, "var __gantry = ", ";"),
            ctx(MEMBER, "class __Gantry {\n", "\n}"),
        ],
        Java => vec![
            ctx(STATEMENT, "class __Gantry { void __gantry() {\n", "\n} }"),
            ctx(EXPRESSION, "class __Gantry { Object __gantry = ", "; }"),
            ctx(MEMBER, "class __Gantry {\n", "\n}"),
        ],
        CSharp => vec![
            ctx(STATEMENT, "class __Gantry { void __gantry() {\n", "\n} }"),
            ctx(EXPRESSION, "class __Gantry { object __gantry = ", "; }"),
            ctx(MEMBER, "class __Gantry {\n", "\n}"),
        ],
        C => vec![
            ctx(STATEMENT, "void __gantry(void) {\n", "\n}"),
            ctx(EXPRESSION, "int __gantry = ", ";"),
            ctx("as a struct member", "struct __Gantry {\n", "\n};"),
        ],
        Cpp => vec![
            ctx(STATEMENT, "void __gantry() {\n", "\n}"),
            ctx(EXPRESSION, "auto __gantry = ", ";"),
            ctx(MEMBER, "class __Gantry {\n", "\n};"),
        ],
        Go => vec![
            ctx(STATEMENT, "func __gantry() {\n", "\n}"),
            ctx(EXPRESSION, "var __gantry = ", ""),
            ctx("as a struct field", "type __Gantry struct {\n", "\n}"),
        ],
        Rust => vec![
            ctx(STATEMENT, "fn __gantry() {\n", "\n}"),
            ctx(EXPRESSION, "fn __gantry() { let _ = ", "; }"),
            ctx("as an impl member", "impl __Gantry {\n", "\n}"),
        ],
        JavaScript | TypeScript | Tsx => vec![
            ctx(STATEMENT, "function __gantry() {\n", "\n}"),
            ctx(EXPRESSION, "var __gantry = ", ";"),
            ctx(MEMBER, "class __Gantry {\n", "\n}"),
        ],
        Kotlin => vec![
            ctx(STATEMENT, "fun __gantry() {\n", "\n}"),
            ctx(EXPRESSION, "val __gantry = ", ""),
            ctx(MEMBER, "class __Gantry {\n", "\n}"),
        ],
        Swift => vec![
            ctx(STATEMENT, "func __gantry() {\n", "\n}"),
            ctx(EXPRESSION, "let __gantry = ", ""),
            ctx(MEMBER, "class __Gantry {\n", "\n}"),
        ],
        Php => vec![
            ctx(STATEMENT, "function __gantry() {\n", "\n}"),
            ctx(EXPRESSION, "$__gantry = ", ";"),
            ctx(MEMBER, "class __Gantry {\n", "\n}"),
        ],
        Python => vec![
            indented(STATEMENT, "def __gantry():\n", ""),
            ctx(EXPRESSION, "__gantry = ", ""),
            indented(MEMBER, "class __Gantry:\n", ""),
        ],
        Ruby => vec![
            ctx(STATEMENT, "def __gantry\n", "\nend"),
            ctx(EXPRESSION, "__gantry = ", ""),
            ctx(MEMBER, "class Gantry__\n", "\nend"),
        ],
        Lua => vec![
            ctx(STATEMENT, "function __gantry()\n", "\nend"),
            ctx(EXPRESSION, "local __gantry = ", ""),
        ],
        Bash => vec![ctx(STATEMENT, "__gantry() {\n", "\n}")],
        _ => vec![],
    });
    ladder
}

/// Whether statements in blocks end with `;` (or may), so that a `$$$X`
/// alone in braces is a run of statements rather than, say, a set literal.
pub(crate) fn has_braced_statements(lang: SupportLang) -> bool {
    use SupportLang::*;
    matches!(
        lang,
        C | Cpp
            | CSharp
            | Dart
            | Java
            | JavaScript
            | TypeScript
            | Tsx
            | Php
            | Rust
            | Go
            | Kotlin
            | Swift
    )
}

/// Languages whose statements end in `;`: a statement pattern written
/// without it (`if (x != null) x.dispose()`) is tried again with one.
pub(crate) fn ends_statements_with_semicolon(lang: SupportLang) -> bool {
    use SupportLang::*;
    matches!(
        lang,
        C | Cpp | CSharp | Dart | Java | JavaScript | TypeScript | Tsx | Php | Rust
    )
}
