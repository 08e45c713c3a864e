//! Locking a std mutex whose holder may have panicked.

use std::sync::{Mutex, MutexGuard};

/// Locks `mutex`, taking the guard even when a holder panicked (poisoned
/// it). Gantry's mutexes guard maps and queues (tool registries, pending
/// requests, server tables, caches) that a panic cannot leave half-changed,
/// so one tool that panics must not make every later call through the
/// same lock panic too. The one copy every crate uses.
pub fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_poisoned_mutex_is_still_locked_and_keeps_its_value() {
        let mutex = Mutex::new(1);
        let poisoned = std::panic::catch_unwind(|| {
            let _guard = mutex.lock().unwrap();
            panic!("a holder panics");
        });
        assert!(poisoned.is_err() && mutex.is_poisoned());
        *lock(&mutex) += 1;
        assert_eq!(*lock(&mutex), 2);
    }
}
