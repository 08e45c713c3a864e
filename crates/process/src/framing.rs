//! `Content-Length` framing, shared by every base protocol that frames JSON
//! this way (LSP, and DAP after it).
//!
//! A server is a foreign process: whatever it writes, a malformed header or
//! a truncated body is an error for that server, never a panic of the
//! runtime.

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The largest message accepted. Servers answer with big workspace symbol
/// lists, but a header claiming more than this is a broken stream, and
/// allocating it would let one server take the process down.
pub const MAX_MESSAGE: usize = 64 * 1024 * 1024;

/// The longest header line accepted, for the same reason.
const MAX_HEADER_LINE: usize = 8 * 1024;

/// Why a message could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FramingError {
    /// The stream failed.
    #[error("reading from the server: {0}")]
    Io(#[from] std::io::Error),
    /// A header line is not `Name: value` or not UTF-8.
    #[error("malformed header line {0:?}")]
    BadHeader(String),
    /// The header block had no usable `Content-Length`.
    #[error("header without a valid Content-Length")]
    NoLength,
    /// The announced length is beyond [`MAX_MESSAGE`].
    #[error("message of {0} bytes exceeds the {MAX_MESSAGE}-byte limit")]
    TooLarge(usize),
    /// The stream ended inside a header or a body.
    #[error("stream ended inside a message")]
    Truncated,
}

/// Reads one message body. `Ok(None)` is a clean end of stream between
/// messages.
pub async fn read_message<R: AsyncBufRead + Unpin>(
    reader: &mut R,
) -> Result<Option<Vec<u8>>, FramingError> {
    let mut length = None;
    let mut line = Vec::new();
    let mut first = true;
    loop {
        line.clear();
        let read = (&mut *reader)
            .take(MAX_HEADER_LINE as u64 + 1)
            .read_until(b'\n', &mut line)
            .await?;
        if read == 0 {
            return if first {
                Ok(None)
            } else {
                Err(FramingError::Truncated)
            };
        }
        first = false;
        if line.len() > MAX_HEADER_LINE {
            return Err(FramingError::BadHeader(
                String::from_utf8_lossy(&line[..80]).into_owned() + "…",
            ));
        }
        if line.last() != Some(&b'\n') {
            return Err(FramingError::Truncated);
        }
        let text = std::str::from_utf8(&line)
            .map_err(|_| FramingError::BadHeader(String::from_utf8_lossy(&line).into_owned()))?
            .trim_end_matches(['\r', '\n']);
        if text.is_empty() {
            break;
        }
        let (name, value) = text
            .split_once(':')
            .ok_or_else(|| FramingError::BadHeader(text.to_string()))?;
        if name.trim().eq_ignore_ascii_case("content-length") {
            let value: usize = value.trim().parse().map_err(|_| FramingError::NoLength)?;
            length = Some(value);
        }
    }
    let length = length.ok_or(FramingError::NoLength)?;
    if length > MAX_MESSAGE {
        return Err(FramingError::TooLarge(length));
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).await.map_err(|e| {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            FramingError::Truncated
        } else {
            FramingError::Io(e)
        }
    })?;
    Ok(Some(body))
}

/// Writes one message with its header and flushes it.
pub async fn write_message<W: AsyncWrite + Unpin>(
    writer: &mut W,
    body: &[u8],
) -> std::io::Result<()> {
    let header = format!("Content-Length: {}\r\n\r\n", body.len());
    writer.write_all(header.as_bytes()).await?;
    writer.write_all(body).await?;
    writer.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn read_all(input: &[u8]) -> (Vec<Vec<u8>>, Option<FramingError>) {
        let mut reader = tokio::io::BufReader::new(input);
        let mut out = Vec::new();
        loop {
            match read_message(&mut reader).await {
                Ok(Some(body)) => out.push(body),
                Ok(None) => return (out, None),
                Err(e) => return (out, Some(e)),
            }
        }
    }

    #[tokio::test]
    async fn reads_consecutive_messages_and_ignores_other_headers() {
        let input = b"Content-Length: 2\r\n\r\n{}Content-Type: application/vscode-jsonrpc; charset=utf-8\r\ncontent-length:  7 \r\n\r\n[1,2,3]";
        let (messages, error) = read_all(input).await;
        assert!(error.is_none(), "{error:?}");
        assert_eq!(messages, vec![b"{}".to_vec(), b"[1,2,3]".to_vec()]);
    }

    #[tokio::test]
    async fn write_then_read_round_trips() {
        let mut buffer = Vec::new();
        write_message(&mut buffer, "{\"é\":1}".as_bytes())
            .await
            .unwrap();
        write_message(&mut buffer, b"").await.unwrap();
        let (messages, error) = read_all(&buffer).await;
        assert!(error.is_none());
        assert_eq!(messages, vec!["{\"é\":1}".as_bytes().to_vec(), Vec::new()]);
    }

    #[tokio::test]
    async fn malformed_input_is_an_error_not_a_panic() {
        let cases: &[(&[u8], &str)] = &[
            (b"Content-Length: abc\r\n\r\n{}", "valid Content-Length"),
            (b"Content-Type: x\r\n\r\n{}", "valid Content-Length"),
            (b"garbage without colon\r\n\r\n", "malformed header"),
            (b"Content-Length: 10\r\n\r\n{}", "ended inside"),
            (b"Content-Length: 2\r\n", "ended inside"),
            (b"Content-Length: 2", "ended inside"),
            (b"Content-Length: 99999999999\r\n\r\n", "exceeds"),
            (b"Content-Length: -1\r\n\r\n", "valid Content-Length"),
            (b"\xff\xfe: 1\r\n\r\n", "malformed header"),
        ];
        for (input, expected) in cases {
            let (_, error) = read_all(input).await;
            let error = error.expect("an error").to_string();
            assert!(error.contains(expected), "{input:?}: {error}");
        }
        let long = [b"X-Long: ".as_slice(), &[b'a'; 20_000], b"\r\n\r\n"].concat();
        let (_, error) = read_all(&long).await;
        assert!(error.unwrap().to_string().contains("malformed header"));
    }

    #[tokio::test]
    async fn arbitrary_bytes_never_panic() {
        // A small deterministic generator: every prefix of mixed valid and
        // invalid frames must come back as messages or an error.
        let valid = b"Content-Length: 5\r\n\r\nhello".to_vec();
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..300 {
            let mut input = valid.clone();
            for _ in 0..4 {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let at = (seed as usize) % input.len();
                input[at] = (seed >> 32) as u8;
            }
            for cut in [input.len(), input.len() / 2, 3] {
                let _ = read_all(&input[..cut]).await;
            }
        }
    }
}
