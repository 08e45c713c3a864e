//! Where a Python kernel runs and what it writes: the project's `.venv`
//! is preferred, `%pip` installs into the kernel's environment (the
//! `.venv`, else Gantry's own per workspace in the state directory, never
//! the system Python) and evicts the installed modules, and nothing at all
//! is written into the checkout. Fixtures are built here without the
//! network: a `.venv` from `python3 -m venv` and wheels of tiny packages.

// Tests build their fixtures directly.
#![allow(clippy::disallowed_methods)]

mod common;

use std::path::{Path, PathBuf};

use common::*;
use serde_json::json;

/// Builds `NAME-VERSION-py3-none-any.whl` in `dir`, a pure-Python package
/// whose `VALUE` is `value`.
fn wheel(dir: &Path, name: &str, version: &str, value: u32) -> PathBuf {
    let script = r#"
import base64, hashlib, sys, zipfile
out, name, version, value = sys.argv[1:]
files = {
    f"{name}/__init__.py": f"VALUE = {value}\n",
    f"{name}-{version}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
    f"{name}-{version}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: gantry-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    f"{name}-{version}.dist-info/top_level.txt": f"{name}\n",
}
record = []
path = f"{out}/{name}-{version}-py3-none-any.whl"
with zipfile.ZipFile(path, "w") as wheel:
    for file, text in files.items():
        data = text.encode()
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{file},sha256={digest},{len(data)}")
        wheel.writestr(file, data)
    record.append(f"{name}-{version}.dist-info/RECORD,,")
    wheel.writestr(f"{name}-{version}.dist-info/RECORD", "\n".join(record) + "\n")
print(path)
"#;
    let out = std::process::Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(dir)
        .arg(name)
        .arg(version)
        .arg(value.to_string())
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
}

fn pip_install(python: &Path, wheel: &Path) {
    let out = std::process::Command::new(python)
        .args([
            "-m",
            "pip",
            "install",
            "-q",
            "--no-index",
            "--disable-pip-version-check",
        ])
        .arg(wheel)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn the_projects_venv_is_preferred_and_pip_installs_into_it_and_evicts() {
    let dir = workspace(&[]);
    let wheels = tempfile::tempdir().unwrap();
    let made = std::process::Command::new("python3")
        .args(["-m", "venv"])
        .arg(dir.path().join(".venv"))
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let venv_python = dir.path().join(".venv/bin/python");
    pip_install(&venv_python, &wheel(wheels.path(), "tinyone", "0.1", 1));
    let run = run(dir.path());
    let text = cell(&run, py("import sys, tinyone\nsys.prefix, tinyone.VALUE")).await;
    assert!(text.contains(".venv', 1)"), "{text}");
    assert!(text.contains("the project's .venv"), "{text}");

    // No IPython in this .venv: the idioms go through the rewriter.
    let text = cell(&run, py("try:\n    import IPython\nexcept ImportError:\n    print('no IPython')\n!echo from-venv")).await;
    assert!(text.starts_with("no IPython\nfrom-venv"), "{text}");

    let first = wheel(wheels.path(), "tinytwo", "0.1", 1);
    let text = cell(
        &run,
        py(&format!(
            "%pip install --no-index {}\nimport tinytwo\ntinytwo.VALUE",
            first.display()
        )),
    )
    .await;
    assert!(text.contains("\n1\n"), "{text}");
    let second = wheel(wheels.path(), "tinytwo", "0.2", 2);
    let text = cell(
        &run,
        py(&format!(
            "%pip install --no-index {}\nimport tinytwo\ntinytwo.VALUE",
            second.display()
        )),
    )
    .await;
    assert!(text.contains("tinytwo removed from sys.modules"), "{text}");
    assert!(
        text.contains("\n2\n"),
        "the new version is imported: {text}"
    );
    let site = std::process::Command::new(&venv_python)
        .args(["-c", "import tinytwo; print(tinytwo.VALUE)"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&site.stdout).trim(),
        "2",
        "installed into the .venv"
    );
    run.shutdown().await;
}

#[tokio::test]
async fn without_a_venv_pip_installs_into_gantrys_environment_not_the_system() {
    let dir = workspace(&[]);
    let wheels = tempfile::tempdir().unwrap();
    let package = wheel(wheels.path(), "tinythree", "0.1", 3);
    let run = run(dir.path());
    let text = cell(
        &run,
        py(&format!(
            "%pip install --no-index {}\nimport sys, tinythree\nsys.prefix, tinythree.VALUE",
            package.display()
        )),
    )
    .await;
    let state = gantry_core::testing::state_dir().join("kernel");
    assert!(text.contains(&state.display().to_string()), "{text}");
    assert!(text.contains(", 3)"), "{text}");
    let system = std::process::Command::new("python3")
        .args(["-c", "import tinythree"])
        .output()
        .unwrap();
    assert!(!system.status.success(), "the system Python was modified");
    run.shutdown().await;
}

#[tokio::test]
async fn nothing_is_written_into_the_workspace() {
    let dir = workspace(&[("data.csv", "a,b\n1,2\n"), ("src/mod.py", "X = 1\n")]);
    let before = snapshot(dir.path());
    // Bytecode caching on, whatever this machine's environment says, so
    // that importing a module of the checkout would write a __pycache__.
    let run = run_with_settings(
        dir.path(),
        json!({"shellEnvironmentPolicy": {"exclude": ["PYTHONDONTWRITEBYTECODE"]}}),
    );
    cell(
        &run,
        py("import sys\nassert not sys.dont_write_bytecode\nimport src.mod\nimport pandas as pd\nframe = pd.read_csv('data.csv')\nimport matplotlib.pyplot as plt\nplt.plot(frame['a'])\n!echo shell\nframe"),
    )
    .await;
    cell(&run, py("%%timeit\nsum(range(10))")).await;
    cell(
        &run,
        js("const fs = require('fs'); fs.readFileSync('data.csv', 'utf8').length"),
    )
    .await;
    run.shutdown().await;
    assert_eq!(before, snapshot(dir.path()), "the workspace changed");
}

#[tokio::test]
async fn status_says_which_interpreters_cells_run() {
    use gantry_core::Family;
    let dir = workspace(&[]);
    let run = run(dir.path());
    let lines = Family::status(&gantry_kernel::FAMILY, &run).await;
    assert!(
        lines[0].contains("Gantry's environment for this workspace"),
        "{lines:?}"
    );
    assert!(
        lines[1].starts_with("eval: JavaScript cells run /"),
        "{lines:?}"
    );
    std::fs::create_dir_all(dir.path().join(".venv/bin")).unwrap();
    std::fs::write(dir.path().join(".venv/bin/python"), "").unwrap();
    let lines = Family::status(&gantry_kernel::FAMILY, &run).await;
    assert!(lines[0].ends_with(".venv/bin/python"), "{lines:?}");
}
