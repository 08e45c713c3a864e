//! The mount system calls the namespace code is made of: binding a path
//! onto itself read-only (keeping the flags a user namespace locked), a
//! cache behind a private overlay, mounts made private; each error says
//! which call failed on which path.

use std::ffi::CString;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

pub(super) fn check(result: libc::c_int) -> io::Result<()> {
    match result {
        -1 => Err(io::Error::last_os_error()),
        _ => Ok(()),
    }
}

fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

/// `mount(2)`, paths and options as Rust values.
pub(super) fn mount(
    source: Option<&Path>,
    target: &Path,
    fstype: Option<&str>,
    flags: libc::c_ulong,
    data: Option<&str>,
) -> io::Result<()> {
    let source = source.map(c_path).transpose()?;
    let target = c_path(target)?;
    let fstype = fstype.map(|t| CString::new(t).expect("no NUL"));
    let data = data.map(|d| CString::new(d).expect("no NUL"));
    let ptr = |c: &Option<CString>| c.as_ref().map_or(std::ptr::null(), |c| c.as_ptr());
    // SAFETY: every pointer is a NUL-terminated string alive for the call,
    // or null where mount(2) accepts null.
    check(unsafe {
        libc::mount(
            ptr(&source),
            target.as_ptr(),
            ptr(&fstype),
            flags,
            ptr(&data).cast(),
        )
    })
    .map_err(|e| io::Error::new(e.kind(), format!("mount {}: {e}", target.to_string_lossy())))
}

/// The flags of the mount `path` is on that a user namespace may not
/// clear (`nosuid`, `nodev`, `noexec`, the atime ones): a remount must
/// keep them.
fn locked_flags(path: &Path) -> io::Result<libc::c_ulong> {
    let target = c_path(path)?;
    // SAFETY: statvfs fills the zeroed struct it is given.
    let mut stat = unsafe { std::mem::zeroed::<libc::statvfs>() };
    check(unsafe { libc::statvfs(target.as_ptr(), &mut stat) })?;
    let pairs = [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ];
    Ok(pairs
        .iter()
        .filter(|(st, _)| stat.f_flag & st != 0)
        .fold(0, |flags, (_, ms)| flags | ms))
}

/// Binds `path` onto itself, read-only when `read_only`. Through a handle
/// opened without following a link: a path swapped for a symlink since
/// the plan was made (by a command of another namespace) is not followed
/// to wherever it points; it counts as gone. Once bound, the path is a
/// mount point, which nothing can rename or remove.
// An O_PATH handle on the path to bind: it writes nothing.
#[allow(clippy::disallowed_methods)]
pub(super) fn bind_self(path: &Path, read_only: bool) -> io::Result<()> {
    use rustix::fs::{FileType, Mode, OFlags};
    let handle = rustix::fs::open(
        path,
        OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    if FileType::from_raw_mode(rustix::fs::fstat(&handle)?.st_mode) == FileType::Symlink {
        return Err(io::Error::from(io::ErrorKind::NotFound));
    }
    let held = PathBuf::from(format!("/proc/self/fd/{}", handle.as_raw_fd()));
    mount(Some(&held), &held, None, libc::MS_BIND | libc::MS_REC, None)?;
    if read_only {
        let keep = locked_flags(path)?;
        mount(
            None,
            path,
            None,
            libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY | keep,
            None,
        )?;
    }
    Ok(())
}

/// `cache` as an overlay: reads see it, writes land in `upper`. Where the
/// kernel refuses the overlay (a file system without user extended
/// attributes for `upper`), the cache is read-only instead: never shared
/// writable.
///
/// `volatile` (Linux 5.10) first: without it, the overlay's unmount when
/// the command's namespace ends syncs the whole file system `upper` lives
/// on and waits for its writeback, which was most of what a confined
/// spawn cost (and grows with whatever else the machine is writing). The
/// upper folder is a cache of downloads: losing its last writes to a
/// power cut is acceptable, and each spawn has a fresh work folder, so
/// the `incompat/volatile` mark volatile leaves there never blocks a
/// later mount.
pub(super) fn private_cache(cache: &Path, upper: &Path, work: &Path) -> io::Result<()> {
    let options = format!(
        "lowerdir={},upperdir={},workdir={},userxattr,index=off",
        escape(cache),
        escape(upper),
        escape(work)
    );
    let overlay = |options: &str| {
        mount(
            Some(Path::new("overlay")),
            cache,
            Some("overlay"),
            libc::MS_NOSUID | libc::MS_NODEV,
            Some(options),
        )
    };
    overlay(&format!("{options},volatile"))
        .or_else(|_| overlay(&options))
        .or_else(|_| bind_self(cache, true))
}

/// A path for overlay's options, where `,`, `:` and `\` separate.
fn escape(path: &Path) -> String {
    let mut escaped = String::new();
    for c in path.to_string_lossy().chars() {
        if matches!(c, ',' | ':' | '\\') {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}

/// Makes every mount of this process's new mount namespace private: no
/// mount made here reaches the namespace it was copied from.
pub(super) fn make_mounts_private() -> io::Result<()> {
    mount(
        None,
        Path::new("/"),
        None,
        libc::MS_REC | libc::MS_PRIVATE,
        None,
    )
}
