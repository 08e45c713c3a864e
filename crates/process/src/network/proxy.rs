//! The run's proxy: the only way out of a confined command's network.
//!
//! It speaks what the command's tools speak on one port, told apart by
//! the first byte: HTTP `CONNECT` (HTTPS and anything tunnelled), plain
//! HTTP with an absolute URI, and SOCKS5 (`socks5h://`, names resolved
//! here). No TLS is intercepted: a tunnel is opened or refused by host
//! and port, and then carries bytes. Hand-written over an HTTP crate:
//! what is needed is a request head (httparse reads it) and a byte pipe
//! (tokio's copy), where a proxy framework would rewrite and buffer.
//!
//! A connection is allowed when a rule of the policy allows its host and
//! port; to the host's loopback only on a `hostPorts` port, and never to
//! a port Gantry itself serves ([`reserve_port`]); a name that resolves
//! to a loopback address counts as the loopback. Otherwise, with `ask`
//! on and a person reachable through the command's call, the person is
//! asked once for the run; without one it is refused, and the command's
//! result says which host and port and the ways forward.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use gantry_core::human::{Answer, Choice, Human, Question};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use super::{Destination, HostRule, ProxyPolicy};

/// The variable that maps names to loopback addresses for the proxy
/// (`pkg.example.org=127.0.0.1,other.example.org=::1`): for tests and
/// benchmarks whose stand-in servers run on loopback. Any other address
/// is ignored: it cannot send a name anywhere else.
pub const MAP_ENV: &str = "GANTRY_NETWORK_MAP";

/// How long a connection to an allowed host may take to open.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a person has to answer whether a host may be reached.
const ASK_TIMEOUT: Duration = Duration::from_secs(300);
/// The longest request head read (a CONNECT's is a few hundred bytes).
const MAX_HEAD: usize = 64 * 1024;
/// How long a client may take to send its request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(30);
/// How many hosts one command may have a person asked about: a command
/// that tries host after host is refused the rest without a question,
/// so it cannot bury the person in them.
const MAX_ASKS: usize = 3;

/// Ports Gantry itself serves on the host (its HTTP front end): never
/// reached from a command, whatever `hostPorts` says.
static RESERVED: Mutex<Vec<u16>> = Mutex::new(Vec::new());

/// Marks `port` as Gantry's own: the proxy never connects a command to it
/// on the host's loopback.
pub fn reserve_port(port: u16) {
    lock(&RESERVED).push(port);
}

fn reserved(port: u16) -> bool {
    lock(&RESERVED).contains(&port)
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// One run's proxy: its policy, what was decided in the run, and what
/// it did, for `gantry status`.
pub struct Proxy {
    policy: ProxyPolicy,
    /// Answers given in this run (true: allowed), so a host is asked
    /// about once.
    decided: Mutex<HashMap<Destination, bool>>,
    /// One question at a time: a second connection to the same host waits
    /// for the first one's answer.
    asking: tokio::sync::Mutex<()>,
    /// Every destination tried in the run and whether it was let through.
    seen: Mutex<Vec<(Destination, bool)>>,
    /// Names mapped to loopback addresses ([`MAP_ENV`]).
    mapped: HashMap<String, IpAddr>,
    /// Where "allow always" is written: the user's allowlist file.
    /// Whether "allow always" is written to the user's allowlist.
    remember: bool,
}

/// One command's side of the proxy: who can be asked for it, and what
/// was refused to it, for its result.
pub struct Tap {
    human: Option<Arc<dyn Human>>,
    refused: Mutex<Vec<String>>,
    /// Questions asked for it so far.
    asked: AtomicUsize,
}

impl Tap {
    /// A tap asking `human` (none: refuse what is not listed).
    pub fn new(human: Option<Arc<dyn Human>>) -> Arc<Tap> {
        Arc::new(Tap {
            human,
            refused: Mutex::new(Vec::new()),
            asked: AtomicUsize::new(0),
        })
    }

    /// What was refused to the command, each once, with why.
    pub fn refused(&self) -> Vec<String> {
        lock(&self.refused).clone()
    }

    fn refuse(&self, what: String) {
        let mut refused = lock(&self.refused);
        if !refused.contains(&what) {
            refused.push(what);
        }
    }
}

/// Tasks serving one command's listeners, ended when it is dropped.
#[derive(Default)]
pub struct Serving(Vec<JoinHandle<()>>);

impl Drop for Serving {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}

/// Whether a connection may go, and if not why (for the person).
enum Verdict {
    Go(Vec<SocketAddr>),
    Refuse(String),
}

impl Proxy {
    /// The proxy of `policy`, remembering "allow always" answers in the
    /// user's allowlist ([`allowlist_file`]) when `remember`.
    pub fn new(policy: ProxyPolicy, remember: bool) -> Arc<Proxy> {
        Arc::new(Proxy {
            policy,
            decided: Mutex::new(HashMap::new()),
            asking: tokio::sync::Mutex::new(()),
            seen: Mutex::new(Vec::new()),
            mapped: mapped_names(),
            remember,
        })
    }

    /// Serves one command's listeners: `proxy` (on [`super::PROXY_PORT`]
    /// inside its namespace) and each of `host_ports`, relayed to the
    /// same port of the host's loopback. Must be called in a tokio
    /// runtime.
    pub fn serve(
        self: &Arc<Self>,
        proxy: Option<OwnedFd>,
        host_ports: Vec<(u16, OwnedFd)>,
        tap: Arc<Tap>,
    ) -> std::io::Result<Serving> {
        let mut serving = Serving::default();
        if let Some(listener) = proxy {
            let listener = listen(listener)?;
            let (this, tap) = (self.clone(), tap.clone());
            serving.0.push(tokio::spawn(async move {
                while let Ok((stream, _)) = listener.accept().await {
                    let (this, tap) = (this.clone(), tap.clone());
                    tokio::spawn(async move { this.handle(stream, &tap).await });
                }
            }));
        }
        for (port, listener) in host_ports {
            let listener = listen(listener)?;
            serving.0.push(tokio::spawn(async move {
                while let Ok((mut stream, _)) = listener.accept().await {
                    tokio::spawn(async move {
                        if reserved(port) {
                            return;
                        }
                        if let Ok(mut host) = TcpStream::connect(("127.0.0.1", port)).await {
                            let _ = pipe(&mut stream, &mut host).await;
                        }
                    });
                }
            }));
        }
        Ok(serving)
    }

    /// The run's destinations for `gantry status`: allowed, then refused.
    pub fn status(&self) -> Vec<String> {
        let seen = lock(&self.seen);
        let list = |allowed: bool| {
            let hosts: Vec<String> = seen
                .iter()
                .filter(|(_, went)| *went == allowed)
                .map(|(to, _)| to.to_string())
                .collect();
            if hosts.is_empty() {
                "none".to_string()
            } else {
                hosts.join(", ")
            }
        };
        vec![
            format!("network: reached in this run: {}", list(true)),
            format!("network: refused in this run: {}", list(false)),
        ]
    }

    async fn handle(&self, stream: TcpStream, tap: &Tap) {
        let mut first = [0u8; 1];
        match stream.peek(&mut first).await {
            Ok(1) if first[0] == 5 => self.socks(stream, tap).await,
            Ok(1) => self.http(stream, tap).await,
            _ => {}
        }
    }

    /// HTTP: `CONNECT host:port`, or a request with an absolute URI.
    async fn http(&self, mut stream: TcpStream, tap: &Tap) {
        let Ok(Some((head, rest))) =
            tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut stream)).await
        else {
            return;
        };
        let mut headers = [httparse::EMPTY_HEADER; 96];
        let mut request = httparse::Request::new(&mut headers);
        let Ok(httparse::Status::Complete(_)) = request.parse(&head) else {
            let _ = stream.write_all(&reply(400, "a malformed request")).await;
            return;
        };
        let (Some(method), Some(target)) = (request.method, request.path) else {
            return;
        };
        if method.eq_ignore_ascii_case("CONNECT") {
            let Some(to) = authority(target, 443) else {
                let _ = stream
                    .write_all(&reply(400, "CONNECT needs host:port"))
                    .await;
                return;
            };
            let Some(mut upstream) = self.open(&to, tap, &mut stream, Http).await else {
                return;
            };
            if stream
                .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .await
                .is_err()
            {
                return;
            }
            if !rest.is_empty() && upstream.write_all(&rest).await.is_err() {
                return;
            }
            let _ = pipe(&mut stream, &mut upstream).await;
            return;
        }
        // Plain HTTP: `GET http://host[:port]/path HTTP/1.1`.
        let Some((to, path)) = absolute_uri(target) else {
            let _ = stream
                .write_all(&reply(
                    400,
                    "this is a proxy: send an absolute URI (http://host/path) or CONNECT",
                ))
                .await;
            return;
        };
        let Some(mut upstream) = self.open(&to, tap, &mut stream, Http).await else {
            return;
        };
        // The request as the origin expects it: origin-form, no proxy
        // headers, one request per connection (a second one on this
        // stream would go to the same host anyway).
        let mut out = format!(
            "{method} {path} HTTP/1.{}\r\n",
            request.version.unwrap_or(1)
        )
        .into_bytes();
        for header in request.headers.iter() {
            let name = header.name.to_ascii_lowercase();
            if name.starts_with("proxy-") || name == "connection" || name == "keep-alive" {
                continue;
            }
            out.extend_from_slice(header.name.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(header.value);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"Connection: close\r\n\r\n");
        out.extend_from_slice(&rest);
        if upstream.write_all(&out).await.is_err() {
            return;
        }
        let _ = pipe(&mut stream, &mut upstream).await;
    }

    /// SOCKS5 (RFC 1928), no authentication, `CONNECT` only.
    async fn socks(&self, mut stream: TcpStream, tap: &Tap) {
        let mut greeting = [0u8; 2];
        if stream.read_exact(&mut greeting).await.is_err() {
            return;
        }
        let mut methods = vec![0u8; greeting[1] as usize];
        if stream.read_exact(&mut methods).await.is_err() {
            return;
        }
        if !methods.contains(&0) {
            let _ = stream.write_all(&[5, 0xff]).await;
            return;
        }
        if stream.write_all(&[5, 0]).await.is_err() {
            return;
        }
        let mut request = [0u8; 4];
        if stream.read_exact(&mut request).await.is_err() {
            return;
        }
        let host = match request[3] {
            1 => {
                let mut octets = [0u8; 4];
                if stream.read_exact(&mut octets).await.is_err() {
                    return;
                }
                IpAddr::from(octets).to_string()
            }
            4 => {
                let mut octets = [0u8; 16];
                if stream.read_exact(&mut octets).await.is_err() {
                    return;
                }
                IpAddr::from(octets).to_string()
            }
            3 => {
                let mut length = [0u8; 1];
                if stream.read_exact(&mut length).await.is_err() {
                    return;
                }
                let mut name = vec![0u8; length[0] as usize];
                if stream.read_exact(&mut name).await.is_err() {
                    return;
                }
                String::from_utf8_lossy(&name).into_owned()
            }
            _ => {
                let _ = stream.write_all(&socks_reply(8)).await;
                return;
            }
        };
        let mut port = [0u8; 2];
        if stream.read_exact(&mut port).await.is_err() {
            return;
        }
        if request[1] != 1 {
            // Only CONNECT: no BIND, no UDP ASSOCIATE.
            let _ = stream.write_all(&socks_reply(7)).await;
            return;
        }
        let to = Destination::new(&host, u16::from_be_bytes(port));
        let Some(mut upstream) = self.open(&to, tap, &mut stream, Socks).await else {
            return;
        };
        if stream.write_all(&socks_reply(0)).await.is_err() {
            return;
        }
        let _ = pipe(&mut stream, &mut upstream).await;
    }

    /// The connection to `to`, if allowed and reachable; otherwise the
    /// refusal or failure is written to the command in `dialect`.
    async fn open(
        &self,
        to: &Destination,
        tap: &Tap,
        stream: &mut TcpStream,
        dialect: impl Dialect,
    ) -> Option<TcpStream> {
        let addresses = match self.decide(to, tap).await {
            Verdict::Go(addresses) => addresses,
            Verdict::Refuse(why) => {
                let said = refusal_text(to, &why);
                tap.refuse(format!("{to} ({why})"));
                let _ = stream.write_all(&dialect.refused(&said)).await;
                return None;
            }
        };
        let connect = async {
            let mut last = None;
            for address in addresses {
                match TcpStream::connect(address).await {
                    Ok(upstream) => return Ok(upstream),
                    Err(e) => last = Some(e),
                }
            }
            Err(last.unwrap_or_else(|| std::io::Error::other("no address")))
        };
        match tokio::time::timeout(CONNECT_TIMEOUT, connect).await {
            Ok(Ok(upstream)) => {
                let _ = upstream.set_nodelay(true);
                let _ = stream.set_nodelay(true);
                Some(upstream)
            }
            Ok(Err(e)) => {
                let _ = stream
                    .write_all(&dialect.failed(&format!("{to} could not be reached: {e}")))
                    .await;
                None
            }
            Err(_) => {
                let _ = stream
                    .write_all(&dialect.failed(&format!(
                        "{to} did not answer within {} s",
                        CONNECT_TIMEOUT.as_secs()
                    )))
                    .await;
                None
            }
        }
    }

    /// Whether `to` may be reached, asking a person where the policy says
    /// so; the addresses to connect to when it may.
    async fn decide(&self, to: &Destination, tap: &Tap) -> Verdict {
        let verdict = self.judge(to, tap).await;
        lock(&self.seen).push((to.clone(), matches!(verdict, Verdict::Go(_))));
        verdict
    }

    async fn judge(&self, to: &Destination, tap: &Tap) -> Verdict {
        let loopback_port = |port: u16| {
            if reserved(port) {
                Err("it is Gantry's own port on the host, which no command reaches".to_string())
            } else if self.policy.host_ports.contains(&port) {
                Ok(())
            } else {
                Err(format!(
                    "it is the host's loopback, which a command reaches only on the ports \
                     `sandbox.network.hostPorts` lists (not {port})"
                ))
            }
        };
        // Where it leads: the address named, a mapped name, or what the
        // name resolves to.
        let addresses: Vec<SocketAddr> = if let Some(address) = to.address() {
            vec![SocketAddr::new(address, to.port)]
        } else if to.host == "localhost" {
            vec![SocketAddr::new(IpAddr::from([127, 0, 0, 1]), to.port)]
        } else if let Some(address) = self.mapped.get(&to.host) {
            // A stand-in server: the name is judged as a name.
            return self
                .judge_name(to, tap, vec![SocketAddr::new(*address, to.port)])
                .await;
        } else {
            Vec::new()
        };
        if let Some(address) = addresses.first() {
            if is_loopback(address.ip()) {
                return match loopback_port(to.port) {
                    Ok(()) => Verdict::Go(addresses),
                    Err(why) => Verdict::Refuse(why),
                };
            }
            return self.judge_name(to, tap, addresses).await;
        }
        self.judge_name(to, tap, Vec::new()).await
    }

    /// The policy's answer for a name or a non-loopback address, asking
    /// where it says so; `known` are its addresses if already known
    /// (else the name is resolved once allowed).
    async fn judge_name(&self, to: &Destination, tap: &Tap, known: Vec<SocketAddr>) -> Verdict {
        let listed = self.policy.allow.iter().any(|rule| rule.allows(to));
        let decided = lock(&self.decided).get(to).copied();
        let allowed = match (listed, decided) {
            (true, _) => true,
            (false, Some(answer)) => answer,
            (false, None) => match self.ask(to, tap).await {
                Ok(answer) => answer,
                Err(why) => return Verdict::Refuse(why),
            },
        };
        if !allowed {
            return Verdict::Refuse("it is not in `sandbox.network.allow`, and was refused".into());
        }
        if !known.is_empty() {
            return Verdict::Go(known);
        }
        match tokio::net::lookup_host((to.host.as_str(), to.port)).await {
            Err(e) => Verdict::Refuse(format!("the name does not resolve ({e})")),
            Ok(addresses) => {
                let addresses: Vec<SocketAddr> = addresses.collect();
                if addresses.iter().any(|address| is_loopback(address.ip())) {
                    return Verdict::Refuse(
                        "the name resolves to the host's loopback, which a command reaches only \
                         through `sandbox.network.hostPorts`"
                            .into(),
                    );
                }
                Verdict::Go(addresses)
            }
        }
    }

    /// Asks the command's person whether `to` may be reached: true for
    /// this run or always (written to the user's allowlist), false when
    /// refused; an error says why nobody could be asked.
    async fn ask(&self, to: &Destination, tap: &Tap) -> Result<bool, String> {
        if !self.policy.ask {
            return Err("it is not in `sandbox.network.allow`".into());
        }
        let Some(human) = &tap.human else {
            return Err(
                "it is not in `sandbox.network.allow`, and no person could be asked".into(),
            );
        };
        let _one_at_a_time = self.asking.lock().await;
        if let Some(answer) = lock(&self.decided).get(to).copied() {
            return Ok(answer);
        }
        if tap.asked.fetch_add(1, Ordering::Relaxed) >= MAX_ASKS {
            return Err(format!(
                "it is not in `sandbox.network.allow`, and the command already had the person \
                 asked about {MAX_ASKS} hosts"
            ));
        }
        let question = Question {
            question: format!("A command wants to connect to {to}. Allow it?"),
            context: Some(
                "The sandbox lets commands reach only the hosts in `sandbox.network.allow`.".into(),
            ),
            options: [ALLOW_RUN, ALLOW_ALWAYS, REFUSE]
                .iter()
                .map(|label| Choice {
                    label: label.to_string(),
                    description: None,
                })
                .collect(),
            allow_free_text: false,
            multi_select: false,
        };
        let answer = match tokio::time::timeout(ASK_TIMEOUT, human.ask(&question)).await {
            Ok(Ok(Answer::Given { chosen, .. })) => chosen.first().cloned(),
            Ok(Ok(Answer::Skipped)) => Some(REFUSE.to_string()),
            Ok(Err(e)) => {
                return Err(format!(
                    "it is not in `sandbox.network.allow`, and the person could not be asked \
                     ({e})"
                ));
            }
            Err(_) => {
                return Err(format!(
                    "it is not in `sandbox.network.allow`, and nobody answered within {} s",
                    ASK_TIMEOUT.as_secs()
                ));
            }
        };
        let allowed = matches!(answer.as_deref(), Some(ALLOW_RUN | ALLOW_ALWAYS));
        if answer.as_deref() == Some(ALLOW_ALWAYS)
            && self.remember
            && let Err(e) = remember(&HostRule::exactly(to))
        {
            tracing::warn!("could not add {to} to {}: {e}", allowlist_file().display());
        }
        lock(&self.decided).insert(to.clone(), allowed);
        Ok(allowed)
    }
}

const ALLOW_RUN: &str = "Allow for this run";
const ALLOW_ALWAYS: &str = "Allow always";
const REFUSE: &str = "Refuse";

/// The user's own allowlist, beside their settings: what "allow always"
/// added (a file of its own, so the user's commented settings file is
/// never rewritten).
pub fn allowlist_file() -> PathBuf {
    gantry_core::settings::gantry_home().join(ALLOWLIST)
}

/// The allowlist's name in Gantry's home.
const ALLOWLIST: &str = "network-allow.json";

/// The entries of the user's allowlist file ([`allowlist_file`]): a JSON
/// array of entries; missing is empty, an unreadable one is an error.
pub fn remembered(file: &std::path::Path) -> Result<Vec<String>, String> {
    match std::fs::read_to_string(file) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(format!("{}: {e}", file.display())),
        Ok(text) => serde_json::from_str(&text).map_err(|e| format!("{}: {e}", file.display())),
    }
}

fn remember(rule: &HostRule) -> Result<(), String> {
    let mut entries = remembered(&allowlist_file())?;
    let entry = rule.to_string();
    if !entries.contains(&entry) {
        entries.push(entry);
    }
    let text = serde_json::to_string_pretty(&entries).map_err(|e| e.to_string())?;
    gantry_core::settings::write_home_file(ALLOWLIST, text.as_bytes())
        .map(drop)
        .map_err(|e| e.to_string())
}

/// What a refused command is told, in its proxy's answer and its result.
pub fn refusal_text(to: &Destination, why: &str) -> String {
    format!(
        "Gantry's sandbox refused the connection to {to}: {why}. To allow it, add \"{}\" to \
         `sandbox.network.allow` in ~/.gantry/settings.json (or set `sandbox.network.ask` where \
         a person can answer); a command run with `sandbox: false` (which needs a person's yes) \
         has the whole network.",
        HostRule::exactly(to)
    )
}

fn is_loopback(address: IpAddr) -> bool {
    let address = address.to_canonical();
    address.is_loopback() || address.is_unspecified()
}

fn mapped_names() -> HashMap<String, IpAddr> {
    let Ok(value) = std::env::var(MAP_ENV) else {
        return HashMap::new();
    };
    value
        .split(',')
        .filter_map(|pair| {
            let (name, address) = pair.split_once('=')?;
            let address: IpAddr = address.trim().parse().ok()?;
            if !address.is_loopback() {
                tracing::warn!("{MAP_ENV}: {name} maps to {address}, not a loopback address");
                return None;
            }
            Some((Destination::new(name.trim(), 0).host, address))
        })
        .collect()
}

/// Copies both ways until both sides are done, in large chunks: tokio's
/// default 8 KiB buffers take many more system calls per megabyte. (A
/// splice through a kernel pipe each way measured no faster here: the
/// cost of the proxy is the second loopback connection, not the copy.)
async fn pipe(command: &mut TcpStream, host: &mut TcpStream) -> std::io::Result<(u64, u64)> {
    const CHUNK: usize = 256 * 1024;
    tokio::io::copy_bidirectional_with_sizes(command, host, CHUNK, CHUNK).await
}

fn listen(fd: OwnedFd) -> std::io::Result<TcpListener> {
    let listener = std::net::TcpListener::from(fd);
    listener.set_nonblocking(true)?;
    TcpListener::from_std(listener)
}

/// Reads a request head (through the blank line): the head, and what came
/// after it in the same reads.
async fn read_head(stream: &mut TcpStream) -> Option<(Vec<u8>, Vec<u8>)> {
    let mut buffer = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = buffer.split_off(end + 4);
            return Some((buffer, rest));
        }
        if buffer.len() > MAX_HEAD {
            return None;
        }
    }
}

/// `host:port` (or `[v6]:port`; `default` without a port).
fn authority(target: &str, default: u16) -> Option<Destination> {
    let (host, port) = match target.rsplit_once(':') {
        Some((host, port)) if !port.contains(']') => (host, port.parse().ok()?),
        _ => (target, default),
    };
    (!host.is_empty()).then(|| Destination::new(host, port))
}

/// `http://host[:port]/path`: where, and the path.
fn absolute_uri(target: &str) -> Option<(Destination, String)> {
    let rest = target
        .strip_prefix("http://")
        .or_else(|| target.strip_prefix("HTTP://"))?;
    let (authority_part, path) = match rest.find('/') {
        Some(slash) => (&rest[..slash], rest[slash..].to_string()),
        None => (rest, "/".to_string()),
    };
    let authority_part = authority_part.rsplit('@').next()?;
    Some((authority(authority_part, 80)?, path))
}

fn reply(code: u16, text: &str) -> Vec<u8> {
    let reason = match code {
        400 => "Bad Request",
        403 => "Forbidden",
        _ => "Bad Gateway",
    };
    format!(
        "HTTP/1.1 {code} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: \
         {}\r\nConnection: close\r\nX-Gantry-Sandbox: refused\r\n\r\n{text}\n",
        text.len() + 1
    )
    .into_bytes()
}

fn socks_reply(code: u8) -> [u8; 10] {
    [5, code, 0, 1, 0, 0, 0, 0, 0, 0]
}

/// How a refusal or failure is said to the command.
trait Dialect {
    fn refused(&self, text: &str) -> Vec<u8>;
    fn failed(&self, text: &str) -> Vec<u8>;
}

struct Http;
struct Socks;

impl Dialect for Http {
    fn refused(&self, text: &str) -> Vec<u8> {
        reply(403, text)
    }
    fn failed(&self, text: &str) -> Vec<u8> {
        reply(502, text)
    }
}

impl Dialect for Socks {
    /// "Connection not allowed by ruleset": SOCKS has no room for words.
    fn refused(&self, _: &str) -> Vec<u8> {
        socks_reply(2).to_vec()
    }
    fn failed(&self, _: &str) -> Vec<u8> {
        socks_reply(5).to_vec()
    }
}

/// The variables a command's tools read to find the proxy.
pub fn environment() -> Vec<(&'static str, String)> {
    let http = format!("http://127.0.0.1:{}", super::PROXY_PORT);
    let socks = format!("socks5h://127.0.0.1:{}", super::PROXY_PORT);
    let none = "localhost,127.0.0.1,::1".to_string();
    vec![
        ("HTTP_PROXY", http.clone()),
        ("http_proxy", http.clone()),
        ("HTTPS_PROXY", http.clone()),
        ("https_proxy", http),
        ("ALL_PROXY", socks.clone()),
        ("all_proxy", socks),
        ("NO_PROXY", none.clone()),
        ("no_proxy", none),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_are_read_as_proxies_send_them() {
        assert_eq!(
            authority("example.org:8443", 443),
            Some(Destination::new("example.org", 8443))
        );
        assert_eq!(
            authority("[::1]:80", 443),
            Some(Destination::new("::1", 80))
        );
        let (to, path) = absolute_uri("http://user@Example.org./a?b").unwrap();
        assert_eq!(
            (to.to_string(), path.as_str()),
            ("example.org:80".into(), "/a?b")
        );
        assert_eq!(absolute_uri("/relative"), None);
    }

    #[test]
    fn mapped_loopback_is_still_loopback_when_named_by_address() {
        assert!(is_loopback("::ffff:127.0.0.1".parse().unwrap()));
        assert!(is_loopback("0.0.0.0".parse().unwrap()));
        assert!(!is_loopback("192.0.2.1".parse().unwrap()));
    }
}
