//! Reaching the adapter: started as a process speaking on its pipes, or
//! dialled on a port (a debug server already listening, or one that says
//! where it listens on its output), within the start's deadline.

use std::sync::{Arc, Mutex};

use gantry_core::lock;
use gantry_process::{Capped, Child, Command, Stdout, describe_exit};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::time::Instant;

use crate::adapters::{Target, Wire};
use crate::transport::Transport;

use super::Start;

/// Starts the adapter (or reaches a debug server already listening) and
/// the transport on it.
pub(super) async fn connect(
    start: &Start,
    observer: crate::transport::Observer,
    output: Arc<Mutex<Capped>>,
    deadline: Instant,
) -> Result<(Option<Child>, Arc<Transport>), String> {
    let adapter = start.adapter;
    let Some(binary) = &start.binary else {
        let Target::Port(port) = start.target else {
            return Err(format!("{} needs its binary to start", adapter.name()));
        };
        let stream = tcp(port, deadline).await?;
        let (read, write) = stream.into_split();
        return Ok((
            None,
            Transport::start(BufReader::new(read), write, observer),
        ));
    };
    let mut command = Command::new(binary, &start.sandbox);
    // In a network of its own the adapter's loopback is out of Gantry's
    // reach: it dials Gantry instead, on a listener its namespace hands
    // over.
    let dials_in = adapter.wire() == Wire::Tcp && start.sandbox.own_network();
    match dials_in {
        true => command
            .args(["dap", "--client-addr", &format!("127.0.0.1:{DIAL_IN_PORT}")])
            .listen_inside(DIAL_IN_PORT),
        false => command.args(adapter.arguments()),
    };
    command.current_dir(&start.root).stdout(Stdout::Piped);
    if adapter.wire() == Wire::Stdio {
        command.stdin_piped();
    }
    let shown = command.shown();
    let mut child = command
        .spawn()
        .map_err(|e| format!("starting `{shown}`: {e}"))?;
    let stdout = child
        .stdout
        .take()
        .ok_or("the adapter's stdout is not piped")?;
    match adapter.wire() {
        Wire::Stdio => {
            let stdin = child
                .stdin
                .take()
                .ok_or("the adapter's stdin is not piped")?;
            let transport = Transport::start(BufReader::new(stdout), stdin, observer);
            Ok((Some(child), transport))
        }
        Wire::Tcp if dials_in => {
            let listener = child
                .take_inbound(DIAL_IN_PORT)
                .map_err(|e| format!("the adapter's dial-in listener: {e}"))?
                .ok_or("the adapter's namespace handed over no listener")?;
            let accepted = tokio::select! {
                accepted = tokio::time::timeout_at(deadline, listener.accept()) => accepted,
                status = child.exited() => {
                    let status = status.map(describe_exit).unwrap_or_default();
                    return Err(with_stderr(
                        format!("`{shown}` exited before it connected ({status})"),
                        &child,
                    ));
                }
            };
            let stream = match accepted {
                Ok(Ok((stream, _))) => stream,
                Ok(Err(e)) => return Err(with_stderr(format!("accepting `{shown}`: {e}"), &child)),
                Err(_) => {
                    return Err(with_stderr(
                        format!("`{shown}` did not connect in time"),
                        &child,
                    ));
                }
            };
            // Its stdout carries the debuggee's output.
            drain(BufReader::new(stdout).lines(), output);
            let (read, write) = stream.into_split();
            Ok((
                Some(child),
                Transport::start(BufReader::new(read), write, observer),
            ))
        }
        Wire::Tcp => {
            // The adapter prints where it listens; after that its stdout
            // carries the debuggee's output, drained into the buffer.
            let mut lines = BufReader::new(stdout).lines();
            let port = loop {
                let line = tokio::time::timeout_at(deadline, lines.next_line()).await;
                match line {
                    Err(_) => {
                        return Err(with_stderr(
                            format!("`{shown}` did not say where it listens"),
                            &child,
                        ));
                    }
                    Ok(Ok(Some(line))) => {
                        if let Some(port) = listening_port(&line) {
                            break port;
                        }
                    }
                    Ok(_) => {
                        let status = child.exited().await.map(describe_exit).unwrap_or_default();
                        return Err(with_stderr(
                            format!("`{shown}` exited before listening ({status})"),
                            &child,
                        ));
                    }
                }
            };
            drain(lines, output);
            let stream = tcp(port, deadline)
                .await
                .map_err(|e| with_stderr(e, &child))?;
            let (read, write) = stream.into_split();
            Ok((
                Some(child),
                Transport::start(BufReader::new(read), write, observer),
            ))
        }
    }
}

/// Copies what is left of an adapter's stdout (its debuggee's output)
/// into the session's buffer.
fn drain(
    mut lines: tokio::io::Lines<BufReader<tokio::net::unix::pipe::Receiver>>,
    output: Arc<Mutex<Capped>>,
) {
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            let mut output = lock(&output);
            output.push(line.as_bytes());
            output.push(b"\n");
        }
    });
}

/// The port of an adapter's own loopback it dials Gantry on, where it has
/// a network of its own (any port: the namespace is the adapter's alone).
const DIAL_IN_PORT: u16 = 4711;

/// The port of `DAP server listening at: 127.0.0.1:40123`.
fn listening_port(line: &str) -> Option<u16> {
    let (_, address) = line.split_once("listening at:")?;
    address.trim().rsplit_once(':')?.1.parse().ok()
}

async fn tcp(port: u16, deadline: Instant) -> Result<tokio::net::TcpStream, String> {
    match tokio::time::timeout_at(
        deadline,
        tokio::net::TcpStream::connect(("127.0.0.1", port)),
    )
    .await
    {
        Ok(Ok(stream)) => Ok(stream),
        Ok(Err(e)) => Err(format!(
            "connecting to the debug server at 127.0.0.1:{port}: {e}"
        )),
        Err(_) => Err(format!(
            "connecting to the debug server at 127.0.0.1:{port} timed out"
        )),
    }
}

pub(super) fn with_stderr(error: String, child: &Child) -> String {
    let said = child.stderr().map(|s| s.explain()).unwrap_or_default();
    if said.trim().is_empty() {
        error
    } else {
        format!("{error}\nthe adapter said:\n{said}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_port_delve_listens_on() {
        assert_eq!(
            listening_port("DAP server listening at: 127.0.0.1:40123"),
            Some(40123)
        );
        assert_eq!(
            listening_port("API server listening at: [::1]:99"),
            Some(99)
        );
        assert_eq!(listening_port("Type 'help' for list of commands."), None);
    }
}
