//! `gantry`: one registry of tools for coding agents, served over MCP
//! (`gantry mcp`) and the command line (`gantry call`, `gantry session`).

mod http_tokens;
mod log;
mod reference;
mod terminal;

use std::io::{BufRead, IsTerminal, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};
use gantry_core::{ApprovalMode, CallError, Human, Run, Surface, Tier, ToolResult};
use serde_json::{Value, json};

use crate::terminal::TerminalHuman;
use gantry_assembly::RunConfig;

/// Gantry: one registry of tools for coding agents.
#[derive(Parser)]
#[command(version, about, long_about = None)]
struct Cli {
    /// Workspace root (default: the current directory).
    #[arg(long, global = true, value_name = "DIR")]
    root: Option<PathBuf>,
    /// Also read this settings file, at the user level (a `.qwen/` or
    /// `.gemini/settings.json` is read as it is); repeat for several.
    #[arg(long = "settings", global = true, value_name = "FILE")]
    settings_files: Vec<PathBuf>,
    /// Write logs to this file instead of stderr.
    #[arg(long, global = true, value_name = "FILE")]
    log_file: Option<PathBuf>,
    /// More logging (-v info, -vv debug); RUST_LOG overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args, Clone, Copy)]
struct SurfaceArgs {
    /// Highest tier of tools shown: read, write or exec.
    #[arg(long, default_value = "exec")]
    tier: Tier,
    /// When Gantry asks before running a tool: client, default, auto-edit,
    /// yolo, plan. Default: client (Gantry asks no one; an MCP client asks
    /// its user as it does for its own tools, guided by their annotations).
    #[arg(long)]
    approval: Option<ApprovalMode>,
}

impl SurfaceArgs {
    fn surface(self, default_approval: ApprovalMode) -> Surface {
        Surface::new(self.tier, self.approval.unwrap_or(default_approval))
    }
}

#[derive(Subcommand)]
enum Command {
    /// Serve MCP on stdio (or streamable HTTP with --http): one run per MCP
    /// session (on protocol 2026-07-28, one per bearer token).
    Mcp {
        #[command(flatten)]
        surface: SurfaceArgs,
        /// Serve streamable HTTP at this address (e.g. 127.0.0.1:8765) instead of stdio.
        #[arg(long, value_name = "ADDR")]
        http: Option<SocketAddr>,
        /// A file of bearer tokens for --http, one per line (blank lines
        /// and lines starting with `#` skipped). Tokens also come from
        /// GANTRY_HTTP_TOKEN (comma-separated); with none, one is made and
        /// printed at start. On protocol 2026-07-28 each token gets its own run.
        #[arg(long, value_name = "FILE")]
        tokens_file: Option<PathBuf>,
        /// A bearer token for --http (repeat it for several). Every process
        /// of this machine can read a command line (/proc/PID/cmdline):
        /// prefer --tokens-file or GANTRY_HTTP_TOKEN.
        #[arg(long = "token", value_name = "TOKEN")]
        tokens: Vec<String>,
        /// Serve --http on loopback without a bearer token: any process of
        /// this machine, the commands Gantry runs included, can then call
        /// every tool.
        #[arg(long, requires = "http", conflicts_with_all = ["tokens", "tokens_file"])]
        no_token: bool,
        /// Extra browser origin allowed to call --http (loopback origins always are).
        #[arg(long = "allow-origin", value_name = "ORIGIN")]
        allow_origins: Vec<String>,
        /// Seconds of inactivity after which an HTTP session and its run end.
        #[arg(long, value_name = "SECONDS", default_value_t = 1800)]
        idle_timeout: u64,
    },
    /// List the tools a surface would see, with their schemas under --json.
    Tools {
        #[command(flatten)]
        surface: SurfaceArgs,
        /// Print every tool's full listing as JSON.
        #[arg(long)]
        json: bool,
        /// Print the reference of every tool, all tiers, as Markdown (docs/tools.md).
        #[arg(long, conflicts_with = "json")]
        markdown: bool,
    },
    /// Run one tool call in a fresh run and print what a person would see.
    Call {
        /// Tool name.
        tool: String,
        /// Parameters as a JSON object (default: {}).
        args: Option<String>,
        #[command(flatten)]
        surface: SurfaceArgs,
        /// Print the whole result (llm_content and return_display) as JSON.
        #[arg(long)]
        json: bool,
    },
    /// One run fed JSON calls on stdin, one per line; one JSON result per line on stdout.
    Session {
        #[command(flatten)]
        surface: SurfaceArgs,
    },
    /// Run a brief headless as one background worker (worker mode's agent
    /// loop, the `workers` settings) and print its report.
    Agent {
        /// The brief: the whole task, self-contained.
        #[arg(short = 'p', long = "prompt", value_name = "BRIEF")]
        brief: String,
        /// The worker tier: fast or good (default: fast when configured).
        #[arg(long = "worker-tier", value_name = "TIER")]
        worker_tier: Option<String>,
        #[command(flatten)]
        surface: SurfaceArgs,
    },
    /// What a run here would wire, and why anything is missing.
    Status {
        #[command(flatten)]
        surface: SurfaceArgs,
    },
    /// Approve a workspace's .gantry/settings.json as it is now, as
    /// direnv's `allow`: a folder your trustedFolders lists is trusted
    /// while the file keeps exactly this content.
    Trust {
        /// The workspace folder, its .gantry, or its .gantry/settings.json,
        /// relative to --root (default: the workspace root itself).
        path: Option<PathBuf>,
    },
    /// The runs on this machine and what they did, from the run logs in
    /// Gantry's state directory: runs newest last, or one run's records.
    Log {
        /// One run's records (its id, or `last`).
        #[arg(long, value_name = "ID")]
        run: Option<String>,
        /// Keep printing new records as runs write them.
        #[arg(short, long)]
        follow: bool,
        /// The records (or run outlines) as JSON lines.
        #[arg(long)]
        json: bool,
        /// Only what came after a time (2026-12-02T07:30:00Z) or a span
        /// back from now (90s, 10m, 2h, 3d).
        #[arg(long, value_name = "WHEN")]
        since: Option<String>,
    },
    /// Serve a page on loopback that shows every run on this machine,
    /// live: calls and results, diffs, images, workers, what is running,
    /// what the sandbox refused. Prints the address, with its token.
    View {
        /// The port (default: any free one).
        #[arg(long, default_value_t = 0)]
        port: u16,
    },
}

fn main() -> std::process::ExitCode {
    // `gantry __reap -- COMMAND`: this binary is also the reaper every
    // command runs under, so an installed Gantry needs no second binary.
    // First, before arguments are parsed or a thread starts.
    gantry_process::reaper::run_if_invoked();
    gantry_process::reaper::use_current_exe();
    // SAFETY: before any thread and before anything parses.
    unsafe { gantry_assembly::use_mimalloc_for_trees() };
    let cli = Cli::parse();
    if let Err(error) = init_logging(&cli) {
        eprintln!("gantry: {error:#}");
        return std::process::ExitCode::from(2);
    }
    gantry_process::sandbox::shield_gantry();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("gantry: cannot start the async runtime: {error}");
            return std::process::ExitCode::from(2);
        }
    };
    let outcome = runtime.block_on(dispatch(cli));
    // Reading stdin parks a blocking thread that a terminal never releases;
    // do not wait for it on the way out.
    runtime.shutdown_timeout(Duration::from_millis(200));
    match outcome {
        Ok(code) => code,
        // `gantry tools --json | head -1`: the reader has what it wanted.
        Err(error) if broken_pipe(&error) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("gantry: {error:#}");
            std::process::ExitCode::from(2)
        }
    }
}

/// Whether `error` is a write to a pipe whose reader has gone: the end of
/// the output was not wanted, which is no failure worth a message.
fn broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Whether `error` is stdin ending before any MCP client spoke: `gantry
/// mcp` run by hand with nothing on stdin, not a client that went away.
fn no_mcp_client(error: &anyhow::Error) -> bool {
    use rmcp::service::ServerInitializeError;
    error.chain().any(|cause| {
        matches!(
            cause.downcast_ref::<ServerInitializeError>(),
            Some(ServerInitializeError::ConnectionClosed(context)) if context == "initialize request"
        )
    })
}

fn init_logging(cli: &Cli) -> anyhow::Result<()> {
    // Levels as values, not strings: a front end names no tool, and
    // "debug" is one.
    use tracing_subscriber::filter::LevelFilter;
    let level = match cli.verbose {
        0 => LevelFilter::WARN,
        1 => LevelFilter::INFO,
        _ => LevelFilter::DEBUG,
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::default().add_directive(level.into()));
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    match &cli.log_file {
        Some(path) => {
            // --log-file: the file the person named for Gantry's own logs.
            #[allow(clippy::disallowed_methods)]
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .with_context(|| format!("cannot open log file {}", path.display()))?;
            builder.with_ansi(false).with_writer(Arc::new(file)).init();
        }
        None => builder.with_writer(std::io::stderr).init(),
    }
    Ok(())
}

async fn dispatch(cli: Cli) -> anyhow::Result<std::process::ExitCode> {
    let root = match &cli.root {
        Some(root) => root.clone(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let config = |surface: Surface| RunConfig {
        root: root.clone(),
        surface,
        settings_files: cli.settings_files.clone(),
    };
    let interactive = || TerminalHuman::if_interactive().map(|h| Arc::new(h) as Arc<dyn Human>);
    match cli.command {
        Command::Mcp {
            surface,
            http,
            tokens,
            tokens_file,
            no_token,
            allow_origins,
            idle_timeout,
        } => {
            let config = config(surface.surface(ApprovalMode::Client));
            // Fail now, not at the first client request, on a bad root or settings.
            gantry_assembly::open_with(&config.root, &config.settings_files)?;
            let factory: gantry_mcp::RunFactory = Arc::new(move |human, origin| {
                let config = config.clone();
                Box::pin(
                    async move { gantry_assembly::build_run(&config, human, Some(origin)).await },
                )
            });
            let shutdown = shutdown_signal()?;
            match http {
                Some(addr) => {
                    let cancel = gantry_core::CancellationToken::new();
                    let options = gantry_mcp::HttpOptions {
                        addr,
                        access: http_tokens::http_access(tokens, tokens_file.as_deref(), no_token)?,
                        allowed_origins: allow_origins,
                        idle: Duration::from_secs(idle_timeout.max(1)),
                        cancel: cancel.clone(),
                    };
                    let server = gantry_mcp::serve_http(factory, options);
                    tokio::pin!(server);
                    tokio::select! {
                        result = &mut server => result?,
                        _ = shutdown => {
                            // Let the server end its runs before the process
                            // goes, for a moment: past it, dropping the server
                            // kills what is left, so a signal ends the process
                            // within a second.
                            cancel.cancel();
                            if let Ok(result) = tokio::time::timeout(STOP_GRACE, &mut server).await {
                                result?;
                            }
                        }
                    }
                }
                None => {
                    if std::io::stdin().is_terminal() {
                        print_mcp_hint(&root);
                    }
                    tokio::select! {
                        result = gantry_mcp::serve_stdio(factory) => match result {
                            Err(error) if no_mcp_client(&error) => {
                                eprintln!(
                                    "gantry mcp: stdin closed before any MCP client sent `initialize`; \
                                     run it from an MCP client (see README), or try tools with `gantry call`"
                                );
                                return Ok(std::process::ExitCode::FAILURE);
                            }
                            other => other?,
                        },
                        _ = shutdown => {}
                    }
                }
            }
            Ok(std::process::ExitCode::SUCCESS)
        }
        Command::Tools {
            surface,
            json,
            markdown,
        } => {
            if markdown {
                let run = gantry_assembly::reference_run(&root).await?;
                let tools = run.registry().list(Tier::Exec);
                let docs: Vec<reference::ToolDoc> = tools.iter().map(Into::into).collect();
                std::io::stdout().write_all(reference::markdown(&docs).as_bytes())?;
                return Ok(std::process::ExitCode::SUCCESS);
            }
            let run = gantry_assembly::build_run(
                &config(surface.surface(ApprovalMode::Client)),
                None,
                None,
            )
            .await?;
            run.arrived().await;
            print_tools(&run, json)?;
            Ok(std::process::ExitCode::SUCCESS)
        }
        Command::Call {
            tool,
            args,
            surface,
            json,
        } => {
            let run = gantry_assembly::build_run(
                &config(surface.surface(ApprovalMode::Client)),
                interactive(),
                Some(origin("call")),
            )
            .await?;
            let args: Value = match args.as_deref().map(serde_json::from_str).transpose() {
                Ok(args) => args.unwrap_or_else(|| json!({})),
                Err(error) => {
                    let text = args.unwrap_or_default();
                    let example = example_call(&run, &tool, &text);
                    run.shutdown().await;
                    anyhow::bail!(
                        "the arguments are not JSON ({error}): {text}\n\
                         give them as a JSON object, quoted for the shell: {example}"
                    );
                }
            };
            let outcome = run.call(&tool, args).await;
            run.shutdown().await;
            Ok(print_call(outcome, json))
        }
        Command::Session { surface } => {
            let run = gantry_assembly::build_run(
                &config(surface.surface(ApprovalMode::Client)),
                interactive(),
                Some(origin("session")),
            )
            .await?;
            let outcome = session(&run).await;
            run.shutdown().await;
            outcome?;
            Ok(std::process::ExitCode::SUCCESS)
        }
        Command::Agent {
            brief,
            worker_tier,
            surface,
        } => {
            let run = gantry_assembly::build_run(
                &config(surface.surface(ApprovalMode::Client)),
                interactive(),
                Some(origin("agent")),
            )
            .await?;
            let outcome = gantry_assembly::run_agent(&run, &brief, worker_tier.as_deref()).await;
            run.shutdown().await;
            let ended = outcome.map_err(|why| anyhow::anyhow!("agent: {why}"))?;
            for action in &ended.actions {
                eprintln!("- {action}");
            }
            eprintln!("gantry agent: {}", ended.summary);
            print_out(&ended.report);
            Ok(if ended.answered {
                std::process::ExitCode::SUCCESS
            } else {
                std::process::ExitCode::FAILURE
            })
        }
        Command::Log {
            run,
            follow,
            json,
            since,
        } => tokio::task::block_in_place(|| {
            log::print(log::LogArgs {
                run,
                follow,
                json,
                since,
            })
        }),
        Command::View { port } => {
            gantry_view::serve(port, gantry_core::runlog::runs_dir(), shutdown_signal()?).await?;
            Ok(std::process::ExitCode::SUCCESS)
        }
        Command::Trust { path } => {
            use gantry_core::trust::{Approvals, WorkspaceTrust, root_named};
            let folder = root_named(&path.map_or_else(|| root.clone(), |path| root.join(path)));
            let said = Approvals::of_user().approve(&folder)?;
            println!("{said}");
            // What the next run will make of it, read as it will read it.
            let settings = gantry_core::Settings::load_with(&cli.settings_files, &folder)?;
            match settings.workspace_trust() {
                WorkspaceTrust::Trusted => Ok(std::process::ExitCode::SUCCESS),
                WorkspaceTrust::NotListed => {
                    println!(
                        "its folder is not in the `trustedFolders` of your own settings, so it \
                         stays untrusted until you add {} there",
                        folder.display()
                    );
                    Ok(std::process::ExitCode::SUCCESS)
                }
                WorkspaceTrust::Withheld(why) => {
                    eprintln!("gantry trust: {why}");
                    Ok(std::process::ExitCode::FAILURE)
                }
            }
        }
        Command::Status { surface } => {
            let run = gantry_assembly::build_run(
                &config(surface.surface(ApprovalMode::Client)),
                interactive(),
                None,
            )
            .await?;
            let printed = match print_status(&run) {
                Ok(()) => print_family_status(&run).await,
                failed => failed,
            };
            run.shutdown().await;
            printed?;
            Ok(std::process::ExitCode::SUCCESS)
        }
    }
}

/// How long `gantry mcp --http` lets its runs end politely after a signal.
const STOP_GRACE: Duration = Duration::from_millis(500);

/// SIGINT or SIGTERM. The handlers are installed by this call, not when the
/// future is first polled: a signal sent the moment the server says it
/// listens must stop it gracefully, not kill it outright.
/// Where a run the command line opens comes from, for its log.
fn origin(front: &str) -> gantry_core::runlog::Origin {
    gantry_core::runlog::Origin {
        front: front.into(),
        client: None,
    }
}

fn shutdown_signal() -> anyhow::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).context("installing a SIGTERM handler")?;
    let mut interrupt = signal(SignalKind::interrupt()).context("installing a SIGINT handler")?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = interrupt.recv() => {}
        }
    })
}

fn print_mcp_hint(root: &std::path::Path) {
    eprintln!(
        "gantry mcp: serving the Model Context Protocol on stdin/stdout for {root}.\n\
         It waits for an MCP client; nothing happens until one speaks JSON-RPC here.\n\n\
         Register it with a client, e.g. Claude Code:\n  claude mcp add gantry -- gantry mcp\n\
         or in Qwen Code / Gemini CLI settings.json:\n  \"mcpServers\": {{ \"gantry\": {{ \"command\": \"gantry\", \"args\": [\"mcp\"] }} }}\n\n\
         To try a tool by hand instead:\n  gantry tools\n  gantry call read_file '{{\"path\": \"README.md\"}}'\n\n\
         Press Ctrl-C to quit.",
        root = root.display()
    );
}

fn print_tools(run: &Run, json: bool) -> anyhow::Result<()> {
    let tools = run.tools();
    let mut out = std::io::stdout().lock();
    if json {
        // Serialised first, so a closed stdout is an io::Error main knows.
        let text = serde_json::to_string_pretty(&tools)?;
        writeln!(out, "{text}")?;
        return Ok(());
    }
    let width = tools.iter().map(|t| t.name.len()).max().unwrap_or(0);
    for tool in &tools {
        let first = reference::first_sentence(&tool.description);
        writeln!(
            out,
            "{:width$}  {:5}  {first}",
            tool.name,
            tool.tier.as_str()
        )?;
    }
    let absent: Vec<String> = withheld_by_reason(run)
        .into_iter()
        .map(|(names, reason)| format!("{} ({})", names.join(", "), headline(&reason)))
        .collect();
    if !absent.is_empty() {
        writeln!(
            out,
            "\nnot here: {}; `gantry status` says why and how to wire them",
            absent.join("; ")
        )?;
    }
    Ok(())
}

/// The tools withheld from `run`, grouped by their reason (the five of
/// worker mode share one), in name order.
fn withheld_by_reason(run: &Run) -> Vec<(Vec<String>, String)> {
    let mut groups: Vec<(Vec<String>, String)> = Vec::new();
    for (name, reason) in run.registry().withheld() {
        match groups.iter_mut().find(|(_, r)| r == reason) {
            Some((names, _)) => names.push(name.to_string()),
            None => groups.push((vec![name.to_string()], reason.to_string())),
        }
    }
    groups
}

/// A reason's first words, before its first colon or parenthesis: "worker
/// mode is off", "no person is wired to this run".
fn headline(reason: &str) -> &str {
    reason
        .split([':', '(', ';'])
        .next()
        .unwrap_or(reason)
        .trim()
}

fn print_call(outcome: Result<ToolResult, CallError>, json: bool) -> std::process::ExitCode {
    match outcome {
        Ok(result) => {
            let text = if json {
                serde_json::to_string_pretty(&result).unwrap_or_default()
            } else {
                result.return_display.to_text()
            };
            print_out(&text);
            std::process::ExitCode::SUCCESS
        }
        Err(error) => {
            if json {
                print_out(&error_json(&error).to_string());
            } else {
                eprintln!("{}", error.message);
            }
            std::process::ExitCode::FAILURE
        }
    }
}

/// `gantry call TOOL '{...}'` with `text` as the value of the tool's first
/// required parameter, for someone who wrote `gantry call read_file app.py`.
fn example_call(run: &Run, tool: &str, text: &str) -> String {
    let first_required = run
        .tools()
        .into_iter()
        .find(|listing| listing.name == tool)
        .and_then(|listing| {
            listing.input_schema["required"][0]
                .as_str()
                .map(String::from)
        });
    match first_required {
        Some(name) => format!("gantry call {tool} '{{{}: {}}}'", json!(name), json!(text)),
        None => format!(
            "gantry call {tool} '{{\"name\": \"value\"}}' (`gantry tools --json` lists its parameters)"
        ),
    }
}

/// Prints a line to stdout; a reader that went away (`| head`) is not an
/// error worth a panic.
fn print_out(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}").and_then(|()| out.flush());
}

fn error_json(error: &CallError) -> Value {
    json!({"ok": false, "error": {"kind": format!("{:?}", error.kind), "message": error.message}})
}

/// One JSON call per line: `{"tool": NAME, "args": {...}, "id": ANY}` (MCP's
/// `name`/`arguments` spelling works too). Calls run in order.
async fn session(run: &Run) -> anyhow::Result<()> {
    let (lines_tx, mut lines) = tokio::sync::mpsc::channel::<String>(16);
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if lines_tx.blocking_send(line).is_err() {
                break;
            }
        }
    });
    let mut out = std::io::stdout();
    while let Some(line) = lines.recv().await {
        if line.trim().is_empty() {
            continue;
        }
        let reply = session_call(run, &line).await;
        writeln!(out, "{reply}")?;
        out.flush()?;
    }
    Ok(())
}

async fn session_call(run: &Run, line: &str) -> Value {
    let request: Value = match serde_json::from_str(line) {
        Ok(value) => value,
        Err(e) => {
            return json!({"ok": false, "error": {"kind": "InvalidRequest", "message": format!("not a JSON object: {e}")}});
        }
    };
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let name = request
        .get("tool")
        .or_else(|| request.get("name"))
        .and_then(Value::as_str);
    let Some(name) = name else {
        return json!({"id": id, "ok": false, "error": {"kind": "InvalidRequest", "message": "each line needs \"tool\" (the tool name) and \"args\" (an object)"}});
    };
    let args = request
        .get("args")
        .or_else(|| request.get("arguments"))
        .cloned()
        .unwrap_or(json!({}));
    match run.call(name, args).await {
        Ok(result) => json!({"id": id, "ok": true, "result": result}),
        Err(error) => {
            let mut reply = error_json(&error);
            reply["id"] = id;
            reply
        }
    }
}

/// Writes what is wired; an error is stdout going away.
fn print_status(run: &Run) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    let surface = run.surface();
    writeln!(out, "workspace: {}", run.workspace().root().display())?;
    let files = run.settings().files();
    if files.is_empty() {
        writeln!(out, "settings: none (defaults)")?;
    } else {
        for file in files {
            writeln!(out, "settings: {}", file.display())?;
        }
    }
    writeln!(out, "workspace trust: {}", run.settings().workspace_trust())?;
    writeln!(
        out,
        "surface: tier cap {}, approval {}",
        surface.cap, surface.approval
    )?;
    writeln!(out, "\ntools wired:")?;
    for tier in Tier::ALL {
        let names: Vec<String> = run
            .registry()
            .list(Tier::Exec)
            .into_iter()
            .filter(|t| t.tier == tier)
            .map(|t| {
                if t.tier > surface.cap {
                    format!("{} (hidden above cap)", t.name)
                } else {
                    t.name
                }
            })
            .collect();
        if !names.is_empty() {
            writeln!(out, "  {tier:5}  {}", names.join(", "))?;
        }
    }
    let withheld = withheld_by_reason(run);
    if !withheld.is_empty() {
        writeln!(out, "\nnot wired here:")?;
        for (names, reason) in withheld {
            writeln!(out, "  {}: {reason}", names.join(", "))?;
        }
    }
    writeln!(out, "\nheld by this run (ended with it):")?;
    for line in run.resource_status() {
        writeln!(out, "  {line}")?;
    }
    Ok(())
}

/// What `gantry status` adds from the families that can explain themselves
/// (which language servers can start here, and why not).
async fn print_family_status(run: &Run) -> std::io::Result<()> {
    let mut out = std::io::stdout();
    for (family, lines) in gantry_assembly::status(run).await {
        writeln!(out, "\n{family}:")?;
        for line in lines {
            writeln!(out, "{line}")?;
        }
    }
    Ok(())
}
