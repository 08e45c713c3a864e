//! The rules themselves: a Landlock ruleset (the `landlock` crate, as a
//! hard requirement, never its best effort) with the seccomp filter of
//! [`super::seccomp`], both built before any fork and applied between
//! fork and exec with system calls that allocate nothing.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use super::{DEVICES, seccomp};
use landlock::{
    ABI, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreatedAttr, Scope,
};
use seccompiler::BpfProgram;

/// The Landlock ABI of the running kernel, 0 without Landlock, asked once.
/// Hand-written: the `landlock` crate finds it out only by building a
/// ruleset, and `gantry status` must say it without building one.
pub(crate) fn abi() -> u32 {
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

/// The Landlock ABI that scopes signals and abstract Unix sockets to a
/// command's own sandbox (Linux 6.12).
pub(crate) const SCOPE_ABI: u32 = 6;

/// A ruleset and a filter, ready to be applied in a child: by the child
/// itself between fork and exec when spawned directly, or by its reaper,
/// handed the two descriptors, before it starts the command (no fork of
/// Gantry then: a fork copies its page tables, milliseconds for a
/// Gantry holding a few hundred megabytes, where `posix_spawn` does not).
pub(crate) struct Prepared {
    ruleset: OwnedFd,
    /// The seccomp program, and the same program in a memfd for a reaper
    /// to read.
    filter: (BpfProgram, OwnedFd),
    /// Whether signals and abstract Unix sockets are scoped to the
    /// command's own sandbox.
    scoped: bool,
}

impl Prepared {
    /// Builds the rules: writes beneath `writable` (those that exist and
    /// are absolute: a relative path would name a place beside Gantry's
    /// own directory; one created later is not writable until the next
    /// run) and the devices; TCP connect and bind denied unless
    /// `network`; signals and abstract Unix sockets scoped to the command's
    /// own sandbox where the kernel (`abi`) can; the filter compiled.
    pub(crate) fn build(writable: &[PathBuf], network: bool, abi: u32) -> Result<Prepared, String> {
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
        // Gantry, the language servers and the user's other programs are
        // outside every command's domain: no signal reaches them, nor a
        // connection to their abstract sockets.
        let scoped = abi >= SCOPE_ABI;
        if scoped {
            ruleset = ruleset
                .scope(Scope::Signal | Scope::AbstractUnixSocket)
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
        let program = seccomp::filter(network)?;
        let memfd =
            seccomp::memfd(&program).map_err(|e| format!("cannot hold the seccomp filter: {e}"))?;
        Ok(Prepared {
            ruleset,
            filter: (program, memfd),
            scoped,
        })
    }

    /// What the confinement holds beyond the writes and the network, for
    /// `gantry status`.
    pub(crate) fn describe(&self) -> String {
        format!(
            "confined commands run without capabilities (as root too: an empty bounding set, \
             no ambient ones, root's exec grants none) and cannot push input into a terminal \
             (TIOCSTI, TIOCLINUX); {}",
            if self.scoped {
                "they cannot signal, nor reach the abstract Unix sockets of, any process outside \
                 their own sandbox (Landlock scopes)"
            } else {
                "signals are not scoped (that needs Landlock ABI 6, Linux 6.12): a command may \
                 signal the user's other processes"
            }
        )
    }

    /// Has `command` confine itself between fork and exec.
    pub(crate) fn apply_on_exec(self: &Arc<Self>, command: &mut std::process::Command) {
        let prepared = self.clone();
        // SAFETY: the closure runs in the forked child, where only
        // async-signal-safe work is allowed: three system calls on values
        // built before the fork, nothing allocated, no lock taken.
        unsafe {
            command
                .pre_exec(move || restrict(prepared.ruleset.as_fd(), prepared.filter.0.as_slice()));
        }
    }

    /// The descriptors a reaper is handed to confine itself and its
    /// command: the ruleset, and the memfd holding the filter.
    pub(crate) fn descriptors(&self) -> (BorrowedFd<'_>, BorrowedFd<'_>) {
        (self.ruleset.as_fd(), self.filter.1.as_fd())
    }
}

/// Confines the calling process: no new privileges, no capabilities,
/// the ruleset, the filter. System calls only, nothing allocated: safe
/// between fork and exec.
pub(crate) fn restrict(
    ruleset: BorrowedFd<'_>,
    filter: &[seccompiler::sock_filter],
) -> std::io::Result<()> {
    // SAFETY: plain system calls on a descriptor and a program borrowed
    // for the whole call.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        drop_capabilities()?;
        if libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    super::seccomp::load(filter)
}

/// `struct __user_cap_header_struct`: the `libc` crate has no
/// capability calls, and the `caps` crate allocates, which the child of a
/// fork must not; two structs and two system calls are all it takes.
#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

/// `struct __user_cap_data_struct`, one of the two 32-bit halves.
#[repr(C)]
#[derive(Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

const CAPABILITY_VERSION_3: u32 = 0x2008_0522;
const CAP_SETPCAP: u32 = 8;
/// `SECBIT_NOROOT`, `SECBIT_KEEP_CAPS_LOCKED`, `SECBIT_NO_CAP_AMBIENT_RAISE`,
/// each with its lock: root's exec grants no capability, ever again.
const SECURE_BITS: libc::c_ulong = 0b1110_0011;

/// Leaves the calling process no capability it could use or get back:
/// as root, `exec` would otherwise grant the full set again, and root with
/// capabilities reads any process's memory and environment, mounts and
/// loads modules. An unprivileged process has none to drop and cannot
/// change its bounding set (no `CAP_SETPCAP`), which then matters not:
/// under `no_new_privs` no file capability is granted.
fn drop_capabilities() -> std::io::Result<()> {
    let header = CapHeader {
        version: CAPABILITY_VERSION_3,
        pid: 0,
    };
    let none = CapData {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    };
    let mut held = [none; 2];
    // SAFETY: capget and capset read a header and write or read two data
    // structs, all owned here and laid out as the kernel's; prctl takes
    // plain integers.
    unsafe {
        if libc::syscall(libc::SYS_capget, &header, held.as_mut_ptr()) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if held[0].effective & (1 << CAP_SETPCAP) != 0 {
            if libc::prctl(libc::PR_SET_SECUREBITS, SECURE_BITS, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // Up to the kernel's last capability, which answers EINVAL past it.
            for capability in 0..64 {
                if libc::prctl(libc::PR_CAPBSET_DROP, capability, 0, 0, 0) != 0 {
                    if *libc::__errno_location() == libc::EINVAL {
                        break;
                    }
                    return Err(std::io::Error::last_os_error());
                }
            }
        }
        // EINVAL only where ambient capabilities do not exist (before 4.3).
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        );
        if libc::syscall(libc::SYS_capset, &header, [none; 2].as_ptr()) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}
