//! Requests sent to a peer and not yet answered, by id: a JSON-RPC `id`
//! (LSP) or a DAP `seq` answered by `request_seq`. The reader task
//! resolves them in whatever order answers come; when the peer goes, every
//! waiter learns why at once, and a request registered after that fails
//! at once instead of waiting for an answer that cannot come. How long a
//! caller waits is its own business (a timeout around the [`Reply`]).

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Mutex, MutexGuard};
use std::task::{Context, Poll};

use tokio::sync::oneshot;

/// Why no answer will come: the peer is gone, in words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Closed(pub String);

/// The requests waiting for an answer of type `T`.
pub struct Pending<T> {
    state: Mutex<State<T>>,
}

struct State<T> {
    waiting: HashMap<i64, oneshot::Sender<Result<T, Closed>>>,
    closed: Option<Closed>,
}

impl<T> Default for Pending<T> {
    fn default() -> Self {
        Pending {
            state: Mutex::new(State {
                waiting: HashMap::new(),
                closed: None,
            }),
        }
    }
}

impl<T> Pending<T> {
    fn state(&self) -> MutexGuard<'_, State<T>> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Registers request `id` before it is sent (an answer may arrive
    /// before `send` returns); the reply resolves with its answer. Fails
    /// when the peer is already gone. Ids are the caller's to keep unique.
    pub fn register(&self, id: i64) -> Result<Reply<T>, Closed> {
        let mut state = self.state();
        if let Some(closed) = &state.closed {
            return Err(closed.clone());
        }
        let (tx, rx) = oneshot::channel();
        state.waiting.insert(id, tx);
        Ok(Reply(rx))
    }

    /// Hands `answer` to the waiter of `id`; false when none waits (it gave
    /// up, or the id is not one of ours).
    pub fn resolve(&self, id: i64, answer: T) -> bool {
        let waiter = self.state().waiting.remove(&id);
        waiter.is_some_and(|waiter| waiter.send(Ok(answer)).is_ok())
    }

    /// Forgets `id` when its caller stopped waiting (a timeout, a dropped
    /// call); true when it was still unanswered, so the peer can be told
    /// to cancel it.
    pub fn forget(&self, id: i64) -> bool {
        self.state().waiting.remove(&id).is_some()
    }

    /// The peer is gone: every waiter gets `reason`, and so does every
    /// later [`Pending::register`]. The first reason stays.
    pub fn close(&self, reason: impl Into<String>) {
        let mut state = self.state();
        let closed = state
            .closed
            .get_or_insert_with(|| Closed(reason.into()))
            .clone();
        for (_, waiter) in state.waiting.drain() {
            let _ = waiter.send(Err(closed.clone()));
        }
    }

    /// Why the peer is gone, once it is.
    pub fn closed(&self) -> Option<Closed> {
        self.state().closed.clone()
    }

    /// How many requests wait.
    pub fn len(&self) -> usize {
        self.state().waiting.len()
    }

    /// Whether none waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The answer to one registered request, or why it will not come.
pub struct Reply<T>(oneshot::Receiver<Result<T, Closed>>);

impl<T> Future for Reply<T> {
    type Output = Result<T, Closed>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.0).poll(cx).map(|answer| {
            answer.unwrap_or_else(|_| Err(Closed("the pending map was dropped".into())))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn answers_reach_their_waiters_in_any_order() {
        let pending = Pending::<&str>::default();
        let one = pending.register(1).unwrap();
        let two = pending.register(2).unwrap();
        let three = pending.register(3).unwrap();
        assert!(pending.resolve(3, "c"));
        assert!(pending.resolve(1, "a"));
        assert!(!pending.resolve(1, "again"), "an id is answered once");
        assert!(!pending.resolve(9, "stranger"));
        assert_eq!(three.await, Ok("c"));
        assert_eq!(one.await, Ok("a"));
        assert!(pending.resolve(2, "b"));
        assert_eq!(two.await, Ok("b"));
        assert!(pending.is_empty());
    }

    #[tokio::test]
    async fn a_forgotten_request_is_not_answered() {
        let pending = Pending::<u8>::default();
        let reply = pending.register(7).unwrap();
        assert!(
            pending.forget(7),
            "still unanswered: the peer is told to cancel"
        );
        assert!(!pending.forget(7));
        assert!(!pending.resolve(7, 1), "a late answer goes nowhere");
        drop(reply);
        let reply = pending.register(8).unwrap();
        drop(reply);
        assert!(!pending.resolve(8, 1), "its caller dropped the reply");
    }

    #[tokio::test]
    async fn the_peer_going_fails_every_waiter_and_later_requests() {
        let pending = Pending::<u8>::default();
        let waiters: Vec<_> = (0..3).map(|id| pending.register(id).unwrap()).collect();
        pending.close("the debug adapter exited with code 1");
        pending.close("a later reason");
        for waiter in waiters {
            assert_eq!(
                waiter.await,
                Err(Closed("the debug adapter exited with code 1".into()))
            );
        }
        assert_eq!(
            pending.register(4).err(),
            Some(Closed("the debug adapter exited with code 1".into()))
        );
        assert!(pending.closed().is_some() && pending.is_empty());
    }
}
