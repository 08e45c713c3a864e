//! `save_memory` through the real pipeline and the real write path.

use gantry_core::testing::err;
use gantry_core::{Run, Workspace};
use serde_json::json;

/// GANTRY_HOME and the state directory are process-wide, so the tests that
/// use them run one after another in a single test.
#[tokio::test]
async fn saves_to_user_and_workspace_files_and_loads_both() {
    let home = tempfile::tempdir().unwrap();
    // SAFETY: set before any thread of this test binary reads it.
    unsafe { std::env::set_var("GANTRY_HOME", home.path()) };
    // The state directories in temp dirs too, before anything writes.
    let ws =
        gantry_core::testing::workspace_with(&[("GANTRY.md", "# Project\n\nBuild with make.\n")]);
    let run = gantry_memory::register(Run::builder(Workspace::new(ws.path()).unwrap())).build();

    let user = run
        .call("save_memory", json!({"fact": "The user prefers tabs."}))
        .await
        .unwrap();
    assert!(
        user.text_content().contains("Remembered in"),
        "{}",
        user.text_content()
    );
    let user_file = std::fs::read_to_string(home.path().join("GANTRY.md")).unwrap();
    assert_eq!(
        user_file,
        "## Gantry Added Memories\n\n- The user prefers tabs.\n"
    );

    run.call(
        "save_memory",
        json!({"fact": "Tests need docker", "scope": "workspace"}),
    )
    .await
    .unwrap();
    run.call(
        "save_memory",
        json!({"fact": "- CI runs\non Debian", "scope": "workspace"}),
    )
    .await
    .unwrap();
    let project = std::fs::read_to_string(ws.path().join("GANTRY.md")).unwrap();
    assert_eq!(
        project,
        "# Project\n\nBuild with make.\n\n## Gantry Added Memories\n\n- Tests need docker\n- CI runs on Debian\n"
    );

    let again = run
        .call(
            "save_memory",
            json!({"fact": "Tests need docker", "scope": "workspace"}),
        )
        .await
        .unwrap();
    assert!(again.text_content().starts_with("Already remembered"));

    let instructions = gantry_memory::instructions(ws.path());
    assert!(
        instructions.contains("The user prefers tabs."),
        "{instructions}"
    );
    assert!(instructions.contains("Build with make."));
    assert!(instructions.contains("- CI runs on Debian"));

    // Bad input names the parameter; nothing is written.
    for (args, want) in [
        (json!({"fact": ""}), "fact: expected non-empty string"),
        (json!({"fact": " - "}), "fact: expected a non-empty fact"),
        (
            json!({"fact": "x", "scope": "team"}),
            r#"scope: expected one of "user", "workspace", got "team""#,
        ),
    ] {
        let message = err(&run, "save_memory", args).await;
        assert!(message.contains(want), "{message} !~ {want}");
    }
    assert_eq!(
        std::fs::read_to_string(ws.path().join("GANTRY.md")).unwrap(),
        project
    );
    // No journal or state ever lands in the workspace.
    let names: Vec<_> = std::fs::read_dir(ws.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["GANTRY.md"]);
}
