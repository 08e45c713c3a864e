//! A confined command's network (SPEC §2, `sandbox.network`): a network
//! namespace of its own whose only way out is the run's proxy. Real
//! namespaces, a real proxy, real clients (curl, Python); loopback HTTP
//! servers stand in for the internet, their names mapped to loopback for
//! the proxy (`GANTRY_NETWORK_MAP`), never to any other address.

use std::path::Path;

use gantry_core::testing::StandIn;
use gantry_process::network::{HostRule, Network, ProxyPolicy};
use gantry_process::sandbox::{Mode, Policy};
use gantry_process::{Child, Command, Sandbox, Stderr, Stdout};

/// The names the tests' servers go by, mapped to loopback for the proxy
/// (set before any proxy is made: each test binary is its own process).
fn map_names() {
    // SAFETY: set once, before the tests start threads that read it.
    unsafe {
        std::env::set_var(
            gantry_process::network::proxy::MAP_ENV,
            "pkg.example.org=127.0.0.1,other.example.org=127.0.0.1",
        )
    };
}

fn proxied(allow: &[&str], host_ports: &[u16], workspace: &Path) -> Option<Sandbox> {
    map_names();
    let policy = Policy {
        mode: Mode::WorkspaceWrite,
        mode_chosen: true,
        network: Network::Proxied(ProxyPolicy {
            allow: allow
                .iter()
                .map(|rule| HostRule::parse(rule).unwrap())
                .collect(),
            ask: true,
            host_ports: host_ports.to_vec(),
        }),
        ..Policy::default()
    };
    let sandbox = Sandbox::new(policy, &[workspace.to_path_buf()]);
    if !sandbox.own_network() {
        assert!(
            gantry_core::testing::skip_requested(
                "GANTRY_SKIP_SANDBOX",
                "the network tests, which need Landlock and user namespaces"
            ),
            "commands get no network of their own here: {:?}; set GANTRY_SKIP_SANDBOX=1 to skip",
            sandbox.status()
        );
        return None;
    }
    Some(sandbox)
}

/// Runs `script` with bash in `sandbox`: its output, and the child (for
/// what the proxy refused it).
async fn run(sandbox: &Sandbox, workspace: &Path, script: &str) -> (String, Child) {
    let child = Command::new("bash", sandbox)
        .args(["-c", script])
        .current_dir(workspace)
        .stdout(Stdout::Capture {
            head: 1 << 20,
            tail: 1 << 16,
        })
        .stderr(Stderr::Stdout)
        .spawn()
        .expect("spawned");
    child.wait().await.unwrap();
    let output = child.output().unwrap();
    output.finished().await;
    let text = output.lock().shown();
    (text, child)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_allowed_host_is_reached_through_the_proxy_and_nothing_else_is() {
    let (_served, server) = StandIn::with_files(&[("index.txt", "served from the stand-in\n")]);
    let port = server.port;
    let workspace = tempfile::tempdir().unwrap();
    let Some(sandbox) = proxied(&[&format!("pkg.example.org:{port}")], &[], workspace.path())
    else {
        return;
    };

    // Allowed, by name, through the proxy the variables announce.
    let (said, child) = run(
        &sandbox,
        workspace.path(),
        &format!("curl -sS http://pkg.example.org:{port}/index.txt"),
    )
    .await;
    assert_eq!(said.trim(), "served from the stand-in", "{said}");
    assert!(child.network_refused().is_empty());

    // The same over CONNECT (as HTTPS goes), and over SOCKS5.
    let (said, _) = run(
        &sandbox,
        workspace.path(),
        &format!("curl -sS -p http://pkg.example.org:{port}/index.txt"),
    )
    .await;
    assert_eq!(said.trim(), "served from the stand-in", "{said}");
    let (said, _) = run(
        &sandbox,
        workspace.path(),
        &format!("curl -sS --proxy \"$ALL_PROXY\" http://pkg.example.org:{port}/index.txt"),
    )
    .await;
    assert_eq!(said.trim(), "served from the stand-in", "{said}");

    // Another host: refused, with which one and the ways forward, in the
    // proxy's answer and in what the command's result can say.
    let (said, child) = run(
        &sandbox,
        workspace.path(),
        &format!("curl -sS http://other.example.org:{port}/index.txt"),
    )
    .await;
    assert!(
        said.contains(&format!(
            "refused the connection to other.example.org:{port}"
        )) && said.contains("sandbox.network.allow"),
        "{said}"
    );
    let refused = child.network_refused();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(
        refused[0].starts_with(&format!("other.example.org:{port} (")),
        "{refused:?}"
    );

    // Around the proxy: nothing, the host's loopback included.
    let (said, _) = run(
        &sandbox,
        workspace.path(),
        &format!("curl -sS --noproxy '*' --max-time 5 http://127.0.0.1:{port}/index.txt; echo \"exit $?\""),
    )
    .await;
    assert!(said.contains("exit 7"), "a direct connection fails: {said}");
    // Through the proxy, the host's loopback is refused too.
    let (said, child) = run(
        &sandbox,
        workspace.path(),
        &format!("curl -sS --noproxy '' -x \"$HTTP_PROXY\" http://127.0.0.1:{port}/index.txt"),
    )
    .await;
    assert!(said.contains("the host's loopback"), "{said}");
    assert_eq!(child.network_refused().len(), 1);
    // Names are the proxy's to resolve: there is no resolver inside.
    let (said, _) = run(
        &sandbox,
        workspace.path(),
        "python3 -c \"import socket; socket.getaddrinfo('example.org', 443)\" 2>&1 | tail -1",
    )
    .await;
    assert!(said.contains("gaierror"), "{said}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commands_own_loopback_works_and_host_ports_reach_the_hosts() {
    let (_served, server) = StandIn::with_files(&[("db.txt", "the host's service\n")]);
    let workspace = tempfile::tempdir().unwrap();
    let Some(sandbox) = proxied(&[], &[server.port], workspace.path()) else {
        return;
    };
    // A listed port of the host's loopback is the command's own
    // 127.0.0.1:PORT, without the proxy.
    let (said, _) = run(
        &sandbox,
        workspace.path(),
        &format!(
            "curl -sS --noproxy '*' http://127.0.0.1:{}/db.txt",
            server.port
        ),
    )
    .await;
    assert_eq!(said.trim(), "the host's service", "{said}");
    // A server the command starts, and its client, on its own loopback.
    let (said, _) = run(
        &sandbox,
        workspace.path(),
        "echo inside > page.txt\n\
         python3 -c \"import http.server, threading, urllib.request\n\
server = http.server.HTTPServer(('127.0.0.1', 0), http.server.SimpleHTTPRequestHandler)\n\
threading.Thread(target=server.serve_forever, daemon=True).start()\n\
direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))\n\
print(direct.open(f'http://127.0.0.1:{server.server_port}/page.txt').read().decode())\" 2>/dev/null",
    )
    .await;
    assert_eq!(said.trim(), "inside", "{said}");
    // Commands after the first get networks made ahead of them: each its
    // own, never one a living command has, with the host's ports listed
    // in it too. (All kept alive: a freed namespace's number may be
    // given again.)
    use tokio::io::AsyncBufReadExt;
    let mut networks = std::collections::BTreeSet::new();
    let mut living = Vec::new();
    for _ in 0..6 {
        let mut child = Command::new("bash", &sandbox)
            .args([
                "-c",
                &format!(
                    "readlink /proc/self/ns/net; curl -sS --noproxy '*' \
                     http://127.0.0.1:{}/db.txt; exec sleep 60",
                    server.port
                ),
            ])
            .current_dir(workspace.path())
            .stdout(Stdout::Piped)
            .spawn()
            .expect("spawned");
        let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let mut said = Vec::new();
        while said.len() < 2 {
            let line = tokio::time::timeout(std::time::Duration::from_secs(20), lines.next_line())
                .await
                .expect("the command says its network and the host's service")
                .unwrap();
            said.push(line.expect("two lines before the end"));
        }
        assert!(said[0].starts_with("net:["), "{said:?}");
        assert_eq!(said[1], "the host's service", "{said:?}");
        assert!(
            networks.insert(said[0].clone()),
            "a network given twice: {said:?}"
        );
        living.push(child);
    }
}
