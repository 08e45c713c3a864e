//! The rules themselves: a Landlock ruleset (the `landlock` crate, as a
//! hard requirement, never its best effort) and, for `network: false`, a
//! seccomp filter (`seccompiler`), both built before any fork and applied
//! between fork and exec with three system calls that allocate nothing.

use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

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

/// A ruleset and a filter, ready to be applied in a child.
pub(super) struct Prepared {
    ruleset: OwnedFd,
    /// The seccomp program under `network: false`.
    filter: Option<BpfProgram>,
}

impl Prepared {
    /// Builds the rules: writes beneath `writable` (those that exist and
    /// are absolute: a relative path would name a place beside Gantry's own
    /// directory; one created later is not writable until the next run)
    /// and the devices;
    /// TCP connect and bind denied, and the filter compiled, unless
    /// `network`.
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
            false => Some(socket_filter()?),
        };
        Ok(Prepared { ruleset, filter })
    }

    /// Has `command` confine itself between fork and exec.
    pub(super) fn apply_on_exec(self: &std::sync::Arc<Self>, command: &mut std::process::Command) {
        let prepared = self.clone();
        // SAFETY: the closure runs in the forked child, where only
        // async-signal-safe work is allowed: three system calls on values
        // built before the fork, nothing allocated, no lock taken.
        unsafe {
            command.pre_exec(move || prepared.enter());
        }
    }

    /// Confines the calling process: no new privileges, the ruleset, the
    /// filter.
    fn enter(&self) -> std::io::Result<()> {
        // SAFETY: plain system calls; the ruleset descriptor and the
        // filter are owned by `self`, alive for the whole call.
        unsafe {
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::syscall(
                libc::SYS_landlock_restrict_self,
                self.ruleset.as_raw_fd(),
                0,
            ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            if let Some(filter) = &self.filter {
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
