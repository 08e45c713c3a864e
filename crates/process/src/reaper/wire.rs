//! The lines a reaper and Gantry exchange on the control socket: the
//! command's status (`exit N`, `signal N [core]`) and why it could not
//! start (`error ERRNO MESSAGE`), written by one program and read by the
//! other, so both sides live here.

use std::io::{self, Read};
use std::os::unix::net::UnixStream;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

/// Appends to `pending` what the non-blocking `socket` holds now, up to
/// its end.
pub(crate) fn read_available(socket: &UnixStream, pending: &mut Vec<u8>) {
    let mut chunk = [0u8; 256];
    loop {
        match (&*socket).read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => pending.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
}

/// How a reaper (or a namespace's init) says why it could not start the
/// command: `error ERRNO MESSAGE`, the errno for the error's kind (a
/// missing program is `NotFound`, as without a reaper), the message for
/// a person (which path could not be hidden).
pub(crate) fn error_line(error: &io::Error, otherwise: i32) -> String {
    let errno = error.raw_os_error().unwrap_or(match error.kind() {
        io::ErrorKind::NotFound => libc::ENOENT,
        io::ErrorKind::PermissionDenied => libc::EACCES,
        io::ErrorKind::InvalidInput => libc::EINVAL,
        _ => otherwise,
    });
    let message = error.to_string().replace('\n', " ");
    format!("error {errno} {message}\n")
}

/// The error an [`error_line`] says.
pub(crate) fn parse_error(line: &str) -> Option<io::Error> {
    let rest = line.strip_prefix("error ")?;
    let (errno, message) = rest.split_once(' ').unwrap_or((rest, ""));
    let from_errno = io::Error::from_raw_os_error(errno.trim().parse().ok()?);
    Some(match message.trim() {
        "" => from_errno,
        message => io::Error::new(from_errno.kind(), message.to_string()),
    })
}

/// `exit N`, `signal N` or `signal N core`, as an exit status.
pub(crate) fn parse_status(line: &str) -> Option<ExitStatus> {
    let mut words = line.split_whitespace();
    let raw = match (words.next()?, words.next()?.parse::<i32>().ok()?) {
        ("exit", code) => (code & 0xff) << 8,
        ("signal", signal) => {
            signal
                | if words.next() == Some("core") {
                    0x80
                } else {
                    0
                }
        }
        _ => return None,
    };
    Some(ExitStatus::from_raw(raw))
}

/// The line [`parse_status`] reads.
pub(crate) fn status_line(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit {code}\n"),
        (_, Some(signal)) if status.core_dumped() => format!("signal {signal} core\n"),
        (_, Some(signal)) => format!("signal {signal}\n"),
        _ => "exit 128\n".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_travel_as_lines() {
        for raw in [0, 3 << 8, 130 << 8, 2, 9, 11 | 0x80] {
            let status = ExitStatus::from_raw(raw);
            let line = status_line(status);
            assert_eq!(parse_status(line.trim()), Some(status), "{line}");
        }
        // An exit of 130 is not a death by SIGINT.
        assert_eq!(status_line(ExitStatus::from_raw(130 << 8)), "exit 130\n");
        assert_eq!(status_line(ExitStatus::from_raw(2)), "signal 2\n");
        assert_eq!(parse_status("pid 12"), None);
    }
}
