//! What the process crate's tests share.
/// Process mechanics, seen from outside: a confined command runs in a PID
/// namespace of its own, where the pids it reports mean nothing here, so
/// these tests run theirs unconfined (the user's `mode: off`); the
/// sandbox's own tests cover the confined path.
pub fn unconfined() -> gantry_process::Sandbox {
    let off = gantry_process::sandbox::Policy {
        mode: gantry_process::sandbox::Mode::Off,
        ..Default::default()
    };
    gantry_process::Sandbox::new(off, &[])
}
