//! `ast_grep` through the real pipeline on real code, per language.

// Tests build their fixtures directly.
#![allow(clippy::disallowed_methods)]

mod common;

use common::{locations, workspace};
use gantry_core::testing::{err, ok};
use serde_json::json;

#[cfg(feature = "rust")]
mod rust {
    use super::*;

    const LIB: &str = r#"use std::collections::HashMap;

fn load(path: &str) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    // a comment mentioning config.unwrap() is not code
    let note = "nor is cfg.unwrap() in a string";
    text
}

fn pick(map: &HashMap<String, u32>) -> u32 {
    let a = map.get("a")
        .copied()
        .unwrap();
    let b = map.get("b")   .copied(). /* odd */ unwrap  ();
    a + b
}
"#;

    #[tokio::test]
    async fn single_node_pattern_matches_code_not_text_whatever_the_spacing() {
        let (_dir, run) = workspace(&[("src/lib.rs", LIB)]);
        let text = ok(&run, "ast_grep", json!({"pattern": "$X.unwrap()"})).await;
        assert_eq!(
            locations(&text),
            ["src/lib.rs:4:16", "src/lib.rs:11:13", "src/lib.rs:14:13"],
            "{text}"
        );
        assert!(
            text.starts_with("3 matches for `$X.unwrap()` (rust"),
            "{text}"
        );
        assert!(
            text.contains("$X = std::fs::read_to_string(path)"),
            "{text}"
        );
        // A multi-line match shows its first line and says how many more.
        assert!(
            text.contains("src/lib.rs:11:13: map.get(\"a\") … (+2 lines)"),
            "{text}"
        );
        assert!(text.contains("Searched 1 of 1 rust file"), "{text}");
    }

    #[tokio::test]
    async fn multi_node_patterns_and_runs() {
        let source = "fn f(v: Vec<i32>) {\n    let a = 1;\n    let b = 2;\n    println!(\"{}\", a + b);\n    g(1, 2, 3);\n    g();\n}\n";
        let (_dir, run) = workspace(&[("m.rs", source)]);
        let text = ok(
            &run,
            "ast_grep",
            json!({"pattern": "let $A = 1; let $B = 2;"}),
        )
        .await;
        assert_eq!(locations(&text), ["m.rs:2:5"], "{text}");
        assert!(text.contains("$A = a") && text.contains("$B = b"), "{text}");
        assert!(text.contains("a run of 2 siblings"), "{text}");

        let text = ok(&run, "ast_grep", json!({"pattern": "g($$$ARGS)"})).await;
        assert_eq!(locations(&text), ["m.rs:5:5", "m.rs:6:5"], "{text}");
        assert!(text.contains("$$$ARGS = 1, 2, 3"), "{text}");

        let text = ok(
            &run,
            "ast_grep",
            json!({"pattern": "fn $F($$$P) { $$$BODY }"}),
        )
        .await;
        assert_eq!(locations(&text), ["m.rs:1:1"], "{text}");
        assert!(text.contains("$F = f"), "{text}");
    }

    #[tokio::test]
    async fn repeated_metavariables_capture_the_same_code() {
        let source = "fn f() {\n    if x.is_some() { x.take(); }\n    if x.is_some() { y.take(); }\n    if a . b.is_some() { a.b.take(); }\n}\n";
        let (_dir, run) = workspace(&[("g.rs", source)]);
        let text = ok(
            &run,
            "ast_grep",
            json!({"pattern": "if $X.is_some() { $X.take(); }"}),
        )
        .await;
        assert_eq!(locations(&text), ["g.rs:2:5", "g.rs:4:5"], "{text}");
    }

    #[tokio::test]
    async fn zero_matches_say_what_the_pattern_compiled_to() {
        let (_dir, run) = workspace(&[("src/lib.rs", LIB), ("src/other.rs", "fn x() {}\n")]);
        let text = ok(&run, "ast_grep", json!({"pattern": "$X.frobnicate($Y)"})).await;
        assert!(
            text.starts_with("No matches for `$X.frobnicate($Y)` in ."),
            "{text}"
        );
        assert!(text.contains("compiled to `call_expression`"), "{text}");
        assert!(text.contains("searched 2 rust files, 0 of which"), "{text}");
    }

    #[tokio::test]
    async fn max_results_stops_early_and_says_at_least() {
        let mut files = Vec::new();
        for i in 0..40 {
            files.push((
                format!("src/f{i:02}.rs"),
                "fn f() { a.unwrap(); b.unwrap(); c.unwrap(); }\n".to_string(),
            ));
        }
        let refs: Vec<(&str, &str)> = files
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        let (_dir, run) = workspace(&refs);
        let text = ok(
            &run,
            "ast_grep",
            json!({"pattern": "$X.unwrap()", "max_results": 5}),
        )
        .await;
        assert_eq!(
            locations(&text),
            [
                "src/f00.rs:1:10",
                "src/f00.rs:1:22",
                "src/f00.rs:1:34",
                "src/f01.rs:1:10",
                "src/f01.rs:1:22"
            ],
            "{text}"
        );
        assert!(text.starts_with("5 of at least "), "{text}");
        assert!(text.contains("stopped early at max_results=5"), "{text}");
        // The default is 50.
        let text = ok(&run, "ast_grep", json!({"pattern": "$X.unwrap()"})).await;
        assert_eq!(locations(&text).len(), 50);
        assert!(text.starts_with("50 of at least "), "{text}");
    }

    #[tokio::test]
    async fn files_that_fail_to_parse_are_counted_and_named() {
        let (_dir, run) = workspace(&[
            ("ok.rs", "fn f() { a.unwrap(); }\n"),
            ("broken.rs", "fn g( { b.unwrap(); \n"),
            ("latin1.rs", ""),
        ]);
        std::fs::write(
            run.workspace().root().join("latin1.rs"),
            b"fn h() { c.unwrap(); } // caf\xe9\n",
        )
        .unwrap();
        let text = ok(&run, "ast_grep", json!({"pattern": "$X.unwrap()"})).await;
        assert!(
            text.contains("1 parsed file had syntax errors (searched anyway; code next to an error may not match): broken.rs"),
            "{text}"
        );
        assert!(
            text.contains("1 file could not be searched: latin1.rs (not UTF-8 text)"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn unparseable_patterns_list_the_contexts_tried() {
        let (_dir, run) = workspace(&[("a.rs", "fn f() {}\n")]);
        let message = err(&run, "ast_grep", json!({"pattern": "foo(($X"})).await;
        assert!(
            message.starts_with("pattern: `foo(($X` does not parse as rust code in any context"),
            "{message}"
        );
        for context in [
            "- at top level:",
            "- as a statement in a function body:",
            "- as an initialiser expression:",
            "- as an impl member:",
        ] {
            assert!(message.contains(context), "{context} missing in {message}");
        }
        assert!(
            message.contains("unexpected `(($X` at line 1, column 4 of the fragment"),
            "{message}"
        );
    }

    #[tokio::test]
    async fn gitignored_files_are_not_searched() {
        let (_dir, run) = workspace(&[
            (".gitignore", "target/\n"),
            ("src/a.rs", "fn f() { a.unwrap(); }\n"),
            ("target/gen.rs", "fn f() { a.unwrap(); }\n"),
        ]);
        let text = ok(&run, "ast_grep", json!({"pattern": "$X.unwrap()"})).await;
        assert_eq!(locations(&text), ["src/a.rs:1:10"], "{text}");
    }
}

#[cfg(feature = "dart")]
mod dart {
    use super::*;

    const WIDGET: &str = r#"import 'package:flutter/widgets.dart';

int counter = 1;

class CounterState extends State<Counter> {
  int x = 1;
  int clicks = 0;

  void increment(int by) {
    int x = 1;
    print(by + by);
    print(by + clicks);
    setState(() {
      clicks += by;
      print('tapped $clicks');
    });
    if (clicks > 10) {
      reset();
    }
    foo(1, 2);
  }
}
"#;

    #[tokio::test]
    async fn the_patterns_sg_misses_are_found() {
        let (_dir, run) = workspace(&[("lib/counter.dart", WIDGET)]);

        let text = ok(&run, "ast_grep", json!({"pattern": "print($A + $A)"})).await;
        assert_eq!(locations(&text), ["lib/counter.dart:11:5"], "{text}");

        let text = ok(&run, "ast_grep", json!({"pattern": "foo($$$ARGS)"})).await;
        assert_eq!(locations(&text), ["lib/counter.dart:20:5"], "{text}");
        assert!(text.contains("$$$ARGS = 1, 2"), "{text}");

        let text = ok(
            &run,
            "ast_grep",
            json!({"pattern": "setState(() { $$$BODY })"}),
        )
        .await;
        assert_eq!(locations(&text), ["lib/counter.dart:13:5"], "{text}");
        assert!(text.contains("$$$BODY = clicks += by;"), "{text}");

        let text = ok(&run, "ast_grep", json!({"pattern": "if ($C) { $$$ }"})).await;
        assert_eq!(locations(&text), ["lib/counter.dart:17:5"], "{text}");
        assert!(text.contains("$C = clicks > 10"), "{text}");
    }

    #[tokio::test]
    async fn a_declaration_is_found_as_top_level_field_and_local() {
        let (_dir, run) = workspace(&[("lib/counter.dart", WIDGET)]);
        let text = ok(&run, "ast_grep", json!({"pattern": "int x = 1;"})).await;
        assert_eq!(
            locations(&text),
            ["lib/counter.dart:6:3", "lib/counter.dart:10:5"],
            "{text}"
        );
        let text = ok(&run, "ast_grep", json!({"pattern": "int $V = 1;"})).await;
        assert_eq!(
            locations(&text),
            [
                "lib/counter.dart:3:1",
                "lib/counter.dart:6:3",
                "lib/counter.dart:10:5"
            ],
            "{text}"
        );
        assert!(text.contains("at top level"), "{text}");
        assert!(text.contains("as a class member"), "{text}");
        assert!(text.contains("as a statement in a function body"), "{text}");
    }

    #[tokio::test]
    async fn a_metavariable_in_string_interpolation_captures_the_interpolation() {
        // In Dart `$NAME` inside a string is an interpolation node, so it is
        // a metavariable there, not text.
        let (_dir, run) = workspace(&[("lib/counter.dart", WIDGET)]);
        let text = ok(
            &run,
            "ast_grep",
            json!({"pattern": "print('tapped $NAME')"}),
        )
        .await;
        assert_eq!(locations(&text), ["lib/counter.dart:15:7"], "{text}");
        assert!(text.contains("$NAME = $clicks"), "{text}");
        assert!(!text.contains("Note:"), "{text}");
    }
}

#[cfg(feature = "python")]
mod python {
    use super::*;

    const APP: &str = r#"import os


def handler(event, context):
    # os.getenv("SECRET") in a comment
    key = os.getenv("KEY")
    other = os.getenv(  "KEY" ,  "default")
    if key == key:
        print(f"{key} and {other}")
    return {"key": key}


class Service:
    timeout = 30

    def run(self):
        self.timeout = 30
        for item in self.items:
            self.handle(item)
"#;

    #[tokio::test]
    async fn calls_statements_and_blocks() {
        let (_dir, run) = workspace(&[("app/handler.py", APP)]);
        let text = ok(&run, "ast_grep", json!({"pattern": "os.getenv($$$ARGS)"})).await;
        assert_eq!(
            locations(&text),
            ["app/handler.py:6:11", "app/handler.py:7:13"],
            "{text}"
        );
        assert!(text.contains("$$$ARGS = \"KEY\" ,  \"default\""), "{text}");

        let text = ok(
            &run,
            "ast_grep",
            json!({"pattern": "for $X in $Y:\n    $$$BODY"}),
        )
        .await;
        assert_eq!(locations(&text), ["app/handler.py:18:9"], "{text}");

        let text = ok(
            &run,
            "ast_grep",
            json!({"pattern": "if $A == $A:\n    $$$"}),
        )
        .await;
        assert_eq!(locations(&text), ["app/handler.py:8:5"], "{text}");
    }

    #[tokio::test]
    async fn f_string_interpolation_is_a_metavariable_but_plain_text_is_explained() {
        let (_dir, run) = workspace(&[("app/handler.py", APP)]);
        let text = ok(&run, "ast_grep", json!({"pattern": "f\"{$A} and {$B}\""})).await;
        assert_eq!(locations(&text), ["app/handler.py:9:15"], "{text}");
        let text = ok(&run, "ast_grep", json!({"pattern": "print(\"$A and $B\")"})).await;
        assert!(
            text.contains("Note: `$A` is inside a `string_content`"),
            "{text}"
        );
        assert!(text.starts_with("Note:"), "{text}");
        assert!(text.contains("No matches"), "{text}");
    }

    #[tokio::test]
    async fn language_inference() {
        let (_dir, run) = workspace(&[("app/handler.py", APP), ("scripts/x.py", "x = 1\n")]);
        // A folder with one language: inferred.
        let text = ok(&run, "ast_grep", json!({"pattern": "$X = 30"})).await;
        assert_eq!(
            locations(&text),
            ["app/handler.py:14:5", "app/handler.py:17:9"],
            "{text}"
        );
        std::fs::write(run.workspace().root().join("scripts/run.rb"), "puts 1\n").unwrap();
        #[cfg(feature = "ruby")]
        {
            let message = err(&run, "ast_grep", json!({"pattern": "$X = 30"})).await;
            assert_eq!(
                message,
                "language: `.` holds files of several languages: python (2 files), ruby (1 files); give `language` (or a narrower `path`)"
            );
        }
        let text = ok(
            &run,
            "ast_grep",
            json!({"pattern": "$X = 30", "language": "python"}),
        )
        .await;
        assert_eq!(locations(&text).len(), 2, "{text}");
        // A file: by its extension.
        let text = ok(
            &run,
            "ast_grep",
            json!({"pattern": "x = $V", "path": "scripts/x.py"}),
        )
        .await;
        assert_eq!(locations(&text), ["scripts/x.py:1:1"], "{text}");
        let message = err(
            &run,
            "ast_grep",
            json!({"pattern": "x", "language": "cobol"}),
        )
        .await;
        assert!(
            message.contains("`cobol` is not a known grammar"),
            "{message}"
        );
    }
}
