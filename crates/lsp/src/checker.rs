//! `diagnostics "*"`: the whole project's problems. A server's workspace
//! diagnostics where it offers them, else the project's own checker
//! (`cargo check`, `tsc --noEmit`, `basedpyright`, `go build`, `dart
//! analyze`), each bounded in time and output. A checker runs the
//! project's code (build scripts, macros) at the model's request, so it
//! runs as `shell` would: in the run's sandbox, with the command
//! environment the settings allow. At read tier and in a folder not
//! trusted, only checkers from outside the checkout run, and `cargo check`
//! (the project's build scripts and proc macros) not at all.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Instant;

use gantry_core::Run;
use gantry_process::{Command, Program, Sandbox, Stderr, Stdout};

use lsp_types::request::WorkspaceDiagnosticRequest;
use lsp_types::{
    PartialResultParams, WorkDoneProgressParams, WorkspaceDiagnosticParams,
    WorkspaceDocumentDiagnosticReport,
};

use crate::convert::uri_to_path;
use crate::diagnostics::{relevant, render_file};
use crate::paths::find_markers;
use crate::server::Server;
use crate::servers::{Config, ServerSpec};
use crate::supervisor::Supervisor;
use crate::toolchain;

/// Lines of checker output shown at most.
const MAX_LINES: usize = 150;
/// Bytes of checker output read at most: far more than the lines shown,
/// so that they can be counted, but bounded.
const MAX_OUTPUT: usize = 1 << 20;

/// A checker to run: program, arguments, variables, directory.
#[derive(Debug, Clone, PartialEq)]
struct Check {
    program: PathBuf,
    args: Vec<String>,
    env: Vec<(String, String)>,
    root: PathBuf,
}

/// The checker of a server's language at `root`, or why there is none.
fn checker(
    spec: &ServerSpec,
    config: &Config,
    workspace: &Path,
    root: &Path,
) -> Result<Check, String> {
    let outside = config.toolchain.outside_only();
    let find = |names: &[&str]| {
        let checker = Program {
            binaries: names.iter().map(|n| n.to_string()).collect(),
            outside_workspace_only: outside,
            ..Program::default()
        };
        checker.resolve_binary(workspace, root).ok()
    };
    let mut env = Vec::new();
    let mut extra = Vec::new();
    let (names, args): (&[&str], Vec<&str>) = match spec.id.as_str() {
        "rust-analyzer" if outside => {
            return Err(format!(
                "`cargo check` not run ({}): it runs the project's build scripts and proc \
                 macros; to have it run, confined, {}",
                config.toolchain.why(),
                config.toolchain.remedy()
            ));
        }
        "rust-analyzer" => (
            &["cargo"],
            vec!["check", "--message-format=short", "--quiet"],
        ),
        "basedpyright" | "pyright" | "pylsp" => {
            if outside {
                let python = toolchain::outside_python(&config.planted)?;
                extra = vec!["--pythonpath".into(), python.display().to_string()];
            }
            (&["basedpyright", "pyright"], vec![])
        }
        "typescript-language-server" => {
            if !root.join("tsconfig.json").exists() {
                return Err("no tsconfig.json for `tsc --noEmit`".into());
            }
            (&["tsc"], vec!["--noEmit", "--pretty", "false", "-p", "."])
        }
        "gopls" => {
            if outside {
                env = toolchain::go_env();
            }
            (&["go"], vec!["build", "./..."])
        }
        "dart" if outside => {
            return Err(format!(
                "`dart analyze` not run ({}): analyzer plugins run the project's code; to have \
                 it run, confined, {}",
                config.toolchain.why(),
                config.toolchain.remedy()
            ));
        }
        "dart" => (&["dart"], vec!["analyze"]),
        other => return Err(format!("no project checker is known for {other}")),
    };
    let program = find(names).ok_or_else(|| {
        format!(
            "its checker `{}` is not installed (looked in {})",
            names.join("` or `"),
            if outside {
                "PATH only"
            } else {
                "the project and on PATH"
            }
        )
    })?;
    if outside {
        config.planted.vet("the checker", &program)?;
    }
    Ok(Check {
        program,
        args: args.into_iter().map(String::from).chain(extra).collect(),
        env,
        root: root.to_path_buf(),
    })
}

/// The whole project's diagnostics, each source bounded by the checker
/// timeout.
pub async fn project_diagnostics(sup: &Supervisor, run: &Run) -> String {
    let mut sections = Vec::new();
    let mut served: HashSet<String> = HashSet::new();
    for server in sup.running() {
        if let Some(text) = workspace_pull(sup, &server).await {
            served.insert(server.spec.id.clone());
            sections.push(text);
        }
    }
    let workspace = sup.workspace().to_path_buf();
    let specs = sup.config().servers.clone();
    let found = {
        let workspace = workspace.clone();
        let markers: HashSet<String> = specs
            .iter()
            .flat_map(|s| s.program.root_markers.iter().cloned())
            .collect();
        tokio::task::spawn_blocking(move || {
            let markers: HashSet<&str> = markers.iter().map(String::as_str).collect();
            find_markers(&workspace, &markers)
        })
        .await
        .unwrap_or_default()
    };
    let mut checks: Vec<(String, Check)> = Vec::new();
    let mut languages_done: HashSet<String> = HashSet::new();
    for spec in &specs {
        let language = spec.languages.first().cloned().unwrap_or_default();
        if served.contains(&spec.id) || languages_done.contains(&language) {
            continue;
        }
        let mut roots: Vec<PathBuf> = found
            .iter()
            .filter(|(_, marker)| spec.program.root_markers.contains(marker))
            .map(|(dir, _)| dir.clone())
            .collect();
        roots.sort_by_key(|r| r.components().count());
        let mut outer: Vec<PathBuf> = Vec::new();
        for root in roots {
            if !outer.iter().any(|o| root.starts_with(o)) {
                outer.push(root);
            }
        }
        if outer.is_empty() {
            continue;
        }
        languages_done.insert(language);
        for root in outer {
            match checker(spec, sup.config(), &workspace, &root) {
                Ok(check) if !checks.iter().any(|(_, c)| *c == check) => {
                    checks.push((spec.id.clone(), check))
                }
                Ok(_) => {}
                Err(why) => sections.push(format!(
                    "{} project at {}: {why}",
                    spec.languages.join("/"),
                    sup.display(&root)
                )),
            }
        }
    }
    if !checks.is_empty() {
        let sandbox = Sandbox::of(run).await;
        for (_, check) in checks {
            sections.push(run_check(sup, &check, &sandbox).await);
        }
    }
    if sections.is_empty() {
        return "none found: no project of a known language (no root marker) in the workspace"
            .into();
    }
    sections.join("\n\n")
}

async fn run_check(sup: &Supervisor, check: &Check, sandbox: &Sandbox) -> String {
    let name = check
        .program
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let command = format!("{name} {}", check.args.join(" "));
    let shown_root = sup.display(&check.root);
    let started = Instant::now();
    let child = Command::new(&check.program, sandbox)
        .args(&check.args)
        .envs(check.env.iter().map(|(key, value)| (key, value)))
        .current_dir(&check.root)
        .stdout(Stdout::Capture {
            head: MAX_OUTPUT,
            tail: 0,
        })
        .stderr(Stderr::Stdout)
        .spawn();
    let child = match child {
        Ok(child) => child,
        Err(e) => return format!("$ {command} (in {shown_root}): could not start: {e}"),
    };
    let limit = sup.config().checker_timeout;
    // Running out of time drops the child, and its group with it.
    let status = match tokio::time::timeout(limit, child.wait()).await {
        Ok(Ok(status)) => status,
        Ok(Err(e)) => return format!("$ {command} (in {shown_root}): failed: {e}"),
        Err(_) => {
            return format!(
                "$ {command} (in {shown_root}): stopped after {} s without finishing; run it with the shell tool and a longer timeout",
                limit.as_secs()
            );
        }
    };
    let Some(output) = child.output() else {
        return format!("$ {command} (in {shown_root}): its output was not captured");
    };
    // The group is dead: only a process that left it holds the pipe.
    let _ = tokio::time::timeout(std::time::Duration::from_secs(1), output.finished()).await;
    let (text, cut) = {
        let output = output.lock();
        (
            String::from_utf8_lossy(output.head()).into_owned(),
            output.cut() > 0,
        )
    };
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let status = match status.code() {
        Some(0) => "passed".to_string(),
        Some(code) => format!("exit code {code}"),
        None => "killed".into(),
    };
    let mut out = format!(
        "$ {command} (in {shown_root}): {status} after {:.1} s",
        started.elapsed().as_secs_f64()
    );
    for line in lines.iter().take(MAX_LINES) {
        out.push('\n');
        out.push_str(line);
    }
    if cut {
        out.push_str(&format!(
            "\n({} of more than {} lines shown)",
            lines.len().min(MAX_LINES),
            lines.len()
        ));
    } else if lines.len() > MAX_LINES {
        out.push_str(&format!("\n({MAX_LINES} of {} lines shown)", lines.len()));
    }
    out
}

/// Workspace-wide pull diagnostics of one server, rendered; `None` when
/// the server does not offer them or did not answer.
async fn workspace_pull(sup: &Supervisor, server: &Server) -> Option<String> {
    if !server.workspace_diagnostics() {
        return None;
    }
    let params = WorkspaceDiagnosticParams {
        identifier: None,
        previous_result_ids: Vec::new(),
        work_done_progress_params: WorkDoneProgressParams::default(),
        partial_result_params: PartialResultParams::default(),
    };
    let answer = server
        .client()
        .request::<WorkspaceDiagnosticRequest>(&params, sup.config().checker_timeout)
        .await
        .ok()?;
    let lsp_types::WorkspaceDiagnosticReportResult::Report(report) = answer else {
        return None;
    };
    let mut out = String::new();
    let mut count = 0;
    for item in report.items {
        let WorkspaceDocumentDiagnosticReport::Full(full) = item else {
            continue;
        };
        let Some(path) = uri_to_path(&full.uri) else {
            continue;
        };
        let problems: Vec<_> = full
            .full_document_diagnostic_report
            .items
            .into_iter()
            .filter(relevant)
            .collect();
        if !problems.is_empty() {
            count += problems.len();
            out.push_str(&render_file(sup, &path, "", &problems));
        }
    }
    Some(if count == 0 {
        format!("{} (workspace diagnostics): none found", server.spec.id)
    } else {
        format!(
            "{} (workspace diagnostics): {count} problem(s)\n{out}",
            server.spec.id
        )
    })
}
