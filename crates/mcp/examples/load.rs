//! A load generator for `gantry mcp` (bench/load.sh): many concurrent
//! `tools/call`s over one stdio connection, or many streamable HTTP
//! sessions each making calls one after another, through the official
//! MCP Rust SDK as the client. Prints each call's latency percentiles, the
//! calls that failed, and the server's resident memory (now and at its
//! peak, from `/proc`).
//!
//! ```text
//! load GANTRY WORKSPACE stdio CALLS
//! load GANTRY WORKSPACE http SESSIONS CALLS_PER_SESSION [EVERY_MS]
//! load GANTRY WORKSPACE tokens TOKENS CALLS_PER_TOKEN
//! ```
//!
//! Every call reads `README.md` of WORKSPACE with `read_file`; the server
//! runs with no user settings of its own (`HOME` a fresh folder). In
//! `http`, each session makes its calls back to back (saturating: the
//! latency is then mostly the queue), or with EVERY_MS one call every that
//! many milliseconds (a fleet at a pace below the machine's capacity). In
//! `tokens`, each bearer token is a client of protocol 2026-07-28 (no
//! session: the token is the run) that also starts a background `shell`
//! job printing its own marker, polls it to its end, and asks for the
//! next token's job by its handle: a run that sees another's output is
//! counted as a leak.

use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ProtocolVersion};
use rmcp::service::RunningService;
use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

type Client = RunningService<rmcp::RoleClient, ()>;

/// Every call's bound: a call past it counts as failed (a deadlock shows
/// as failures, not a hung generator).
const CALL_BOUND: Duration = Duration::from_secs(30);

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: load GANTRY WORKSPACE stdio CALLS | load GANTRY WORKSPACE http SESSIONS CALLS_PER_SESSION | load GANTRY WORKSPACE tokens TOKENS CALLS_PER_TOKEN";
    let (gantry, workspace, mode) = match &args[1..] {
        [gantry, workspace, mode, ..] => (gantry, workspace.clone(), mode.as_str()),
        _ => panic!("{usage}"),
    };
    // The server starts in the workspace: a relative path would not lead
    // to it from there.
    let gantry = std::fs::canonicalize(gantry)
        .unwrap_or_else(|e| panic!("{gantry}: {e}"))
        .display()
        .to_string();
    let number = |at: usize| -> usize {
        args.get(at)
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{usage}"))
    };
    let home = tempfile::tempdir().expect("a home");
    let report = match mode {
        "stdio" => stdio(&gantry, &workspace, home.path(), number(4)).await,
        "http" => {
            let every = args.get(6).map(|_| Duration::from_millis(number(6) as u64));
            http(
                &gantry,
                &workspace,
                home.path(),
                number(4),
                number(5),
                every,
            )
            .await
        }
        "tokens" => tokens(&gantry, &workspace, home.path(), number(4), number(5)).await,
        _ => panic!("{usage}"),
    };
    println!("{report}");
}

/// One server process with a fresh home.
fn server(gantry: &str, workspace: &str, home: &std::path::Path) -> Command {
    let mut command = Command::new(gantry);
    command
        .current_dir(workspace)
        .env("HOME", home)
        .env_remove("XDG_CONFIG_HOME")
        .env("XDG_STATE_HOME", home.join("state"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    command
}

fn read_file() -> CallToolRequestParams {
    let mut params = CallToolRequestParams::new("read_file");
    params.arguments = serde_json::json!({"path": "README.md"})
        .as_object()
        .cloned();
    params
}

/// One call, timed; `None` when it failed or passed [`CALL_BOUND`].
async fn timed_call(client: &Client, params: CallToolRequestParams) -> Option<Duration> {
    let started = Instant::now();
    match tokio::time::timeout(CALL_BOUND, client.call_tool(params)).await {
        Ok(Ok(result)) if result.is_error != Some(true) => Some(started.elapsed()),
        _ => None,
    }
}

async fn stdio(gantry: &str, workspace: &str, home: &std::path::Path, calls: usize) -> String {
    let mut child = server(gantry, workspace, home)
        .arg("mcp")
        .spawn()
        .expect("gantry mcp starts");
    let transport = (
        child.stdout.take().expect("stdout"),
        child.stdin.take().expect("stdin"),
    );
    let client: Arc<Client> = Arc::new(().serve(transport).await.expect("initialize"));
    let measure = Measure::start(&child);
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..calls {
        let client = client.clone();
        tasks.spawn(async move { timed_call(&client, read_file()).await });
    }
    let latencies = tasks.join_all().await;
    let report = measure.summary(
        &format!("stdio, {calls} concurrent calls on one connection"),
        &latencies,
        &child,
    );
    drop(client);
    let _ = child.kill().await;
    report
}

/// `gantry mcp --http` on a free loopback port for `tokens` (comma-separated
/// in `GANTRY_HTTP_TOKEN`), serving once this returns; and its URL.
async fn http_server(
    gantry: &str,
    workspace: &str,
    home: &std::path::Path,
    tokens: &[String],
) -> (Child, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let mut child = server(gantry, workspace, home)
        .args(["mcp", "--http", &format!("127.0.0.1:{port}")])
        .env("GANTRY_HTTP_TOKEN", tokens.join(","))
        .spawn()
        .expect("gantry mcp --http starts");
    wait_serving(&mut child).await;
    (child, format!("http://127.0.0.1:{port}/mcp"))
}

/// A streamable HTTP transport to `url` sending `token`.
fn http_transport(url: &str, token: &str) -> StreamableHttpClientTransport<reqwest::Client> {
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_string()).auth_header(token);
    let client = gantry_http::builder()
        .and_then(|builder| builder.build().map_err(|e| e.to_string()))
        .expect("an HTTP client");
    StreamableHttpClientTransport::with_client(client, config)
}

async fn http(
    gantry: &str,
    workspace: &str,
    home: &std::path::Path,
    sessions: usize,
    per_session: usize,
    every: Option<Duration>,
) -> String {
    let token = "load-generator-token".to_string();
    let (mut child, url) = http_server(gantry, workspace, home, std::slice::from_ref(&token)).await;
    let measure = Measure::start(&child);
    let mut tasks = tokio::task::JoinSet::new();
    for session in 0..sessions {
        let transport = http_transport(&url, &token);
        tasks.spawn(async move {
            let Ok(client) = ().serve(transport).await else {
                return vec![None; per_session];
            };
            // Paced sessions start spread over one period, so their calls
            // do not all come at once.
            let mut ticks = every.map(|every| {
                let phase = every * session as u32 / sessions as u32;
                let mut ticks =
                    tokio::time::interval_at(tokio::time::Instant::now() + phase, every);
                ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                ticks
            });
            let mut latencies = Vec::with_capacity(per_session);
            for _ in 0..per_session {
                if let Some(ticks) = &mut ticks {
                    ticks.tick().await;
                }
                latencies.push(timed_call(&client, read_file()).await);
            }
            let _ = client.cancel().await;
            latencies
        });
    }
    let latencies: Vec<Option<Duration>> = tasks.join_all().await.into_iter().flatten().collect();
    let report = measure.summary(
        &match every {
            None => format!(
                "http, {sessions} sessions x {per_session} calls each, back to back, sessions concurrent"
            ),
            Some(every) => format!(
                "http, {sessions} sessions x {per_session} calls each, one call every {} ms per session ({:.0} calls/s offered)",
                every.as_millis(),
                sessions as f64 / every.as_secs_f64()
            ),
        },
        &latencies,
        &child,
    );
    let _ = child.kill().await;
    report
}

async fn tokens(
    gantry: &str,
    workspace: &str,
    home: &std::path::Path,
    count: usize,
    per_token: usize,
) -> String {
    let tokens: Vec<String> = (0..count).map(|i| format!("load-token-{i}")).collect();
    let (mut child, url) = http_server(gantry, workspace, home, &tokens).await;
    let measure = Measure::start(&child);
    // Each token's background job, by handle, once it has one.
    let handles: Arc<Vec<tokio::sync::OnceCell<String>>> =
        Arc::new((0..count).map(|_| tokio::sync::OnceCell::new()).collect());
    let mut tasks = tokio::task::JoinSet::new();
    for (index, token) in tokens.iter().enumerate() {
        let transport = http_transport(&url, token);
        let handles = handles.clone();
        tasks.spawn(async move {
            let lifecycle = ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            };
            let Ok(client) = ().serve_with_lifecycle(transport, lifecycle).await else {
                return (vec![None; per_token], Isolation::default());
            };
            let mut isolation = Isolation::default();
            let marker = format!("job-of-token-{index}");
            let started = shell(
                &client,
                serde_json::json!({
                    "command": format!("for i in 1 2 3 4 5; do echo {marker} $i; sleep 0.1; done"),
                    "is_background": true,
                }),
            )
            .await;
            let handle = started
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .find(|word| word.starts_with("bg_"))
                .map(String::from);
            let mut latencies = Vec::with_capacity(per_token);
            for _ in 0..per_token {
                latencies.push(timed_call(&client, read_file()).await);
            }
            match handle {
                Some(handle) => {
                    let _ = handles[index].set(handle.clone());
                    isolation.own_job_seen = poll_to_end(&client, &handle, &marker).await;
                }
                None => isolation.own_job_seen = false,
            }
            // The next token's handle, asked from this run: it must never
            // show that token's output.
            let neighbour = (index + 1) % count;
            if neighbour != index {
                let theirs = handles[neighbour].get().cloned();
                if let Some(theirs) = theirs {
                    let seen = shell(&client, serde_json::json!({"handle": theirs})).await;
                    isolation.leaked = seen.contains(&format!("job-of-token-{neighbour}"));
                }
            }
            let _ = client.cancel().await;
            (latencies, isolation)
        });
    }
    let outcomes = tasks.join_all().await;
    let jobs_seen = outcomes.iter().filter(|(_, i)| i.own_job_seen).count();
    let leaks = outcomes.iter().filter(|(_, i)| i.leaked).count();
    let latencies: Vec<Option<Duration>> = outcomes.into_iter().flat_map(|(l, _)| l).collect();
    let report = measure.summary(
        &format!(
            "http, protocol 2026-07-28, {count} tokens x {per_token} calls each and a background job each"
        ),
        &latencies,
        &child,
    );
    let _ = child.kill().await;
    format!(
        "{report}\n  background jobs: {jobs_seen} of {count} seen to their end by their own run; \
         {leaks} runs saw another run's job"
    )
}

/// What one token's run saw of the background jobs.
#[derive(Default)]
struct Isolation {
    /// Its own job's output, polled by handle until the job exited.
    own_job_seen: bool,
    /// The next token's job output, asked for by that job's handle.
    leaked: bool,
}

/// A `shell` call's text ("" when it failed).
async fn shell(client: &Client, arguments: serde_json::Value) -> String {
    let mut params = CallToolRequestParams::new("shell");
    params.arguments = arguments.as_object().cloned();
    match tokio::time::timeout(CALL_BOUND, client.call_tool(params)).await {
        Ok(Ok(result)) => result
            .content
            .iter()
            .filter_map(|content| content.as_text().map(|text| text.text.clone()))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Polls a background job until it has exited (bounded); whether all its
/// output, `marker 1` to `marker 5`, came back.
async fn poll_to_end(client: &Client, handle: &str, marker: &str) -> bool {
    let deadline = Instant::now() + CALL_BOUND;
    let mut output = String::new();
    while Instant::now() < deadline {
        let polled = shell(client, serde_json::json!({"handle": handle})).await;
        output.push_str(&polled);
        if polled.contains("exit code") || polled.contains("exited") {
            return (1..=5).all(|i| output.contains(&format!("{marker} {i}")));
        }
        // A job's end is not announced to a polling client; poll again.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

/// Waits (bounded) for the server to say it serves.
async fn wait_serving(child: &mut Child) {
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let serving = async {
        while let Ok(Some(line)) = lines.next_line().await {
            if line.contains("serving MCP at") {
                return;
            }
        }
        panic!("gantry mcp --http ended before serving");
    };
    tokio::time::timeout(Duration::from_secs(30), serving)
        .await
        .expect("gantry mcp --http serves within 30 s");
    // The rest of its stderr is drained, so it never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
}

/// The server's resident memory now and at its peak, in MiB.
fn memory_of(pid: u32) -> String {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next()?.parse::<f64>().ok())
            .map_or("?".to_string(), |kib| format!("{:.1} MiB", kib / 1024.0))
    };
    format!(
        "server memory: {} now, {} at peak",
        field("VmRSS:"),
        field("VmHWM:")
    )
}

/// CPU seconds (user and system) a process has used, from `/proc`.
fn cpu_seconds(pid: &str) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may hold spaces): utime is the
    // 12th, stime the 13th, in clock ticks (100 a second on Linux).
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or(Vec::new(), |(_, rest)| rest.split_whitespace().collect());
    let ticks = |at: usize| {
        fields
            .get(at)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0
}

/// Wall time and the CPU of the server and of this load generator, from a
/// start.
struct Measure {
    started: Instant,
    server: f64,
    generator: f64,
}

impl Measure {
    fn start(child: &Child) -> Measure {
        Measure {
            started: Instant::now(),
            server: cpu_seconds(&child.id().unwrap_or_default().to_string()),
            generator: cpu_seconds("self"),
        }
    }

    fn summary(&self, what: &str, latencies: &[Option<Duration>], child: &Child) -> String {
        let wall = self.started.elapsed();
        let Some(pid) = child.id() else {
            return format!("{what}\n  the server has exited");
        };
        let server = cpu_seconds(&pid.to_string()) - self.server;
        let generator = cpu_seconds("self") - self.generator;
        let mut done: Vec<Duration> = latencies.iter().flatten().copied().collect();
        done.sort();
        let failed = latencies.len() - done.len();
        let at = |q: f64| -> String {
            if done.is_empty() {
                return "-".into();
            }
            let index = ((done.len() as f64 * q).ceil() as usize).clamp(1, done.len()) - 1;
            format!("{:.2} ms", done[index].as_secs_f64() * 1000.0)
        };
        let calls = done.len().max(1) as f64;
        format!(
            "{what}\n  calls: {} answered, {failed} failed, in {:.2} s ({:.0} calls/s)\n  \
             latency: p50 {}, p99 {}, max {}\n  \
             CPU: server {server:.2} s ({:.3} ms a call, {:.2} cores), load generator {generator:.2} s ({:.2} cores)\n  {}",
            done.len(),
            wall.as_secs_f64(),
            done.len() as f64 / wall.as_secs_f64(),
            at(0.50),
            at(0.99),
            at(1.0),
            server * 1000.0 / calls,
            server / wall.as_secs_f64(),
            generator / wall.as_secs_f64(),
            memory_of(pid),
        )
    }
}
