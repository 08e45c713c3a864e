//! The rules themselves: a Landlock ruleset (the `landlock` crate, as a
//! hard requirement, never its best effort) and, for `network: false`, a
//! seccomp filter (`seccompiler`), both built before any fork and applied
//! between fork and exec with three system calls that allocate nothing.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::FileExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use super::DEVICES;
use landlock::{
    ABI, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreatedAttr,
};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// The Landlock ABI of the running kernel, 0 without Landlock, asked once.
/// Hand-written: the `landlock` crate finds it out only by building a
/// ruleset, and `gantry status` must say it without building one.
pub(super) fn abi() -> u32 {
    static ABI: OnceLock<u32> = OnceLock::new();
    *ABI.get_or_init(|| {
        const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
        // SAFETY: with a null attribute, size 0 and the VERSION flag the
        // call reads nothing and returns the ABI version or an error.
        let version = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                std::ptr::null::<libc::c_void>(),
                0usize,
                LANDLOCK_CREATE_RULESET_VERSION,
            )
        };
        u32::try_from(version).unwrap_or(0)
    })
}

/// Everything write-like Landlock ABI 3 controls: creating, removing,
/// renaming across directories, writing and truncating. Reads, execution
/// and device ioctls stay unhandled, hence allowed.
fn write_access() -> BitFlags<AccessFs> {
    AccessFs::from_write(ABI::V3)
}

/// A ruleset and a filter, ready to be applied in a child: by the child
/// itself between fork and exec when spawned directly, or by its reaper,
/// handed the two descriptors, before it starts the command (no fork of
/// Gantry then: a fork copies its page tables, milliseconds for a
/// Gantry holding a few hundred megabytes, where `posix_spawn` does not).
pub(crate) struct Prepared {
    ruleset: OwnedFd,
    /// The seccomp program under `network: false`, and the same program
    /// in a memfd for a reaper to read.
    filter: Option<(BpfProgram, OwnedFd)>,
}

impl Prepared {
    /// Builds the rules: writes beneath `writable` (those that exist and
    /// are absolute: a relative path would name a place beside Gantry's
    /// own directory; one created later is not writable until the next
    /// run) and the devices; TCP connect and bind denied, and the filter
    /// compiled, unless `network`.
    pub(super) fn build(writable: &[PathBuf], network: bool) -> Result<Prepared, String> {
        let handled = write_access();
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(handled)
            .map_err(|e| e.to_string())?;
        if !network {
            ruleset = ruleset
                .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)
                .map_err(|e| e.to_string())?;
        }
        let mut created = ruleset.create().map_err(|e| e.to_string())?;
        let places = writable
            .iter()
            .map(PathBuf::as_path)
            .chain(DEVICES.iter().map(Path::new));
        for place in places.filter(|place| place.is_absolute()) {
            let Ok(metadata) = std::fs::metadata(place) else {
                continue;
            };
            // A file takes only the rights that apply to files.
            let access = if metadata.is_dir() {
                handled
            } else {
                handled & AccessFs::from_file(ABI::V3)
            };
            let fd = PathFd::new(place).map_err(|e| format!("{}: {e}", place.display()))?;
            created = created
                .add_rule(PathBeneath::new(fd, access))
                .map_err(|e| format!("{}: {e}", place.display()))?;
        }
        let ruleset =
            Option::<OwnedFd>::from(created).ok_or("the kernel created no Landlock ruleset")?;
        let filter = match network {
            true => None,
            false => {
                let program = socket_filter()?;
                let memfd = filter_memfd(&program)
                    .map_err(|e| format!("cannot hold the seccomp filter: {e}"))?;
                Some((program, memfd))
            }
        };
        Ok(Prepared { ruleset, filter })
    }

    /// Has `command` confine itself between fork and exec.
    pub(crate) fn apply_on_exec(self: &Arc<Self>, command: &mut std::process::Command) {
        let prepared = self.clone();
        // SAFETY: the closure runs in the forked child, where only
        // async-signal-safe work is allowed: three system calls on values
        // built before the fork, nothing allocated, no lock taken.
        unsafe {
            command.pre_exec(move || {
                let filter = prepared
                    .filter
                    .as_ref()
                    .map(|(program, _)| program.as_slice());
                restrict(prepared.ruleset.as_fd(), filter)
            });
        }
    }

    /// The descriptors a reaper is handed to confine itself and its
    /// command: the ruleset, and the memfd holding the filter.
    pub(crate) fn descriptors(&self) -> (BorrowedFd<'_>, Option<BorrowedFd<'_>>) {
        (
            self.ruleset.as_fd(),
            self.filter.as_ref().map(|(_, memfd)| memfd.as_fd()),
        )
    }
}

/// The program's instructions in a sealed-size memfd, for reapers to read
/// with `pread` (never moving the offset other reapers share).
fn filter_memfd(program: &[seccompiler::sock_filter]) -> std::io::Result<OwnedFd> {
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

/// A filter program from a memfd [`filter_memfd`] wrote (in a reaper).
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

/// Confines the calling process: no new privileges, the ruleset, the
/// filter. Three system calls, nothing allocated: safe between fork and
/// exec.
pub(crate) fn restrict(
    ruleset: BorrowedFd<'_>,
    filter: Option<&[seccompiler::sock_filter]>,
) -> std::io::Result<()> {
    // SAFETY: plain system calls on a descriptor and a program borrowed
    // for the whole call.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if let Some(filter) = filter {
            let program = libc::sock_fprog {
                len: filter.len() as libc::c_ushort,
                // The same layout: code, jt, jf, k.
                filter: filter.as_ptr().cast::<libc::sock_filter>().cast_mut(),
            };
            if libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                0,
                &program as *const libc::sock_fprog,
            ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
        }
    }
    Ok(())
}

/// The seccomp filter of `network: false`: `socket` fails with `EACCES`
/// for any family but Unix, IPv4 and IPv6 (packet, netlink, ...), and for
/// IPv4 and IPv6 for anything but plain TCP (UDP, raw, SCTP, MPTCP), which
/// Landlock then denies to connect or bind; `io_uring_setup` too, since a
/// ring opens sockets without the `socket` call.
fn socket_filter() -> Result<BpfProgram, String> {
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
    let rules = [
        (libc::SYS_socket, socket_rules),
        (libc::SYS_io_uring_setup, Vec::new()),
    ]
    .into_iter()
    .collect();
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
