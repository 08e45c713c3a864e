//! `docs/tools.md` is the output of `gantry tools --markdown`, generated
//! from the tools' live schemas: this test fails when a tool, a
//! description or a parameter changed and the document was not
//! regenerated, so the reference in the repository never lies.

use std::path::Path;
use std::process::Command;

#[test]
fn docs_tools_md_is_current() {
    let dir = tempfile::tempdir().unwrap();
    // An empty root, home and state: the reference depends on none of them.
    let output = Command::new(env!("CARGO_BIN_EXE_gantry"))
        .args(["tools", "--markdown", "--root"])
        .arg(dir.path())
        .env("GANTRY_HOME", dir.path().join("home"))
        .env("GANTRY_STATE_DIR", dir.path().join("state"))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "gantry tools --markdown failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let generated = String::from_utf8(output.stdout).unwrap();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/tools.md");
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if generated != committed {
        let first_difference = generated
            .lines()
            .zip(committed.lines())
            .enumerate()
            .find(|(_, (new, old))| new != old)
            .map(|(i, (new, old))| {
                format!(
                    "line {}:\n  docs/tools.md: {old}\n  generated:     {new}",
                    i + 1
                )
            })
            .unwrap_or_else(|| {
                format!(
                    "the generated reference has {} lines, docs/tools.md {}",
                    generated.lines().count(),
                    committed.lines().count()
                )
            });
        panic!(
            "docs/tools.md is not current: regenerate it with \
             `cargo run -p gantry -- tools --markdown > docs/tools.md`\n\
             first difference, {first_difference}"
        );
    }
}
