//! The frames a kernel and Gantry exchange on the kernel's own pair of
//! pipes: a 4-byte big-endian length, then that many bytes of JSON. The
//! drivers (`drivers/`) speak the other end.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::pipe;
use tokio::sync::mpsc;

/// A frame larger than this is a broken kernel, not a big result: images
/// are capped at ~200 KB by the drivers and text is capped by the host.
const MAX_FRAME: u32 = 64 << 20;

/// A mime bundle: `image/png` (base64), `text/markdown`, `text/plain`.
pub type Bundle = Map<String, Value>;

/// What a kernel says.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FromKernel {
    /// The driver runs and waits for cells.
    Hello {
        /// The interpreter's pid, which Gantry interrupts.
        pid: i32,
        /// The interpreter's version.
        version: String,
    },
    /// Text the cell printed (Python's `sys.stdout`/`sys.stderr`).
    Stream {
        /// `stdout` or `stderr`.
        name: String,
        /// The text.
        text: String,
    },
    /// A `display()` call, or a figure open at the end of the cell.
    Display {
        /// What was shown.
        data: Bundle,
    },
    /// The value of the cell's last expression.
    Result {
        /// The value as shown.
        data: Bundle,
    },
    /// The cell raised.
    Error {
        /// The exception's type.
        ename: String,
        /// Its message.
        evalue: String,
        /// The traceback, user frames only, as text.
        traceback: String,
    },
    /// `tool(name, args)` in the cell: Gantry runs it and answers with
    /// [`ToKernel::ToolResult`].
    ToolCall {
        /// Answered with the same id.
        id: u64,
        /// The tool's name.
        name: String,
        /// Its arguments.
        args: Value,
    },
    /// The cell ended; what the kernel now holds, for the report of a
    /// crash.
    Done {
        /// Variables the cell's namespace holds.
        #[serde(default)]
        names: Vec<String>,
        /// Modules it imported under a name.
        #[serde(default)]
        modules: Vec<String>,
    },
}

/// What Gantry says to a kernel.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToKernel<'a> {
    /// Run a cell.
    Exec {
        /// The cell's code.
        code: &'a str,
    },
    /// The answer to a [`FromKernel::ToolCall`].
    ToolResult {
        /// The call's id.
        id: u64,
        /// Whether the tool succeeded.
        ok: bool,
        /// Its text.
        text: String,
        /// Its parts (text, images, structured values), as the result's
        /// JSON form.
        parts: Vec<Value>,
        /// Why it failed.
        error: Option<String>,
    },
}

/// What the frame reader asks the pipe for at once: a pipe's default size.
const READ_BUFFER: usize = 64 * 1024;

/// Writes one frame.
pub async fn write_frame(to: &mut pipe::Sender, frame: &ToKernel<'_>) -> std::io::Result<()> {
    let body = serde_json::to_vec(frame).map_err(std::io::Error::other)?;
    let length = u32::try_from(body.len()).map_err(std::io::Error::other)?;
    let mut data = Vec::with_capacity(body.len() + 4);
    data.extend_from_slice(&length.to_be_bytes());
    data.extend_from_slice(&body);
    to.write_all(&data).await
}

/// Reads frames on a task of their own, so the cell loop can wait for a
/// frame, the kernel's raw output and its budget at once (a frame read
/// half-way is never dropped). The channel closes when the kernel closes
/// its end: it exited, or its driver broke; an unreadable frame is an
/// `Err` with what was wrong. Buffered: a cell's last frames come in one
/// write, and are read in one call rather than two per frame.
pub fn read_frames(
    from: impl AsyncRead + Unpin + Send + 'static,
) -> mpsc::Receiver<Result<FromKernel, String>> {
    let (sender, frames) = mpsc::channel(64);
    let mut from = tokio::io::BufReader::with_capacity(READ_BUFFER, from);
    tokio::spawn(async move {
        loop {
            let Ok(length) = from.read_u32().await else {
                return;
            };
            if length > MAX_FRAME {
                let _ = sender
                    .send(Err(format!("a frame of {length} bytes, over the limit")))
                    .await;
                return;
            }
            let mut body = vec![0; length as usize];
            if from.read_exact(&mut body).await.is_err() {
                return;
            }
            let frame = serde_json::from_slice(&body).map_err(|e| {
                let shown = String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned();
                format!("an unreadable frame ({e}): {shown}")
            });
            if sender.send(frame).await.is_err() {
                return;
            }
        }
    });
    frames
}
