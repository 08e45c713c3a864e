//! A tiny HTTP/1.1 server on loopback with hand-written responses, so the
//! tools are tested over real sockets against exactly the bytes a server
//! sends (including bodies that never finish).

use std::net::SocketAddr;
use std::sync::Arc;

use gantry_core::{Run, Settings, Workspace};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// One request as the server read it.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    /// Path and query, as sent.
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }

    /// A decoded query parameter.
    pub fn query(&self, key: &str) -> Option<String> {
        url::Url::parse(&format!("http://x{}", self.target))
            .unwrap()
            .query_pairs()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.into_owned())
    }
}

/// What the server answers.
pub enum Reply {
    /// A whole response.
    Full {
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    },
    /// Headers promising `length` bytes, the first bytes of the body, then
    /// nothing ever again (the connection stays open).
    Stall {
        content_type: String,
        length: usize,
        first: Vec<u8>,
    },
}

impl Reply {
    pub fn new(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Reply {
        Reply::Full {
            status,
            headers: vec![("Content-Type".into(), content_type.into())],
            body: body.into(),
        }
    }

    pub fn ok(content_type: &str, body: impl Into<Vec<u8>>) -> Reply {
        Reply::new(200, content_type, body)
    }

    pub fn redirect(status: u16, location: &str) -> Reply {
        Reply::Full {
            status,
            headers: vec![("Location".into(), location.into())],
            body: vec![],
        }
    }

    /// Adds a header to a whole response.
    pub fn with_header(mut self, name: &str, value: &str) -> Reply {
        if let Reply::Full { headers, .. } = &mut self {
            headers.push((name.into(), value.into()));
        }
        self
    }
}

type Handler = dyn Fn(&str, &Request) -> Reply + Send + Sync;

/// A running server; it stops with the test's runtime.
pub struct Server {
    /// `http://ip:port`, no trailing slash.
    pub base: String,
    pub addr: SocketAddr,
    seen: mpsc::UnboundedReceiver<Request>,
}

impl Server {
    /// Binds `ip:0` and serves each connection with `handler(base, request)`.
    /// Ready when this returns: the listener is bound.
    pub async fn start(
        ip: &str,
        handler: impl Fn(&str, &Request) -> Reply + Send + Sync + 'static,
    ) -> Server {
        let listener = TcpListener::bind((ip, 0)).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let base = format!("http://{addr}");
        let (tx, seen) = mpsc::unbounded_channel();
        let handler: Arc<Handler> = Arc::new(handler);
        let served = base.clone();
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let (tx, handler, base) = (tx.clone(), handler.clone(), served.clone());
                tokio::spawn(async move { serve(socket, &base, &*handler, tx).await });
            }
        });
        Server { base, addr, seen }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// The next request the server read, waiting for it.
    pub async fn next_request(&mut self) -> Request {
        self.seen.recv().await.expect("server stopped")
    }

    /// Requests read so far, without waiting.
    pub fn requests(&mut self) -> Vec<Request> {
        std::iter::from_fn(|| self.seen.try_recv().ok()).collect()
    }
}

async fn serve(
    mut socket: TcpStream,
    base: &str,
    handler: &Handler,
    seen: mpsc::UnboundedSender<Request>,
) {
    let Some(request) = read_request(&mut socket).await else {
        return;
    };
    let reply = handler(base, &request);
    let _ = seen.send(request);
    match reply {
        Reply::Full {
            status,
            headers,
            body,
        } => {
            let mut head = format!("HTTP/1.1 {status} {}\r\n", reason(status));
            for (name, value) in headers {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            head.push_str(&format!(
                "Content-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            ));
            // The client may hang up early (a size cap); that is its right.
            if socket.write_all(head.as_bytes()).await.is_ok() {
                let _ = socket.write_all(&body).await;
            }
            let _ = socket.shutdown().await;
        }
        Reply::Stall {
            content_type,
            length,
            first,
        } => {
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {length}\r\n\r\n"
            );
            let _ = socket.write_all(head.as_bytes()).await;
            let _ = socket.write_all(&first).await;
            std::future::pending::<()>().await;
        }
    }
}

async fn read_request(socket: &mut TcpStream) -> Option<Request> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split(' ');
    let method = request_line.next()?.to_string();
    let target = request_line.next()?.to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| {
            let (name, value) = line.split_once(':')?;
            Some((name.trim().to_string(), value.trim().to_string()))
        })
        .collect();
    let length: usize = headers
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, value)| value.parse().ok())
        .unwrap_or(0);
    let mut body = buffer[head_end + 4..].to_vec();
    while body.len() < length {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Some(Request {
        method,
        target,
        headers,
        body,
    })
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        _ => "Whatever",
    }
}

/// A run in a scratch workspace with `{"web": web}` as its settings and
/// the web tools registered.
pub fn run(web: serde_json::Value) -> (tempfile::TempDir, Run) {
    let dir = tempfile::tempdir().unwrap();
    let settings = Settings::from_value(serde_json::json!({ "web": web })).unwrap();
    let builder = Run::builder(Workspace::new(dir.path()).unwrap()).settings(settings);
    (dir, gantry_web::register(builder).build())
}
