//! A load generator for `gantry mcp` (bench/load.sh): many concurrent
//! `tools/call`s over one stdio connection, or many streamable HTTP
//! sessions each making calls one after another, through the official
//! MCP Rust SDK as the client. Prints each call's latency percentiles, the
//! calls that failed, and the server's resident memory (now and at its
//! peak, from `/proc`).
//!
//! ```text
//! load GANTRY WORKSPACE stdio CALLS
//! load GANTRY WORKSPACE http SESSIONS CALLS_PER_SESSION
//! ```
//!
//! Every call reads `README.md` of WORKSPACE with `read_file`; the server
//! runs with no user settings of its own (`HOME` a fresh folder).

use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
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
    let usage = "usage: load GANTRY WORKSPACE stdio CALLS | load GANTRY WORKSPACE http SESSIONS CALLS_PER_SESSION";
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
        "http" => http(&gantry, &workspace, home.path(), number(4), number(5)).await,
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
async fn timed_call(client: &Client) -> Option<Duration> {
    let started = Instant::now();
    match tokio::time::timeout(CALL_BOUND, client.call_tool(read_file())).await {
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
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..calls {
        let client = client.clone();
        tasks.spawn(async move { timed_call(&client).await });
    }
    let latencies = tasks.join_all().await;
    let wall = started.elapsed();
    let memory = memory_of(&child);
    let report = summary(
        &format!("stdio, {calls} concurrent calls on one connection"),
        &latencies,
        wall,
        &memory,
    );
    drop(client);
    let _ = child.kill().await;
    report
}

async fn http(
    gantry: &str,
    workspace: &str,
    home: &std::path::Path,
    sessions: usize,
    per_session: usize,
) -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let token = "load-generator-token";
    let mut child = server(gantry, workspace, home)
        .args(["mcp", "--http", &format!("127.0.0.1:{port}")])
        .env("GANTRY_HTTP_TOKEN", token)
        .spawn()
        .expect("gantry mcp --http starts");
    wait_serving(&mut child).await;
    let url = format!("http://127.0.0.1:{port}/mcp");
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..sessions {
        let url = url.clone();
        tasks.spawn(async move {
            let config = StreamableHttpClientTransportConfig::with_uri(url).auth_header(token);
            let client = gantry_http::builder()
                .and_then(|builder| builder.build().map_err(|e| e.to_string()))
                .expect("an HTTP client");
            let transport = StreamableHttpClientTransport::with_client(client, config);
            let Ok(client) = ().serve(transport).await else {
                return vec![None; per_session];
            };
            let mut latencies = Vec::with_capacity(per_session);
            for _ in 0..per_session {
                latencies.push(timed_call(&client).await);
            }
            let _ = client.cancel().await;
            latencies
        });
    }
    let latencies: Vec<Option<Duration>> = tasks.join_all().await.into_iter().flatten().collect();
    let wall = started.elapsed();
    let memory = memory_of(&child);
    let _ = child.kill().await;
    summary(
        &format!("http, {sessions} sessions x {per_session} calls each, sessions concurrent"),
        &latencies,
        wall,
        &memory,
    )
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
fn memory_of(child: &Child) -> String {
    let Some(pid) = child.id() else {
        return "memory: the server has exited".into();
    };
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

fn summary(what: &str, latencies: &[Option<Duration>], wall: Duration, memory: &str) -> String {
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
    format!(
        "{what}\n  calls: {} answered, {failed} failed, in {:.2} s ({:.0} calls/s)\n  latency: p50 {}, p99 {}, max {}\n  {memory}",
        done.len(),
        wall.as_secs_f64(),
        done.len() as f64 / wall.as_secs_f64(),
        at(0.50),
        at(0.99),
        at(1.0),
    )
}
