//! `grep` through the run's pipeline, on real trees.

mod common;

use common::Fixture;
use gantry_core::CallErrorKind;
use serde_json::json;

/// The result without its header: the matched and context lines.
fn body(text: &str) -> Vec<&str> {
    let (_, body) = text.split_once("\n\n").unwrap_or_else(|| panic!("{text}"));
    body.lines().collect()
}

#[tokio::test]
async fn matches_are_grouped_by_file_in_path_order_with_line_numbers() {
    let fx = Fixture::with(&[
        ("b.rs", "let x = 1;\nfoo();\nbar();\nfoo(foo);\n"),
        ("a/x.rs", "foo\n"),
        ("a.rs", "no\nno\nthe foo\n"),
        ("c.txt", "nothing here\n"),
    ]);
    let text = fx.ok("grep", json!({"pattern": "foo"})).await;
    assert_eq!(
        text,
        "4 matching lines in 3 files for `foo` in `.` (case-insensitive); searched 4 files.\n\
         \n\
         a.rs:3: the foo\n\
         \n\
         a/x.rs:1: foo\n\
         \n\
         b.rs:2: foo();\n\
         b.rs:4: foo(foo);\n"
    );
}

#[tokio::test]
async fn context_lines_are_marked_and_separate_groups_are_divided() {
    let fx = Fixture::new();
    let lines: Vec<String> = (1..=12)
        .map(|n| {
            if n == 3 || n == 10 {
                format!("match {n}")
            } else {
                format!("line {n}")
            }
        })
        .collect();
    fx.write("f.txt", lines.join("\n") + "\n");
    let text = fx
        .ok("grep", json!({"pattern": "match", "context": 1}))
        .await;
    assert_eq!(
        body(&text),
        [
            "f.txt-2- line 2",
            "f.txt:3: match 3",
            "f.txt-4- line 4",
            "--",
            "f.txt-9- line 9",
            "f.txt:10: match 10",
            "f.txt-11- line 11",
        ]
    );
    let err = fx
        .err("grep", json!({"pattern": "match", "context": 11}))
        .await;
    assert!(err.contains("context: expected integer"), "{err}");
}

#[tokio::test]
async fn include_filters_by_name_or_by_path_under_the_searched_folder() {
    let fx = Fixture::with(&[
        ("src/lib.rs", "needle\n"),
        ("src/ui/app.ts", "needle\n"),
        ("src/ui/app.css", "needle\n"),
        ("tests/app.ts", "needle\n"),
    ]);
    let files = |text: &str| {
        body(text)
            .iter()
            .filter(|l| !l.is_empty())
            .map(|l| l.split(':').next().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    let text = fx
        .ok("grep", json!({"pattern": "needle", "include": "*.ts"}))
        .await;
    assert_eq!(files(&text), ["src/ui/app.ts", "tests/app.ts"]);
    assert!(text.contains("files matching `*.ts`"), "{text}");
    let text = fx
        .ok(
            "grep",
            json!({"pattern": "needle", "include": "src/**/*.ts"}),
        )
        .await;
    assert_eq!(files(&text), ["src/ui/app.ts"]);
    // Relative to `path`, as glob's patterns are.
    let text = fx
        .ok(
            "grep",
            json!({"pattern": "needle", "path": "src", "include": "ui/*.{ts,css}"}),
        )
        .await;
    assert_eq!(files(&text), ["src/ui/app.css", "src/ui/app.ts"]);
    let text = fx
        .ok("grep", json!({"pattern": "needle", "include": "*.go"}))
        .await;
    assert!(
        text.starts_with("No matches for `needle`")
            && text.contains("no file under the path matches `include`"),
        "{text}"
    );
    let err = fx
        .err("grep", json!({"pattern": "x", "include": "src/[a-"}))
        .await;
    assert!(
        err.starts_with("invalid parameters for `grep`: include: invalid glob `src/[a-`"),
        "{err}"
    );
}

#[tokio::test]
async fn smart_case_unless_told_otherwise() {
    let fx = Fixture::new();
    fx.write("a.txt", "Error\nerror\nERROR\n");
    let count = |text: &str| body(text).len();

    let text = fx.ok("grep", json!({"pattern": "error"})).await;
    assert_eq!(count(&text), 3, "{text}");
    assert!(text.contains("(case-insensitive)"), "{text}");

    let text = fx.ok("grep", json!({"pattern": "Error"})).await;
    assert_eq!(body(&text), ["a.txt:1: Error"]);
    assert!(text.contains("(case-sensitive)"), "{text}");

    let text = fx
        .ok(
            "grep",
            json!({"pattern": "error", "case_insensitive": false}),
        )
        .await;
    assert_eq!(body(&text), ["a.txt:2: error"]);
    let text = fx
        .ok(
            "grep",
            json!({"pattern": "ERROR", "case_insensitive": true}),
        )
        .await;
    assert_eq!(count(&text), 3);

    // Escapes are not capitals: `\W` leaves smart case insensitive.
    let text = fx.ok("grep", json!({"pattern": r"^\Wrror|^error"})).await;
    assert_eq!(count(&text), 3, "{text}");

    let text = fx.ok("grep", json!({"pattern": "Warning"})).await;
    assert!(
        text.contains("the pattern has capitals (smart case); set `case_insensitive: true`"),
        "{text}"
    );
}

#[tokio::test]
async fn gitignore_is_respected_without_git_and_hidden_files_are_skipped() {
    let fx = Fixture::with(&[
        (".gitignore", "target/\n*.log\n"),
        ("src/main.rs", "token\n"),
        ("target/debug/out.rs", "token\n"),
        ("run.log", "token\n"),
        (".env", "token\n"),
        (".config/settings.toml", "token\n"),
    ]);
    assert!(!fx.path(".git").exists());
    let text = fx.ok("grep", json!({"pattern": "token"})).await;
    assert_eq!(body(&text), ["src/main.rs:1: token"], "{text}");
    assert!(text.contains("searched 1 file."), "{text}");

    // A pattern naming a hidden folder searches it; a file named in `path`
    // is searched even when ignored, as ripgrep does.
    let text = fx
        .ok(
            "grep",
            json!({"pattern": "token", "include": ".config/*.toml"}),
        )
        .await;
    assert_eq!(body(&text), [".config/settings.toml:1: token"]);
    let text = fx
        .ok("grep", json!({"pattern": "token", "path": "run.log"}))
        .await;
    assert_eq!(body(&text), ["run.log:1: token"]);
}

#[tokio::test]
async fn binary_files_are_skipped_and_counted() {
    let fx = Fixture::new();
    fx.write("text.txt", "needle\n");
    fx.write("blob.bin", b"needle\0\x01\x02needle\n");
    let text = fx.ok("grep", json!({"pattern": "needle"})).await;
    assert_eq!(body(&text), ["text.txt:1: needle"]);
    assert!(
        text.contains("searched 2 files; 1 binary file skipped."),
        "{text}"
    );
    let text = fx
        .ok("grep", json!({"pattern": "needle", "path": "blob.bin"}))
        .await;
    assert!(
        text.starts_with("No matches for `needle` in `blob.bin`")
            && text.contains("1 binary file skipped"),
        "{text}"
    );
}

#[tokio::test]
async fn the_cap_is_stated_and_the_first_lines_in_path_order_are_shown() {
    let fx = Fixture::new();
    // 250 matching lines: 25 files of 10.
    for f in 0..25 {
        let lines: String = (0..10).map(|l| format!("hit {f} {l}\n")).collect();
        fx.write(&format!("d{}/f{f:02}.txt", f % 3), lines);
    }
    let text = fx.ok("grep", json!({"pattern": "hit"})).await;
    let header = text.lines().next().unwrap();
    assert_eq!(
        header,
        "200 of 250 matching lines shown (the first in path order, from 20 of 25 files) for \
         `hit` in `.` (case-insensitive); searched 25 files."
    );
    assert!(text.contains("Narrow with `path` or `include`"), "{text}");
    let shown: Vec<&str> = body(&text).into_iter().filter(|l| !l.is_empty()).collect();
    assert_eq!(shown.len(), 200);
    assert_eq!(shown[0], "d0/f00.txt:1: hit 0 0");
    // d0 holds 9 files, d1 8: the cap falls on the last line of d2/f08.
    assert_eq!(shown[199], "d2/f08.txt:10: hit 8 9");

    // Far past the cap the walk stops counting: "at least", and the same
    // lines every time whatever order the threads ran in.
    let mut seen = None;
    for _ in 0..5 {
        let text = fx
            .ok("grep", json!({"pattern": "hit", "max_results": 3}))
            .await;
        let (header, rest) = text.split_once("\n\n").unwrap();
        assert!(
            header.starts_with("3 of at least ") && header.contains("matching lines shown"),
            "{header}"
        );
        assert_eq!(
            body(&text),
            [
                "d0/f00.txt:1: hit 0 0",
                "d0/f00.txt:2: hit 0 1",
                "d0/f00.txt:3: hit 0 2"
            ]
        );
        if let Some(previous) = &seen {
            assert_eq!(previous, rest);
        }
        seen = Some(rest.to_string());
    }
}

#[tokio::test]
async fn an_invalid_regex_names_the_parameter_quotes_the_error_and_hints() {
    let fx = Fixture::new();
    let err = fx
        .call("grep", json!({"pattern": "foo("}))
        .await
        .unwrap_err();
    assert_eq!(err.kind, CallErrorKind::InvalidParams);
    assert!(
        err.message.starts_with(
            "invalid parameters for `grep`: pattern: `foo(` is not a valid regex (Rust regex \
             syntax): regex parse error:"
        ),
        "{}",
        err.message
    );
    assert!(err.message.contains("unclosed group"), "{}", err.message);
    assert!(
        err.message.contains("escape it: `\\(`") && err.message.contains("`literal: true`"),
        "{}",
        err.message
    );
    // With `literal` the same text is searched as written.
    fx.write("a.rs", "call foo(x)\n");
    let text = fx
        .ok("grep", json!({"pattern": "foo(", "literal": true}))
        .await;
    assert_eq!(body(&text), ["a.rs:1: call foo(x)"]);
    let err = fx.err("grep", json!({"pattern": r"a\nb"})).await;
    assert!(err.contains("cannot match a line break"), "{err}");
}

#[tokio::test]
async fn zero_matches_say_what_was_searched() {
    let fx = Fixture::with(&[("a.rs", "alpha\n"), ("src/b.rs", "beta\n")]);
    let text = fx.ok("grep", json!({"pattern": "gamma"})).await;
    assert_eq!(
        text,
        "No matches for `gamma` in `.` (case-insensitive); searched 2 files. Files excluded by \
         .gitignore/.ignore and hidden files are not searched."
    );
    let text = fx
        .ok("grep", json!({"pattern": "gamma", "path": "src"}))
        .await;
    assert!(
        text.starts_with("No matches for `gamma` in `src` (case-insensitive); searched 1 file."),
        "{text}"
    );
}

#[tokio::test]
async fn paths_outside_the_workspace_are_refused_and_missing_ones_explained() {
    let fx = Fixture::new();
    fx.write("src/a.rs", "x\n");
    for path in ["..", "/etc", "../../etc/passwd"] {
        let err = fx
            .err("grep", json!({"pattern": "root", "path": path}))
            .await;
        assert!(err.contains("is outside the workspace"), "{path}: {err}");
    }
    let err = fx.err("grep", json!({"pattern": "x", "path": "scr"})).await;
    assert_eq!(err, "`scr` does not exist; did you mean `src`?");
}

#[tokio::test]
async fn long_lines_are_shortened_around_the_match() {
    let fx = Fixture::new();
    let line = format!("{}NEEDLE{}", "a".repeat(5_000), "b".repeat(5_000));
    fx.write("min.js", format!("{line}\n"));
    let text = fx.ok("grep", json!({"pattern": "NEEDLE"})).await;
    assert!(
        text.contains("Lines over 200 characters are shortened around the match"),
        "{text}"
    );
    let shown = body(&text)[0];
    let rest = shown.strip_prefix("min.js:1: …").unwrap();
    assert!(rest.ends_with('…'), "{shown}");
    assert_eq!(rest.chars().count(), 201);
    assert_eq!(rest.find("NEEDLE"), Some(60));

    // Cuts fall between characters, and bytes that are not UTF-8 at all
    // are shown as U+FFFD rather than breaking the cut.
    let wide = format!("{}NEEDLE{}\n", "é".repeat(3_000), "ü".repeat(3_000));
    fx.write("wide.txt", wide);
    let mut junk = vec![0x80u8; 3_000];
    junk.extend_from_slice(b"NEEDLE");
    junk.extend(std::iter::repeat_n(0xbf, 3_000));
    junk.push(b'\n');
    fx.write("junk.txt", junk);
    let text = fx.ok("grep", json!({"pattern": "NEEDLE"})).await;
    let lines = body(&text);
    let wide = lines
        .iter()
        .find(|l| l.starts_with("wide.txt:1: …"))
        .unwrap();
    assert!(
        wide.contains(&format!("{}NEEDLE{}", "é".repeat(60), "ü".repeat(134))),
        "{wide}"
    );
    let junk = lines
        .iter()
        .find(|l| l.starts_with("junk.txt:1: …"))
        .unwrap();
    assert!(junk.contains("\u{fffd}NEEDLE\u{fffd}"), "{junk}");
}
