//! The seccomp filter every confined command runs under (`seccompiler`):
//! what Landlock cannot say (no pushing input into a terminal; under
//! `network: false`, no socket but Unix and plain TCP), built once, held
//! in a memfd for reapers, and loaded last in the confinement.

use std::os::fd::OwnedFd;
use std::os::unix::fs::FileExt;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// The seccomp filter of every confined command: `ioctl` fails with
/// `EACCES` for `TIOCSTI` and `TIOCLINUX`, which push characters into a
/// terminal's input (a command sharing Gantry's terminal would type the
/// answer to Gantry's own confirmation). Under `network: false` also
/// `socket` for any family but Unix, IPv4 and IPv6 (packet, netlink,
/// ...), and for IPv4 and IPv6 for anything but plain TCP (UDP, raw,
/// SCTP, MPTCP), which Landlock then denies to connect or bind; and
/// `io_uring_setup`, since a ring opens sockets without the `socket`
/// call.
pub(super) fn filter(network: bool) -> Result<BpfProgram, String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| e.to_string())?;
    let condition = |index, op, value: i32| {
        SeccompCondition::new(index, SeccompCmpArgLen::Dword, op, value as u64)
            .map_err(|e| e.to_string())
    };
    let mut socket_rules = vec![
        SeccompRule::new(vec![
            condition(0, SeccompCmpOp::Ne, libc::AF_UNIX)?,
            condition(0, SeccompCmpOp::Ne, libc::AF_INET)?,
            condition(0, SeccompCmpOp::Ne, libc::AF_INET6)?,
        ])
        .map_err(|e| e.to_string())?,
    ];
    // The type's low bits; SOCK_NONBLOCK and SOCK_CLOEXEC are above them.
    const TYPE_MASK: u64 = 0xf;
    for family in [libc::AF_INET, libc::AF_INET6] {
        for kind in (0..=TYPE_MASK as i32).filter(|&kind| kind != libc::SOCK_STREAM) {
            socket_rules.push(
                SeccompRule::new(vec![
                    condition(0, SeccompCmpOp::Eq, family)?,
                    condition(1, SeccompCmpOp::MaskedEq(TYPE_MASK), kind)?,
                ])
                .map_err(|e| e.to_string())?,
            );
        }
        socket_rules.push(
            SeccompRule::new(vec![
                condition(0, SeccompCmpOp::Eq, family)?,
                condition(2, SeccompCmpOp::Ne, 0)?,
                condition(2, SeccompCmpOp::Ne, libc::IPPROTO_TCP)?,
            ])
            .map_err(|e| e.to_string())?,
        );
    }
    let typing = [libc::TIOCSTI, libc::TIOCLINUX]
        .into_iter()
        .map(|request| {
            SeccompRule::new(vec![condition(1, SeccompCmpOp::Eq, request as i32)?])
                .map_err(|e| e.to_string())
        })
        .collect::<Result<Vec<_>, String>>()?;
    let mut rules = vec![(libc::SYS_ioctl, typing)];
    if !network {
        rules.push((libc::SYS_socket, socket_rules));
        rules.push((libc::SYS_io_uring_setup, Vec::new()));
    }
    let rules = rules.into_iter().collect();
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EACCES as u32),
        arch,
    )
    .map_err(|e| e.to_string())?;
    filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| e.to_string())
}

/// The program's instructions in a sealed-size memfd, for reapers to read
/// with `pread` (never moving the offset other reapers share).
pub(super) fn memfd(program: &[seccompiler::sock_filter]) -> std::io::Result<OwnedFd> {
    let memfd = rustix::fs::memfd_create("gantry-seccomp", rustix::fs::MemfdFlags::CLOEXEC)?;
    // SAFETY: sock_filter is plain data (u16, u8, u8, u32) without padding.
    let bytes = unsafe {
        std::slice::from_raw_parts(
            program.as_ptr().cast::<u8>(),
            std::mem::size_of_val(program),
        )
    };
    std::fs::File::from(memfd.try_clone()?).write_all_at(bytes, 0)?;
    Ok(memfd)
}

/// A filter program from a memfd [`memfd`] wrote (in a reaper).
pub(crate) fn read_filter(memfd: &OwnedFd) -> std::io::Result<Vec<seccompiler::sock_filter>> {
    let file = std::fs::File::from(memfd.try_clone()?);
    let size = file.metadata()?.len() as usize;
    let instruction = std::mem::size_of::<seccompiler::sock_filter>();
    if size == 0 || !size.is_multiple_of(instruction) || size / instruction > u16::MAX as usize {
        return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
    }
    let mut bytes = vec![0u8; size];
    file.read_exact_at(&mut bytes, 0)?;
    Ok(bytes
        .chunks_exact(instruction)
        .map(|chunk| seccompiler::sock_filter {
            code: u16::from_ne_bytes([chunk[0], chunk[1]]),
            jt: chunk[2],
            jf: chunk[3],
            k: u32::from_ne_bytes([chunk[4], chunk[5], chunk[6], chunk[7]]),
        })
        .collect())
}

/// Loads `filter` on the calling process (after `PR_SET_NO_NEW_PRIVS`). One
/// system call, nothing allocated: safe between fork and exec.
pub(super) fn load(filter: &[seccompiler::sock_filter]) -> std::io::Result<()> {
    let program = libc::sock_fprog {
        len: filter.len() as libc::c_ushort,
        // The same layout: code, jt, jf, k.
        filter: filter.as_ptr().cast::<libc::sock_filter>().cast_mut(),
    };
    // SAFETY: the program is borrowed for the whole call.
    let loaded = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            0,
            &program as *const libc::sock_fprog,
        )
    };
    if loaded != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
