//! Every tool that takes a path or a pattern, against every way out of the
//! workspace: `..`, an absolute path, a symlinked file, a symlinked folder
//! at any depth of a path or pattern (relative and absolute links), a
//! dangling link, and an absolute link that stays inside (which works).
//! Driven through the real binary (`gantry session`), so the wiring the
//! user runs is the one tried. Nothing outside may be read or written.

// Tests build their fixtures directly.
#![allow(clippy::disallowed_methods)]

mod common;

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

/// The content of the outside file: it must never show up in a reply.
const SECRET: &str = "SECRET-7f3a";

fn setup() -> (tempfile::TempDir, tempfile::TempDir) {
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let root = ws.path();
    let out = outside.path();
    std::fs::write(out.join("secret.txt"), format!("{SECRET}\n")).unwrap();
    std::fs::write(out.join("secret.py"), format!("x = '{SECRET}'\n")).unwrap();
    std::fs::write(root.join("inside.txt"), "inside\n").unwrap();
    std::fs::create_dir_all(root.join("sub/deep")).unwrap();
    let link =
        |target: &Path, name: &str| std::os::unix::fs::symlink(target, root.join(name)).unwrap();
    // A relative link out, at the top.
    let up = Path::new("..").join(out.file_name().unwrap());
    link(&up, "link_dir");
    // An absolute link out, two folders down.
    link(out, "sub/deep/abs_dir");
    link(&out.join("secret.txt"), "leak.txt");
    link(&out.join("nothing.txt"), "dangling.txt");
    link(
        &root.canonicalize().unwrap().join("inside.txt"),
        "abs_in.txt",
    );
    (ws, outside)
}

/// Runs `calls` in one `gantry session` and returns each reply.
fn session(root: &Path, calls: &[(&str, Value)]) -> Vec<Value> {
    let state = tempfile::tempdir().unwrap();
    let requests: Vec<Value> = calls
        .iter()
        .map(|(tool, args)| json!({"tool": tool, "args": args}))
        .collect();
    common::session(root, state.path(), &requests)
}

#[test]
fn no_tool_reads_or_writes_outside_by_any_escape() {
    let (ws, outside) = setup();
    let out = outside.path().canonicalize().unwrap();
    let abs_secret = out.join("secret.txt").display().to_string();
    let abs_dir = out.display().to_string();
    // Files by every escape form, and folders by every escape form.
    let files = [
        format!(
            "../{}/secret.txt",
            out.file_name().unwrap().to_string_lossy()
        ),
        abs_secret.clone(),
        "leak.txt".into(),
        "link_dir/secret.txt".into(),
        "sub/deep/abs_dir/secret.txt".into(),
        "dangling.txt".into(),
    ];
    let folders = [
        "..".to_string(),
        abs_dir.clone(),
        "link_dir".into(),
        "sub/deep/abs_dir".into(),
    ];
    let patterns = [
        "link_dir/*",
        "link_dir/**",
        "link_dir/*.txt",
        "sub/deep/abs_dir/*",
        "sub/*/abs_dir/**/*.txt",
        "**/secret.txt",
        "../*/secret.txt",
    ];
    let mut calls: Vec<(&str, Value)> = Vec::new();
    for file in &files {
        calls.push(("read_file", json!({"path": file})));
        calls.push(("read_many_files", json!({"paths": [file]})));
        calls.push(("grep", json!({"pattern": "SECRET", "path": file})));
        calls.push(("write_file", json!({"path": file, "content": "pwned\n"})));
        calls.push((
            "edit",
            json!({"path": file, "old_string": SECRET, "new_string": "pwned"}),
        ));
        calls.push((
            "apply_patch",
            json!({"patch": format!("*** Begin Patch\n*** Update File: {file}\n@@\n-{SECRET}\n+pwned\n*** End Patch\n")}),
        ));
        calls.push((
            "apply_patch",
            json!({"patch": format!("*** Begin Patch\n*** Add File: {file}.new\n+pwned\n*** End Patch\n")}),
        ));
    }
    for folder in &folders {
        calls.push(("ls", json!({"path": folder})));
        calls.push(("glob", json!({"pattern": "*", "path": folder})));
        calls.push(("grep", json!({"pattern": "SECRET", "path": folder})));
        calls.push(("read_many_files", json!({"paths": [folder]})));
        calls.push((
            "ast_grep",
            json!({"pattern": "x = $V", "path": folder, "language": "python"}),
        ));
        calls.push((
            "ast_edit",
            json!({"pattern": "x = $V", "rewrite": "x = 'pwned'", "path": folder, "language": "python"}),
        ));
        calls.push((
            "write_file",
            json!({"path": format!("{folder}/made.txt"), "content": "pwned\n"}),
        ));
    }
    for pattern in patterns {
        calls.push(("read_many_files", json!({"paths": [pattern]})));
        calls.push((
            "read_many_files",
            json!({"paths": ["inside.txt"], "include": [pattern]}),
        ));
        calls.push(("glob", json!({"pattern": pattern})));
        calls.push(("grep", json!({"pattern": "SECRET", "include": pattern})));
    }
    calls.push(("grep", json!({"pattern": "SECRET"})));
    calls.push((
        "ast_grep",
        json!({"pattern": "x = $V", "language": "python"}),
    ));

    let replies = session(ws.path(), &calls);
    for ((tool, args), reply) in calls.iter().zip(&replies) {
        let text = reply.to_string();
        assert!(!text.contains(SECRET), "{tool} {args} leaked: {text}");
        // A new file beside a link (`leak.txt.new`) is inside, and fine;
        // every other write by an escape form must be refused.
        let adds_beside = args.to_string().contains(".new");
        if ["write_file", "edit", "apply_patch", "ast_edit"].contains(tool) && !adds_beside {
            assert_eq!(reply["ok"], false, "{tool} {args} was not refused: {text}");
        }
    }
    // Outside: exactly what was there, unchanged.
    let mut names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["secret.py", "secret.txt"]);
    assert_eq!(
        std::fs::read_to_string(out.join("secret.txt")).unwrap(),
        format!("{SECRET}\n")
    );
    // Named refusals, not vague ones.
    let refusal = |i: usize| {
        replies[i]["error"]["message"]
            .as_str()
            .unwrap_or("")
            .to_string()
    };
    assert!(
        refusal(0).contains("outside the workspace"),
        "{}",
        refusal(0)
    );
    let leak = calls
        .iter()
        .position(|(t, a)| *t == "read_file" && a["path"] == "leak.txt")
        .unwrap();
    assert!(
        refusal(leak).contains("`leak.txt` is a symlink"),
        "{}",
        refusal(leak)
    );
    let deep = calls
        .iter()
        .position(|(t, a)| *t == "read_file" && a["path"] == "sub/deep/abs_dir/secret.txt")
        .unwrap();
    assert!(
        refusal(deep).contains("`sub/deep/abs_dir` is a symlink"),
        "{}",
        refusal(deep)
    );
}

#[test]
fn links_that_stay_inside_keep_working() {
    let (ws, _outside) = setup();
    let calls = [
        ("read_file", json!({"path": "abs_in.txt"})),
        ("read_many_files", json!({"paths": ["abs_in.txt"]})),
        (
            "edit",
            json!({"path": "abs_in.txt", "old_string": "inside", "new_string": "changed"}),
        ),
    ];
    let replies = session(ws.path(), &calls);
    for ((tool, args), reply) in calls.iter().zip(&replies) {
        assert_eq!(reply["ok"], true, "{tool} {args}: {reply}");
    }
    assert!(replies[0].to_string().contains("inside"));
    // Written through the link: the target changed, the link is a link.
    assert_eq!(
        std::fs::read_to_string(ws.path().join("inside.txt")).unwrap(),
        "changed\n"
    );
    assert!(
        ws.path()
            .join("abs_in.txt")
            .symlink_metadata()
            .unwrap()
            .is_symlink()
    );
}

fn fifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success());
}

#[test]
fn fifos_are_named_and_never_waited_on() {
    let ws = tempfile::tempdir().unwrap();
    fifo(&ws.path().join("pipe"));
    std::fs::write(ws.path().join("ok.txt"), "ok\n").unwrap();
    let calls = [
        ("read_file", json!({"path": "pipe"})),
        ("read_many_files", json!({"paths": ["pipe", "ok.txt"]})),
        ("write_file", json!({"path": "pipe", "content": "x"})),
        (
            "edit",
            json!({"path": "pipe", "old_string": "a", "new_string": "b"}),
        ),
        (
            "apply_patch",
            json!({"patch": "*** Begin Patch\n*** Update File: pipe\n@@\n-a\n+b\n*** End Patch\n"}),
        ),
        ("grep", json!({"pattern": "x"})),
        ("ls", json!({"path": "."})),
    ];
    let replies = session(ws.path(), &calls);
    let text = |i: usize| replies[i].to_string();
    assert_eq!(replies[0]["ok"], true);
    assert!(
        text(0).contains("is a FIFO (named pipe); its content is not read"),
        "{}",
        text(0)
    );
    assert!(
        text(1).contains("a FIFO (named pipe)") && text(1).contains("ok"),
        "{}",
        text(1)
    );
    for reply in &replies[2..5] {
        assert_eq!(reply["ok"], false, "{reply}");
        assert!(reply.to_string().contains("a FIFO (named pipe)"), "{reply}");
    }
    assert_eq!(replies[6]["ok"], true, "{}", text(6));
    assert!(
        std::fs::symlink_metadata(ws.path().join("pipe"))
            .unwrap()
            .file_type()
            .is_fifo()
    );
}

use std::os::unix::fs::FileTypeExt;

#[test]
fn a_trailing_slash_names_a_folder_and_a_hard_link_left_behind_is_said() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("f3.txt"), "old\n").unwrap();
    std::fs::write(ws.path().join("linked.txt"), "one\n").unwrap();
    std::fs::hard_link(ws.path().join("linked.txt"), ws.path().join("other.txt")).unwrap();
    let calls = [
        ("write_file", json!({"path": "f3.txt/", "content": "new\n"})),
        (
            "edit",
            json!({"path": "f3.txt/", "old_string": "old", "new_string": "new"}),
        ),
        (
            "write_file",
            json!({"path": "linked.txt", "content": "two\n"}),
        ),
    ];
    let replies = session(ws.path(), &calls);
    for reply in &replies[..2] {
        assert_eq!(reply["ok"], false);
        assert!(
            reply
                .to_string()
                .contains("ends in `/`, which names a folder"),
            "{reply}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(ws.path().join("f3.txt")).unwrap(),
        "old\n"
    );
    let text = replies[2].to_string();
    assert!(text.contains("linked.txt had 2 hard links"), "{text}");
    assert!(
        text.contains("the other link keeps the old content"),
        "{text}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("other.txt")).unwrap(),
        "one\n"
    );
}

#[test]
fn huge_lines_and_holes_stay_within_the_budgets() {
    let ws = tempfile::tempdir().unwrap();
    // One 50 MB line with a token in the middle.
    let mut line = "a".repeat(25_000_000);
    line.push_str(" TOKEN ");
    line.push_str(&"b".repeat(25_000_000));
    std::fs::write(ws.path().join("one_line.txt"), &line).unwrap();
    // 300 KB of text, then a hole of 21.5 GB.
    let text: String = (0..10_000)
        .map(|i| format!("line {i} of some text\n"))
        .collect();
    std::fs::write(ws.path().join("sparse.log"), &text).unwrap();
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(ws.path().join("sparse.log"))
        .unwrap();
    file.set_len(21_500_000_000).unwrap();
    let calls = [
        (
            "edit",
            json!({"path": "one_line.txt", "old_string": "TOKEN", "new_string": "CHANGED"}),
        ),
        (
            "write_file",
            json!({"path": "ten.txt", "content": "c".repeat(10_000_000)}),
        ),
        (
            "write_file",
            json!({"path": "ten.txt", "content": "d".repeat(10_000_000)}),
        ),
        ("read_file", json!({"path": "sparse.log", "offset": 9990})),
    ];
    let replies = session(ws.path(), &calls);
    for ((tool, _), reply) in calls.iter().zip(&replies) {
        assert_eq!(
            reply["ok"],
            true,
            "{tool}: {}",
            &reply.to_string()[..500.min(reply.to_string().len())]
        );
        let model: usize = reply["result"]["llm_content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|part| part["text"].as_str().unwrap_or("").len())
            .sum();
        let display = reply["result"]["return_display"].to_string().len();
        assert!(model <= 256 * 1024, "{tool}: {model} bytes for the model");
        assert!(
            display <= 1024 * 1024 + 1024,
            "{tool}: {display} bytes of display"
        );
    }
    let edit = replies[0].to_string();
    assert!(
        edit.contains("diff line cut at 2000 bytes"),
        "{}",
        &edit[..2000.min(edit.len())]
    );
    let read = replies[3]["result"]["llm_content"][0]["text"]
        .as_str()
        .unwrap();
    assert!(read.contains("line 9999 of some text"), "{read}");
    assert!(read.contains("over 67.1 MB long"), "{read}");
    let written = std::fs::read_to_string(ws.path().join("one_line.txt")).unwrap();
    assert_eq!(written.len(), 50_000_009);
    assert!(written.contains(" CHANGED "));
}

/// `extraRoots` widens what every tool (and the sandbox) reaches, so a
/// cloned repository's own `.gantry/settings.json` cannot set it: only the
/// user's file, or a folder the user's `trustedFolders` lists. `gantry
/// status` says what was ignored.
#[test]
fn a_workspace_cannot_widen_its_own_roots_unless_trusted() {
    let (ws, outside) = setup();
    let out = outside.path().canonicalize().unwrap();
    let secret = out.join("secret.txt").display().to_string();
    std::fs::create_dir(ws.path().join(".gantry")).unwrap();
    std::fs::write(
        ws.path().join(".gantry/settings.json"),
        json!({"extraRoots": [out]}).to_string(),
    )
    .unwrap();
    let state = tempfile::tempdir().unwrap();
    let home = state.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let read = || {
        let request = json!({"tool": "read_file", "args": {"path": secret}});
        common::session(ws.path(), state.path(), &[request]).remove(0)
    };

    let refused = read();
    assert_eq!(refused["ok"], false, "{refused}");
    assert!(!refused.to_string().contains(SECRET), "{refused}");
    let status = common::gantry(ws.path(), state.path())
        .arg("status")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&status.stderr);
    assert!(
        said.contains("ignored from") && said.contains("`extraRoots`; it widens"),
        "{said}"
    );

    std::fs::write(
        home.join("settings.json"),
        json!({"trustedFolders": [ws.path()]}).to_string(),
    )
    .unwrap();
    assert_eq!(read()["ok"], false, "listed, but the file never approved");
    common::trust(ws.path(), state.path());
    let allowed = read();
    assert_eq!(allowed["ok"], true, "{allowed}");
    assert!(allowed.to_string().contains(SECRET), "{allowed}");
}
