//! Kernels run in the run's sandbox (SPEC §2, §9): a cell cannot write
//! outside the writable roots, and Gantry's kernel environment, which
//! lives in the state directory, stays writable for `%pip`. The state
//! directory of this binary is outside the temp directory on purpose, so
//! only the kernel's own rule makes it writable. Needs Landlock
//! (GANTRY_SKIP_SANDBOX=1 skips on request).

mod common;

use common::*;
use gantry_core::testing::skip_requested;
use gantry_process::sandbox::{NET_ABI, kernel_abi};

fn sandbox_here() -> bool {
    if skip_requested(
        "GANTRY_SKIP_SANDBOX",
        "the test, which needs Landlock ABI 4",
    ) {
        return false;
    }
    let abi = kernel_abi();
    assert!(
        abi >= NET_ABI,
        "this kernel offers Landlock ABI {abi}; the sandbox tests need {NET_ABI} (set \
         GANTRY_SKIP_SANDBOX=1 to skip them on purpose)"
    );
    true
}

#[tokio::test]
async fn a_cell_cannot_write_outside_the_writable_roots_but_pip_can_install() {
    if !sandbox_here() {
        return;
    }
    // Neither temp nor a cache, removed at the end; also the state
    // directory, so that only the kernel's own rule makes it writable.
    let outside = gantry_core::testing::outside_the_writable_defaults();
    // SAFETY: the binary's one test sets it before any kernel starts.
    unsafe { std::env::set_var("GANTRY_STATE_DIR", outside.path().join("state")) };
    let target = outside.path().join("escaped.txt");
    let dir = tempfile::tempdir().unwrap();
    let run = run(dir.path());
    let text = cell(
        &run,
        py(&format!("try:\n    open({:?}, 'w').write('x')\n    print('written')\nexcept PermissionError as e:\n    print('denied', e.errno)", target.display().to_string())),
    )
    .await;
    assert!(text.starts_with("denied 13"), "{text}");
    let text = cell(
        &run,
        js(&format!(
            "try {{ require('fs').writeFileSync({:?}, 'x'); 'written' }} catch (e) {{ e.code }}",
            target.display().to_string()
        )),
    )
    .await;
    assert!(text.starts_with("'EACCES'"), "{text}");
    assert!(!target.exists());
    // The kernel's own environment, in the state directory beside it, is
    // writable: a file written there lands.
    let text = cell(
        &run,
        py("import sys, os\nprobe = os.path.join(sys.prefix, 'probe.txt')\nopen(probe, 'w').write('ok')\nos.path.exists(probe), sys.prefix"),
    )
    .await;
    assert!(text.starts_with("(True, "), "{text}");
    assert!(
        text.contains(&outside.path().display().to_string()),
        "{text}"
    );
    run.shutdown().await;
}
