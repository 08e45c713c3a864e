//! `read_many_files` through the run's pipeline, on real trees.

// Tests build their fixtures directly.
#![allow(clippy::disallowed_methods)]

mod common;

use common::Fixture;
use serde_json::json;

/// The headers of the sections read, in order.
fn headers(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|line| line.starts_with("--- ") && *line != "--- end of files ---")
        .collect()
}

/// The line of the skipped list about `path`.
fn skipped<'a>(text: &'a str, path: &str) -> &'a str {
    let prefix = format!("- `{path}`: ");
    text.lines()
        .find(|line| line.starts_with(&prefix))
        .unwrap_or_else(|| panic!("{path} not listed as skipped in:\n{text}"))
}

#[tokio::test]
async fn globs_folders_and_paths_are_read_once_each_in_path_order() {
    let fx = Fixture::with(&[
        ("src/b.rs", "fn b() {}\n"),
        ("src/a.rs", "fn a() {}\nfn a2() {}\n"),
        ("src/deep/c.rs", "fn c() {}"),
        ("docs/guide.md", "# Guide\n"),
        ("README.md", ""),
        ("Cargo.toml", "[package]\n"),
    ]);
    let text = fx
        .ok(
            "read_many_files",
            json!({
                "paths": ["src/**/*.rs", "Cargo.toml", "src/a.rs", "docs"],
                "include": ["*.md"]
            }),
        )
        .await;
    assert_eq!(
        text,
        "Read 6 files (58 B).\n\
         \n\
         --- Cargo.toml (1 line) ---\n[package]\n\n\
         --- README.md (empty) ---\n\n\
         --- docs/guide.md (1 line) ---\n# Guide\n\n\
         --- src/a.rs (2 lines) ---\nfn a() {}\nfn a2() {}\n\n\
         --- src/b.rs (1 line) ---\nfn b() {}\n\n\
         --- src/deep/c.rs (1 line) ---\nfn c() {}\n\n\
         --- end of files ---\n\
         \n\
         Globs and folders leave out files excluded by .gitignore/.ignore and hidden files; name \
         such a file in `paths` to read it.\n"
    );
}

#[tokio::test]
async fn exclude_leaves_out_files_and_whole_folders() {
    let fx = Fixture::with(&[
        ("src/lib.rs", "lib\n"),
        ("src/lib.test.rs", "test\n"),
        ("src/fixtures/data.rs", "data\n"),
        ("src/main.rs", "main\n"),
    ]);
    let text = fx
        .ok(
            "read_many_files",
            json!({
                "paths": ["src", "src/main.rs"],
                "exclude": ["*.test.rs", "fixtures", "src/main.rs"]
            }),
        )
        .await;
    assert_eq!(headers(&text), ["--- src/lib.rs (1 line) ---"]);
    // A file named explicitly and excluded is said; matched ones are
    // counted.
    assert_eq!(
        skipped(&text, "src/main.rs"),
        "- `src/main.rs`: left out by `exclude` pattern `src/main.rs`"
    );
    assert!(
        text.contains("2 files were left out by `exclude`."),
        "{text}"
    );

    let err = fx
        .err(
            "read_many_files",
            json!({"paths": ["src"], "exclude": ["ok", "[z-"]}),
        )
        .await;
    assert!(
        err.starts_with("invalid parameters for `read_many_files`: exclude[1]: invalid glob `[z-`"),
        "{err}"
    );
    let err = fx
        .err(
            "read_many_files",
            json!({"paths": ["src"], "exclude": ["/elsewhere/*.rs"]}),
        )
        .await;
    assert!(
        err.ends_with(
            "exclude[0]: `/elsewhere/*.rs` is an absolute pattern outside the workspace; give one \
             relative to the workspace root, e.g. `**/*.test.ts`"
        ),
        "{err}"
    );
}

#[tokio::test]
async fn every_skipped_file_is_listed_with_its_reason() {
    let fx = Fixture::new();
    fx.write("ok.txt", "fine\n");
    fx.write("app.bin", b"\x7fELF\x02\x01\x01\0\0\0");
    fx.write(
        "logo.png",
        b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x10\0\0\0\x08",
    );
    fx.write("latin1.txt", b"caf\xe9\n");
    fx.write("big.txt", "x".repeat(300 * 1024));
    // A 2 GB sparse file: its zeros make it binary; it is never loaded.
    let huge = std::fs::File::create(fx.path("huge.log")).unwrap();
    huge.set_len(2 * 1024 * 1024 * 1024).unwrap();
    fx.write("src/main.rs", "fn main() {}\n");
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "the-secret-content\n").unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret.txt"), fx.path("leak.txt")).unwrap();

    let text = fx
        .ok(
            "read_many_files",
            json!({"paths": [
                "ok.txt", "app.bin", "logo.png", "latin1.txt", "big.txt", "huge.log",
                "src/mian.rs", "../elsewhere.txt", "/etc/hostname", "leak.txt", "*.nothing"
            ]}),
        )
        .await;
    assert_eq!(headers(&text), ["--- ok.txt (1 line) ---"]);
    assert!(
        text.starts_with("Read 1 file (5 B); 10 skipped (listed at the end)."),
        "{text}"
    );
    assert_eq!(
        skipped(&text, "app.bin"),
        "- `app.bin`: binary (10 B, ELF executable or library; a NUL byte at offset 7)"
    );
    assert_eq!(
        skipped(&text, "logo.png"),
        "- `logo.png`: an image (image/png, 16x8, 24 B); read_file returns it as an image"
    );
    assert!(
        skipped(&text, "latin1.txt").contains("not UTF-8 text"),
        "{text}"
    );
    assert_eq!(
        skipped(&text, "big.txt"),
        "- `big.txt`: too large (307.2 KB, over the 229.4 KB limit per file); read it in parts \
         with read_file (`offset`, `limit`) or search it with grep"
    );
    assert!(
        skipped(&text, "huge.log").starts_with("- `huge.log`: binary (2.1 GB;"),
        "{text}"
    );
    assert_eq!(
        skipped(&text, "src/mian.rs"),
        "- `src/mian.rs`: `src/mian.rs` does not exist; did you mean `src/main.rs`?"
    );
    for path in ["../elsewhere.txt", "/etc/hostname"] {
        assert!(
            skipped(&text, path).contains("is outside the workspace"),
            "{text}"
        );
    }
    assert!(
        skipped(&text, "leak.txt").contains("symlink that resolves outside the workspace"),
        "{text}"
    );
    assert!(
        skipped(&text, "*.nothing").contains("no files match"),
        "{text}"
    );
    assert!(!text.contains("the-secret-content"), "{text}");
}

#[tokio::test]
async fn the_total_limit_stops_the_read_and_names_what_was_left() {
    let fx = Fixture::new();
    // Six files of 50,000 bytes: four fit in 224 KiB, the rest do not.
    for n in 0..6 {
        fx.write(&format!("part{n}.txt"), "y".repeat(49_999) + "\n");
    }
    let text = fx
        .ok("read_many_files", json!({"paths": ["part*.txt"]}))
        .await;
    assert_eq!(headers(&text).len(), 4, "{}", &text[..200]);
    assert!(
        text.starts_with(
            "Read 4 files (200.0 KB); stopped at the limit of 229.4 KB of text per call, 2 more \
             files not read (listed at the end)."
        ),
        "{}",
        &text[..300]
    );
    assert!(
        text.contains(
            "Stopped after 4 files / 229.4 KB (the limit per call); 2 more matched and were not \
             read: `part4.txt`, `part5.txt`. Narrow `paths` (or add `exclude`), or read these in \
             another call."
        ),
        "{}",
        &text[text.len() - 500..]
    );
}

#[tokio::test]
async fn a_smaller_limit_is_honoured_and_said() {
    let dir = tempfile::tempdir().unwrap();
    for n in 0..30 {
        std::fs::write(dir.path().join(format!("f{n:02}.txt")), "0123456789\n").unwrap();
    }
    let run = gantry_core::Run::builder(gantry_core::Workspace::new(dir.path()).unwrap())
        .tool(gantry_fs::ReadManyFiles::with_limits(1_000, 100))
        .build();
    let result = run
        .call("read_many_files", json!({"paths": ["*.txt"]}))
        .await
        .unwrap();
    let text = result.text_content();
    assert_eq!(headers(&text).len(), 2, "{text}");
    assert!(
        text.contains("28 more matched and were not read: `f02.txt`"),
        "{text}"
    );
    assert!(text.contains("and 8 more."), "{text}");
    let tools = run.tools();
    assert!(
        tools[0]
            .description
            .contains("At most 100 B of text per call")
    );
}

#[tokio::test]
async fn ignored_files_are_left_out_by_globs_but_read_when_named() {
    let fx = Fixture::with(&[
        (".gitignore", "*.gen.rs\n"),
        ("src/a.rs", "a\n"),
        ("src/b.gen.rs", "generated\n"),
        ("src/.hidden.rs", "hidden\n"),
    ]);
    let text = fx
        .ok("read_many_files", json!({"paths": ["src/*.rs"]}))
        .await;
    assert_eq!(headers(&text), ["--- src/a.rs (1 line) ---"]);
    let text = fx
        .ok(
            "read_many_files",
            json!({"paths": ["src/*.rs", "src/b.gen.rs"]}),
        )
        .await;
    assert_eq!(
        headers(&text),
        ["--- src/a.rs (1 line) ---", "--- src/b.gen.rs (1 line) ---"]
    );
}

#[tokio::test]
async fn the_order_is_the_same_every_time() {
    let fx = Fixture::new();
    for n in 0..40 {
        fx.write(&format!("d{}/n{n:02}.txt", n % 5), format!("{n}\n"));
    }
    let first = fx
        .ok("read_many_files", json!({"paths": ["**/*.txt"]}))
        .await;
    let listed = headers(&first);
    assert_eq!(listed.len(), 40);
    assert_eq!(listed[0], "--- d0/n00.txt (1 line) ---");
    assert_eq!(listed[8], "--- d1/n01.txt (1 line) ---");
    for _ in 0..3 {
        let again = fx
            .ok("read_many_files", json!({"paths": ["**/*.txt"]}))
            .await;
        assert_eq!(again, first);
    }
}

#[tokio::test]
async fn bad_entries_are_named_by_position() {
    let fx = Fixture::new();
    let err = fx.err("read_many_files", json!({"paths": []})).await;
    assert!(err.contains("paths: expected"), "{err}");
    let err = fx
        .err("read_many_files", json!({"paths": ["a.rs", "src/[a-"]}))
        .await;
    assert!(
        err.starts_with(
            "invalid parameters for `read_many_files`: paths[1]: invalid glob `src/[a-`"
        ),
        "{err}"
    );
    let err = fx
        .err(
            "read_many_files",
            json!({"paths": ["a.rs"], "include": [" "]}),
        )
        .await;
    assert!(err.contains("include[0]: empty"), "{err}");
    // A name with brackets that exists is a path, not a glob.
    fx.write("app/[id]/page.tsx", "page\n");
    let text = fx
        .ok("read_many_files", json!({"paths": ["app/[id]/page.tsx"]}))
        .await;
    assert_eq!(headers(&text), ["--- app/[id]/page.tsx (1 line) ---"]);
}
