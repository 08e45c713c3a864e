//! The scripted OpenAI-compatible peer (`openai_peer.py`) as a test
//! sees it: started on an ephemeral loopback port with a script, asked
//! for the requests it received, killed when dropped. Shared by the
//! workers' tests and the binary's (`gantry agent`, `gantry mcp`).

#![allow(dead_code)] // each test binary uses a part

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;

use serde_json::Value;

/// The scripted peer, killed when dropped.
pub struct Peer {
    child: std::process::Child,
    port: u16,
    _script: tempfile::NamedTempFile,
}

impl Peer {
    /// Starts the peer on `script` (see openai_peer.py) and waits until it
    /// listens.
    pub fn start(script: Value) -> Peer {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(script.to_string().as_bytes()).unwrap();
        let peer = Path::new(file!()).parent().unwrap().join("openai_peer.py");
        let peer = workspace_root().join(peer);
        let mut child = std::process::Command::new("python3")
            .arg(peer)
            .arg(file.path())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("python3 runs the scripted peer (scripts/install-workers.sh installs it)");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .strip_prefix("PORT ")
            .unwrap_or_else(|| panic!("the peer said {line:?}"))
            .parse()
            .unwrap();
        Peer {
            child,
            port,
            _script: file,
        }
    }

    /// The base URL a tier's `baseUrl` takes.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// Every request the peer received, in order, with when it came and
    /// was answered (`received`, `answered`, seconds) and its
    /// `authorization` header.
    pub fn records(&self) -> Vec<Value> {
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        stream
            .write_all(b"GET /requests HTTP/1.0\r\nHost: peer\r\n\r\n")
            .unwrap();
        let mut text = String::new();
        stream.read_to_string(&mut text).unwrap();
        let body = text.split_once("\r\n\r\n").unwrap().1;
        serde_json::from_str(body).unwrap()
    }

    /// Every request body the peer received, in order.
    pub fn requests(&self) -> Vec<Value> {
        self.records()
            .into_iter()
            .map(|record| record["body"].clone())
            .collect()
    }

    /// The requests of the conversation whose brief contains `marker`.
    pub fn conversation(&self, marker: &str) -> Vec<Value> {
        self.requests()
            .into_iter()
            .filter(|body| {
                body["messages"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|m| m["role"] == "user" && m["content"].as_str().unwrap().contains(marker))
            })
            .collect()
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The repository's root (`file!()` paths are relative to it).
fn workspace_root() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .find(|dir| dir.join("Cargo.lock").exists())
        .unwrap()
        .to_path_buf()
}
