//! `read_file` through the run's pipeline, on real files.

// Tests build their fixtures directly.
#![allow(clippy::disallowed_methods)]

mod common;

use std::io::Write;

use common::Fixture;
use gantry_core::{Display, Part};
use serde_json::json;

fn numbered(lines: std::ops::RangeInclusive<usize>) -> String {
    lines.map(|n| format!("line {n}\n")).collect()
}

#[tokio::test]
async fn text_comes_back_numbered_like_cat_n() {
    let fx = Fixture::new();
    fx.write("a.txt", "alpha\nbeta\n\tgamma\n");
    let result = fx
        .call("read_file", json!({"path": "a.txt"}))
        .await
        .unwrap();
    assert_eq!(
        result.text_content(),
        "     1\talpha\n     2\tbeta\n     3\t\tgamma\n"
    );
    let Display::Markdown { markdown } = &result.return_display else {
        panic!("not markdown");
    };
    assert!(
        markdown.starts_with("Read `a.txt` (lines 1-3 of 3)\n\n```\n     1\talpha\n"),
        "{markdown}"
    );
}

#[tokio::test]
async fn offset_and_limit_pick_a_window_and_say_where_to_go_on() {
    let fx = Fixture::new();
    fx.write("f.txt", numbered(1..=10));
    let text = fx
        .ok(
            "read_file",
            json!({"path": "f.txt", "offset": 3, "limit": 2}),
        )
        .await;
    assert_eq!(
        text,
        "     3\tline 3\n     4\tline 4\n\n[showing lines 3-4 of 10; call again with offset 5]"
    );
    let text = fx
        .ok("read_file", json!({"path": "f.txt", "offset": 9}))
        .await;
    assert_eq!(
        text,
        "     9\tline 9\n    10\tline 10\n\n[showing lines 9-10 of 10 (end of file)]"
    );
    // The last line without a newline is still a line.
    fx.write("g.txt", "one\ntwo");
    let text = fx
        .ok("read_file", json!({"path": "g.txt", "offset": 2}))
        .await;
    assert!(text.starts_with("     2\ttwo\n"), "{text}");
}

#[tokio::test]
async fn default_limit_is_2000_lines_and_the_cut_is_said() {
    let fx = Fixture::new();
    fx.write("big.txt", numbered(1..=5123));
    let text = fx.ok("read_file", json!({"path": "big.txt"})).await;
    assert_eq!(text.lines().filter(|l| l.contains('\t')).count(), 2000);
    assert!(text.contains("  2000\tline 2000\n"), "{text}");
    assert!(!text.contains("line 2001"));
    assert!(
        text.ends_with("[showing lines 1-2000 of 5123; call again with offset 2001]"),
        "{}",
        &text[text.len() - 200..]
    );
    let text = fx
        .ok("read_file", json!({"path": "big.txt", "offset": 4001}))
        .await;
    assert!(text.starts_with("  4001\tline 4001\n"), "{text}");
    assert!(
        text.ends_with("[showing lines 4001-5123 of 5123 (end of file)]"),
        "{text}"
    );
}

#[tokio::test]
async fn long_lines_are_cut_at_2000_characters_and_said() {
    let fx = Fixture::new();
    let long = "é".repeat(500_000);
    fx.write("min.js", format!("short\n{long}\nafter\n"));
    let text = fx.ok("read_file", json!({"path": "min.js"})).await;
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "     1\tshort");
    let expected = format!(
        "     2\t{}… [line cut at 2000 characters; the whole line is 1.0 MB]",
        "é".repeat(2000)
    );
    assert_eq!(lines[1], expected);
    assert_eq!(lines[2], "     3\tafter");
    assert!(
        text.ends_with(
            "[line 2 was longer than 2000 characters and was cut; use grep to search inside]"
        ),
        "{text}"
    );
}

#[tokio::test]
async fn crlf_line_ends_are_shown_without_the_carriage_return() {
    let fx = Fixture::new();
    fx.write("win.txt", "one\r\ntwo\r\nthree");
    let text = fx.ok("read_file", json!({"path": "win.txt"})).await;
    assert_eq!(text, "     1\tone\n     2\ttwo\n     3\tthree\n");
    fx.write("bom.txt", "\u{feff}first\n");
    let text = fx.ok("read_file", json!({"path": "bom.txt"})).await;
    assert_eq!(text, "     1\tfirst\n");
}

#[tokio::test]
async fn binary_files_are_described_not_dumped() {
    let fx = Fixture::new();
    let mut elf = b"\x7fELF\x02\x01\x01\0".to_vec();
    elf.resize(1_200_000, 0xAB);
    fx.write("app", &elf);
    let text = fx.ok("read_file", json!({"path": "app"})).await;
    assert_eq!(
        text,
        "`app` is a binary file (1.2 MB, ELF executable or library), not shown: it has a NUL byte at offset 7."
    );

    fx.write("latin1.txt", b"caf\xe9 cr\xe8me\n");
    let text = fx.ok("read_file", json!({"path": "latin1.txt"})).await;
    assert_eq!(
        text,
        "`latin1.txt` is not UTF-8 text (11 B), not shown: the byte at offset 3 is not valid \
         UTF-8. It may be binary, or text in another encoding such as Latin-1 or UTF-16."
    );
}

/// A 1x1 PNG.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0xf8, 0xcf, 0xc0, 0xf0,
    0x1f, 0x00, 0x05, 0x00, 0x01, 0xff, 0x89, 0x99, 0x3d, 0x1d, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
    0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

#[tokio::test]
async fn images_come_back_as_image_parts() {
    let fx = Fixture::new();
    // Recognised by its bytes even under a misleading name.
    fx.write("assets/dot.dat", PNG);
    let result = fx
        .call("read_file", json!({"path": "assets/dot.dat"}))
        .await
        .unwrap();
    assert_eq!(
        result.llm_content,
        vec![
            Part::text("Image `assets/dot.dat` (image/png, 1x1, 70 B):"),
            Part::Image {
                mime_type: "image/png".into(),
                data: PNG.to_vec()
            },
        ]
    );
    assert_eq!(
        result.return_display.to_text(),
        "Read image `assets/dot.dat` (image/png, 1x1, 70 B)"
    );
    // And by its name when the bytes say nothing.
    fx.write("photo.webp", b"not really");
    let result = fx
        .call("read_file", json!({"path": "photo.webp"}))
        .await
        .unwrap();
    assert!(
        matches!(&result.llm_content[1], Part::Image { mime_type, .. } if mime_type == "image/webp")
    );
}

#[tokio::test]
async fn images_over_the_cap_are_refused_clearly() {
    let fx = Fixture::new();
    let path = fx.write("huge.png", PNG);
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(12_000_000)
        .unwrap();
    let err = fx.err("read_file", json!({"path": "huge.png"})).await;
    assert!(
        err.starts_with("`huge.png` is an image of 12.0 MB; images over 10.0 MB are not returned."),
        "{err}"
    );
}

#[tokio::test]
async fn pdfs_are_described_with_their_page_count() {
    let fx = Fixture::new();
    fx.write(
        "doc.pdf",
        "%PDF-1.4\n1 0 obj << /Type /Pages /Kids [2 0 R 3 0 R] /Count 2 >> endobj\n\
         2 0 obj << /Type /Page /Parent 1 0 R >> endobj\n3 0 obj <</Type/Page/Parent 1 0 R>> endobj\n%%EOF\n",
    );
    let text = fx.ok("read_file", json!({"path": "doc.pdf"})).await;
    assert!(
        text.starts_with(
            "`doc.pdf` is a PDF document (168 B, 2 pages); read_file cannot show its contents."
        ),
        "{text}"
    );
    assert!(text.contains("pdftotext -layout doc.pdf -"), "{text}");
}

#[tokio::test]
async fn an_offset_past_the_end_says_how_long_the_file_is() {
    let fx = Fixture::new();
    fx.write("f.txt", numbered(1..=120));
    let err = fx
        .err("read_file", json!({"path": "f.txt", "offset": 500}))
        .await;
    assert_eq!(
        err,
        "offset 500 is beyond the end of `f.txt`: it has 120 lines; use an offset from 1 to 120"
    );
    let err = fx
        .err("read_file", json!({"path": "f.txt", "offset": 121}))
        .await;
    assert!(err.contains("it has 120 lines"), "{err}");

    fx.write("empty.txt", "");
    let text = fx.ok("read_file", json!({"path": "empty.txt"})).await;
    assert_eq!(text, "`empty.txt` is empty (0 B).");
    let err = fx
        .err("read_file", json!({"path": "empty.txt", "offset": 2}))
        .await;
    assert_eq!(
        err,
        "offset 2 is beyond the end of `empty.txt`: the file is empty"
    );
}

#[tokio::test]
async fn a_huge_file_is_streamed_not_loaded() {
    let fx = Fixture::new();
    let path = fx.path("huge.log");
    {
        let mut file = std::fs::File::create(&path).unwrap();
        for n in 1..=1000 {
            writeln!(file, "log line {n}").unwrap();
        }
        // 2 GiB, the rest a sparse hole: nothing is written, and a reader
        // that loaded it whole would take seconds and gigabytes.
        file.set_len(2 << 30).unwrap();
    }
    let peak_before = peak_memory_kib();
    let text = fx
        .ok("read_file", json!({"path": "huge.log", "limit": 10}))
        .await;
    assert!(text.starts_with("     1\tlog line 1\n"), "{text}");
    assert!(text.contains("    10\tlog line 10\n"), "{text}");
    assert!(
        text.ends_with(
            "[showing lines 1-10 of a file of 2.1 GB (more lines follow; the total was not counted); call again with offset 11]"
        ),
        "{text}"
    );
    let grown = peak_memory_kib() - peak_before;
    assert!(grown < 256 * 1024, "the peak memory grew by {grown} KiB");

    // Further in, still without reading the tail.
    let text = fx
        .ok(
            "read_file",
            json!({"path": "huge.log", "offset": 995, "limit": 3}),
        )
        .await;
    assert!(text.starts_with("   995\tlog line 995\n"), "{text}");
}

#[tokio::test]
async fn output_is_bounded_even_when_limit_allows_more() {
    let fx = Fixture::new();
    let line = "x".repeat(1500);
    let content: String = (0..2000).map(|_| format!("{line}\n")).collect();
    fx.write("wide.txt", content);
    let text = fx.ok("read_file", json!({"path": "wide.txt"})).await;
    // Within the model's budget for one result, note included.
    assert!(text.len() <= 256 * 1024, "{}", text.len());
    let note = text.lines().last().unwrap();
    assert!(
        note.starts_with("[output limit of 256.0 KB reached: showing lines 1-16"),
        "{note}"
    );
    let next: u64 = note
        .rsplit(' ')
        .next()
        .unwrap()
        .trim_end_matches(']')
        .parse()
        .unwrap();
    let shown = text.lines().filter(|l| l.contains('\t')).count() as u64;
    assert_eq!(next, shown + 1);
    assert!(note.contains(" of 2000; call again with offset "), "{note}");
}

#[tokio::test]
async fn a_directory_points_to_ls_and_a_typo_to_the_real_name() {
    let fx = Fixture::new();
    fx.write("src/main.rs", "fn main() {}\n");
    let err = fx.err("read_file", json!({"path": "src"})).await;
    assert_eq!(
        err,
        "`src` is a directory, not a file; use ls to list it (or glob to find files in it)"
    );
    let err = fx.err("read_file", json!({"path": "src/mian.rs"})).await;
    assert_eq!(
        err,
        "`src/mian.rs` does not exist; did you mean `src/main.rs`?"
    );
}

/// This process's peak resident memory (`VmHWM`), in KiB: a reader that
/// loaded a 2 GiB file whole would raise it by that much.
fn peak_memory_kib() -> i64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/self/status")
}
