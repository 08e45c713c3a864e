//! The table of debug adapters (SPEC §8): how each is found (root marker
//! and binary, by gantry-process's [`Program`] rule), how it is started,
//! what `program` means to it, and which exception filters make a crash,
//! a panic or an uncaught exception stop the program with its message.

use std::path::{Path, PathBuf};

use gantry_process::Program;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

/// A debug adapter Gantry knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Adapter {
    /// Dart and Flutter: `dart debug_adapter`.
    Dart,
    /// Python: `python3 -m debugpy.adapter`.
    Debugpy,
    /// Native code (C, C++, Rust): `lldb-dap`.
    Lldb,
    /// Go: `dlv dap`.
    Delve,
}

/// How an adapter talks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// DAP on the adapter's stdin and stdout.
    Stdio,
    /// DAP on a TCP socket at 127.0.0.1, whose port the adapter prints
    /// on stdout (`dlv dap --listen 127.0.0.1:0`).
    Tcp,
}

impl Adapter {
    /// Every adapter, in the order `adapters` lists them.
    pub const ALL: [Adapter; 4] = [
        Adapter::Dart,
        Adapter::Debugpy,
        Adapter::Lldb,
        Adapter::Delve,
    ];

    /// The name used in parameters and messages.
    pub fn name(self) -> &'static str {
        match self {
            Adapter::Dart => "dart",
            Adapter::Debugpy => "debugpy",
            Adapter::Lldb => "lldb",
            Adapter::Delve => "delve",
        }
    }

    /// How the adapter is found: its binary (with the probe that proves it
    /// runs) and the root markers of the projects it serves.
    pub fn program(self) -> Program {
        let (binaries, probe, versioned, markers): (&[&str], &[&str], bool, &[&str]) = match self {
            Adapter::Dart => (&["dart"], &["--version"], false, &["pubspec.yaml"]),
            // The probe is the adapter itself: a python without debugpy is
            // "found but not usable: No module named debugpy". Isolated
            // (`-I`), as the adapter starts: a `debugpy/` in the checkout
            // is never what is imported.
            Adapter::Debugpy => (
                &["python3", "python"],
                &["-I", "-c", "import debugpy.adapter"],
                false,
                &["pyproject.toml", "setup.py", "requirements.txt"],
            ),
            Adapter::Lldb => (
                &["lldb-dap"],
                &["--help"],
                true,
                &["Cargo.toml", "CMakeLists.txt"],
            ),
            Adapter::Delve => (&["dlv"], &["version"], false, &["go.mod"]),
        };
        Program {
            binaries: binaries.iter().map(|b| b.to_string()).collect(),
            probe: Some(probe.iter().map(|a| a.to_string()).collect()),
            versioned,
            root_markers: markers.iter().map(|m| m.to_string()).collect(),
            // Adapters run in the run's sandbox: a project's own may serve.
            ..Program::default()
        }
    }

    /// The arguments the binary is started with.
    pub fn arguments(self) -> &'static [&'static str] {
        match self {
            Adapter::Dart => &["debug_adapter"],
            Adapter::Debugpy => &["-I", "-m", "debugpy.adapter"],
            Adapter::Lldb => &[],
            Adapter::Delve => &["dap", "--listen", "127.0.0.1:0"],
        }
    }

    /// How the adapter talks once started.
    pub fn wire(self) -> Wire {
        match self {
            Adapter::Delve => Wire::Tcp,
            _ => Wire::Stdio,
        }
    }

    /// The adapter that debugs `program` as given to `launch`: `-m module`
    /// or a `.py` file is Python, a `.dart` file Dart, a directory or `.go`
    /// file Go, anything else a built binary for lldb.
    pub fn for_program(program: &str, resolved: Option<&Path>) -> Adapter {
        if program.starts_with("-m ") {
            return Adapter::Debugpy;
        }
        let extension = Path::new(program).extension().and_then(|e| e.to_str());
        match extension {
            Some("py") => Adapter::Debugpy,
            Some("dart") => Adapter::Dart,
            Some("go") => Adapter::Delve,
            _ if resolved.is_some_and(Path::is_dir) => Adapter::Delve,
            _ => Adapter::Lldb,
        }
    }

    /// The exception filters sent with `setExceptionBreakpoints`, among
    /// those the adapter offers: an uncaught Python exception (debugpy),
    /// an unhandled Dart one. lldb stops on a crash's signal by itself,
    /// and delve on an unrecovered panic or a fatal error by itself.
    pub fn exception_filters(self) -> &'static [&'static str] {
        match self {
            Adapter::Debugpy => &["uncaught"],
            Adapter::Dart => &["Unhandled"],
            Adapter::Lldb | Adapter::Delve => &[],
        }
    }

    /// The `evaluate` context for an expression the model asks for:
    /// debugpy's `repl` also runs statements; lldb-dap and delve take
    /// `repl` input for their own commands, so they get `watch`.
    pub fn evaluate_context(self) -> &'static str {
        match self {
            Adapter::Debugpy | Adapter::Dart => "repl",
            Adapter::Lldb | Adapter::Delve => "watch",
        }
    }

    /// Function breakpoints set at every launch: Rust's `rust_panic`, which
    /// every panic passes through after printing its message, so a panic
    /// stops the program under lldb instead of unwinding to exit 101.
    pub fn function_breakpoints(self) -> &'static [&'static str] {
        match self {
            Adapter::Lldb => &["rust_panic"],
            _ => &[],
        }
    }
}

/// What to start: a program, or a debuggee already running.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// `launch`: a file (or for debugpy `-m module`, for delve a package
    /// directory), with its arguments.
    Launch {
        /// The program as resolved: a path, or a module name.
        program: Entry,
        /// Its command-line arguments.
        args: Vec<String>,
    },
    /// `attach` to a debug server listening on a port of 127.0.0.1
    /// (debugpy started with `--listen`, `dlv --headless`), which speaks
    /// DAP itself: nothing is started, Gantry connects to it.
    Port(u16),
    /// `attach` to a running process by id (lldb).
    Pid(u32),
}

/// The program of a launch.
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    /// A file or directory.
    Path(PathBuf),
    /// A Python module run as `python -m`.
    Module(String),
}

/// The arguments of the `launch` or `attach` request for `adapter`.
/// `cwd` is the project root; `python` the interpreter of the project
/// for debugpy's debuggee; `scratch` a directory of Gantry's own for
/// what a launch builds (delve's binary), never the workspace.
pub fn request_arguments(
    adapter: Adapter,
    target: &Target,
    cwd: &Path,
    python: Option<&Path>,
    scratch: &Path,
) -> Result<(&'static str, Value), String> {
    let mut arguments = match (adapter, target) {
        (_, Target::Launch { program, args }) => {
            let mut launch = json!({"args": args, "cwd": cwd, "stopOnEntry": false});
            match program {
                Entry::Module(module) => launch["module"] = json!(module),
                Entry::Path(path) => launch["program"] = json!(path),
            }
            match adapter {
                Adapter::Debugpy => {
                    // internalConsole: the debuggee's output comes back as
                    // output events, which `output` shows.
                    launch["console"] = json!("internalConsole");
                    launch["justMyCode"] = json!(true);
                    if let Some(python) = python {
                        launch["python"] = json!([python]);
                    }
                }
                Adapter::Delve => {
                    let built =
                        matches!(program, Entry::Path(p) if p.is_file() && is_executable(p));
                    launch["mode"] = json!(if built { "exec" } else { "debug" });
                    launch["output"] = json!(scratch.join("debug-binary"));
                }
                Adapter::Lldb | Adapter::Dart => {}
            }
            return Ok(("launch", launch));
        }
        // The port is the debug server itself (debugpy's `--listen`
        // starts its adapter there): Gantry connects to it directly.
        (Adapter::Debugpy, Target::Port(_)) => json!({"justMyCode": true}),
        (Adapter::Delve, Target::Port(_)) => json!({"mode": "remote"}),
        (Adapter::Lldb, Target::Pid(pid)) => json!({"pid": pid}),
        (adapter, Target::Port(_)) => {
            return Err(format!(
                "port: {} attaches by pid, not by port; give `pid`",
                adapter.name()
            ));
        }
        (adapter, Target::Pid(_)) => {
            return Err(format!(
                "pid: {} attaches to a port (debugpy --listen, dlv --headless), not a pid; give `port`",
                adapter.name()
            ));
        }
    };
    arguments["cwd"] = json!(cwd);
    Ok(("attach", arguments))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_program_decides_the_adapter() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(Adapter::for_program("app.py", None), Adapter::Debugpy);
        assert_eq!(Adapter::for_program("-m pkg.main", None), Adapter::Debugpy);
        assert_eq!(Adapter::for_program("bin/main.dart", None), Adapter::Dart);
        assert_eq!(
            Adapter::for_program("cmd/tool", Some(dir.path())),
            Adapter::Delve
        );
        assert_eq!(
            Adapter::for_program("target/debug/app", None),
            Adapter::Lldb
        );
    }

    #[test]
    fn attach_takes_a_port_or_a_pid_as_the_adapter_needs() {
        let here = Path::new("/p");
        let (kind, args) =
            request_arguments(Adapter::Debugpy, &Target::Port(5678), here, None, here).unwrap();
        assert_eq!(kind, "attach");
        assert_eq!(args["justMyCode"], true);
        let (_, args) =
            request_arguments(Adapter::Lldb, &Target::Pid(42), here, None, here).unwrap();
        assert_eq!(args["pid"], 42);
        let error =
            request_arguments(Adapter::Lldb, &Target::Port(1), here, None, here).unwrap_err();
        assert!(error.starts_with("port:"), "{error}");
        let error =
            request_arguments(Adapter::Debugpy, &Target::Pid(1), here, None, here).unwrap_err();
        assert!(error.starts_with("pid:"), "{error}");
    }

    #[test]
    fn debugpy_output_is_captured_and_delve_builds_outside_the_workspace() {
        let launch = Target::Launch {
            program: Entry::Module("pkg.main".into()),
            args: vec!["--fast".into()],
        };
        let (kind, args) = request_arguments(
            Adapter::Debugpy,
            &launch,
            Path::new("/p"),
            Some(Path::new("/p/.venv/bin/python")),
            Path::new("/s"),
        )
        .unwrap();
        assert_eq!(kind, "launch");
        assert_eq!(args["module"], "pkg.main");
        assert_eq!(args["console"], "internalConsole");
        assert_eq!(args["python"], json!(["/p/.venv/bin/python"]));
        let go = Target::Launch {
            program: Entry::Path("/p/cmd".into()),
            args: vec![],
        };
        let (_, args) =
            request_arguments(Adapter::Delve, &go, Path::new("/p"), None, Path::new("/s")).unwrap();
        assert_eq!(args["mode"], "debug");
        assert_eq!(args["output"], "/s/debug-binary");
    }
}
