//! Answers that tasks wait for (a call's reply, a request's response),
//! kept in the world's tables instead of in a channel per wait.
//!
//! A waiting task registers its key, and polls the world's table for its
//! answer; whoever answers puts the value in the table and wakes the task.
//! The wake-ups are exactly a one-shot channel's, whose sender the world
//! would keep: an answer wakes the waiter; a deadline, a crash or the end
//! of the run that stops the wait wakes it with nothing; a waiter that is
//! gone (its task dropped the wait) is woken by nothing. Without the
//! channel, a wait allocates nothing and takes no lock of its own.

use crate::runtime::world::{Sim, World};
use idemsim_model::NodeId;
use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::future::Future;
use std::hash::{BuildHasher, Hash};
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

/// Where one wait stands.
enum Slot<T> {
    /// Not answered yet; the waiting task's waker, once it has polled.
    Waiting(Option<Waker>),
    /// Not answered, and its task dropped the wait: an answer is thrown
    /// away, and nothing is woken. (It still counts as waiting, as the
    /// channel's sender would still be held, until then.)
    Abandoned,
    /// Answered; the value waits for its task to take it.
    Answered(T),
}

/// A table of waits by key, each owned by a node.
pub(crate) struct Answers<K, T, S> {
    table: HashMap<K, (NodeId, Slot<T>), S>,
}

impl<K, T, S: Default> Default for Answers<K, T, S> {
    fn default() -> Self {
        Answers { table: HashMap::default() }
    }
}

impl<K: Copy + Ord + Hash, T, S: BuildHasher> Answers<K, T, S> {
    /// `owner` waits for the answer keyed `key`. A wait already under the
    /// key (a protocol that sends one request id again after giving up on
    /// it) is replaced, and its task woken with nothing, as a replaced
    /// channel's sender would wake it.
    pub fn wait(&mut self, key: K, owner: NodeId) {
        if let Some((_, Slot::Waiting(Some(waker)))) = self.table.insert(key, (owner, Slot::Waiting(None))) {
            waker.wake();
        }
    }

    /// Some wait, or an answer not yet taken, holds `key`.
    pub fn holds(&self, key: &K) -> bool {
        self.table.contains_key(key)
    }

    /// The wait keyed `key` still waits for its answer.
    pub fn waits(&self, key: &K) -> bool {
        matches!(self.table.get(key), Some((_, Slot::Waiting(_) | Slot::Abandoned)))
    }

    /// Answers the wait keyed `key`, if it still waits (a second answer,
    /// a duplicate, is dropped).
    pub fn answer(&mut self, key: K, value: T) {
        let Some((_, slot)) = self.table.get_mut(&key) else { return };
        match slot {
            Slot::Waiting(waker) => {
                let waker = waker.take();
                *slot = Slot::Answered(value);
                if let Some(waker) = waker {
                    waker.wake();
                }
            }
            Slot::Abandoned => {
                self.table.remove(&key);
            }
            Slot::Answered(_) => {}
        }
    }

    /// Stops the wait keyed `key` with no answer (its deadline passed),
    /// if it still waits.
    pub fn expire(&mut self, key: K) {
        if self.waits(&key) {
            self.stop(key);
        }
    }

    /// Stops every wait that `goes` picks out, with no answer, in key
    /// order: the order of their wake-ups is part of the run. Answers not
    /// yet taken go too (their tasks are gone with their node, or the run).
    pub fn stop_all(&mut self, goes: impl Fn(&K, NodeId) -> bool) {
        let mut going: Vec<K> = self.table.iter().filter(|(k, (owner, _))| goes(k, *owner)).map(|(k, _)| *k).collect();
        going.sort_unstable();
        for key in going {
            self.stop(key);
        }
    }

    fn stop(&mut self, key: K) {
        if let Some((_, Slot::Waiting(Some(waker)))) = self.table.remove(&key) {
            waker.wake();
        }
    }

    /// The waiting task's poll: the answer, `None` if the wait was stopped,
    /// or pending (with the task's waker kept).
    fn poll(&mut self, key: K, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let Entry::Occupied(mut entry) = self.table.entry(key) else { return Poll::Ready(None) };
        match &mut entry.get_mut().1 {
            Slot::Answered(_) => {}
            Slot::Waiting(Some(waker)) if waker.will_wake(cx.waker()) => return Poll::Pending,
            slot => {
                *slot = Slot::Waiting(Some(cx.waker().clone()));
                return Poll::Pending;
            }
        }
        match entry.remove().1 {
            Slot::Answered(value) => Poll::Ready(Some(value)),
            _ => unreachable!("the slot was answered"),
        }
    }

    /// The waiting task dropped the wait before its end.
    fn abandon(&mut self, key: K) {
        match self.table.get_mut(&key) {
            Some((_, slot @ Slot::Waiting(_))) => *slot = Slot::Abandoned,
            Some((_, Slot::Answered(_))) => {
                self.table.remove(&key);
            }
            _ => {}
        }
    }
}

/// The table of a world that a wait is in.
pub(crate) type TableOf<K, T, S> = fn(&mut World) -> &mut Answers<K, T, S>;

/// A task's wait for the answer keyed `key` in the world's table `table`:
/// `Some(answer)`, or `None` when the wait was stopped.
pub(crate) struct Awaiting<K: Copy + Ord + Hash, T, S: BuildHasher> {
    sim: Sim,
    table: TableOf<K, T, S>,
    key: K,
    done: bool,
}

impl<K: Copy + Ord + Hash, T, S: BuildHasher> Awaiting<K, T, S> {
    /// The wait for `key`, registered in `table` already.
    pub fn new(sim: Sim, table: TableOf<K, T, S>, key: K) -> Self {
        Awaiting { sim, table, key, done: false }
    }
}

impl<K: Copy + Ord + Hash + Unpin, T, S: BuildHasher> Future for Awaiting<K, T, S> {
    type Output = Option<T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let (table, key) = (self.table, self.key);
        let answer = self.sim.with(|w| table(w).poll(key, cx));
        self.done = answer.is_ready();
        answer
    }
}

impl<K: Copy + Ord + Hash, T, S: BuildHasher> Drop for Awaiting<K, T, S> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        // A task is dropped by the executor (its node crashed, the run
        // ended) or by its own code, never while the world is locked; if
        // it were, waiting for the lock would hang the run.
        let (table, key) = (self.table, self.key);
        let abandoned = self.sim.try_with(|w| table(w).abandon(key));
        debug_assert!(abandoned.is_some(), "a wait dropped while the world is locked");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::Wake;

    type Table = Answers<u64, &'static str, std::hash::RandomState>;

    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn waker() -> (Arc<Count>, Waker) {
        let count = Arc::new(Count(AtomicUsize::new(0)));
        (count.clone(), Waker::from(count))
    }

    /// Registers a wait for each key, owned by the database, and polls
    /// each once (pending) with `cx`'s waker.
    fn waiting(t: &mut Table, keys: &[u64], cx: &mut Context<'_>) {
        for &key in keys {
            t.wait(key, NodeId::Db);
            assert!(t.poll(key, cx).is_pending());
        }
    }

    #[test]
    fn an_answer_wakes_its_waiter_once_and_is_taken_once() {
        let (count, waker) = waker();
        let mut cx = Context::from_waker(&waker);
        let mut t = Table::default();
        waiting(&mut t, &[1], &mut cx);
        assert!(t.poll(1, &mut cx).is_pending(), "a second poll keeps the same waker");
        t.answer(1, "first");
        t.answer(1, "duplicate");
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        assert!(!t.waits(&1), "answered");
        assert!(t.holds(&1), "the answer waits to be taken");
        assert_eq!(t.poll(1, &mut cx), Poll::Ready(Some("first")));
        assert!(!t.holds(&1));
        assert_eq!(t.poll(1, &mut cx), Poll::Ready(None));
    }

    #[test]
    fn an_expired_wait_wakes_with_nothing_and_an_answered_one_does_not_expire() {
        let (count, waker) = waker();
        let mut cx = Context::from_waker(&waker);
        let mut t = Table::default();
        waiting(&mut t, &[1, 2], &mut cx);
        t.answer(2, "in time");
        t.expire(1);
        t.expire(2);
        assert_eq!(count.0.load(Ordering::SeqCst), 2, "one wake for the answer, one for the expiry");
        assert_eq!(t.poll(1, &mut cx), Poll::Ready(None));
        assert_eq!(t.poll(2, &mut cx), Poll::Ready(Some("in time")));
    }

    #[test]
    fn an_abandoned_wait_still_waits_but_wakes_nobody() {
        let (count, waker) = waker();
        let mut cx = Context::from_waker(&waker);
        let mut t = Table::default();
        waiting(&mut t, &[1, 2], &mut cx);
        t.abandon(1);
        t.abandon(2);
        assert!(t.waits(&1), "its deadline still counts, as a held sender's would");
        t.answer(1, "late");
        assert!(!t.holds(&1), "an answer to nobody is dropped");
        t.expire(2);
        assert!(!t.holds(&2));
        assert_eq!(count.0.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn a_second_wait_on_a_key_replaces_the_first() {
        let (count, waker) = waker();
        let mut cx = Context::from_waker(&waker);
        let mut t = Table::default();
        waiting(&mut t, &[1], &mut cx);
        t.abandon(1);
        t.wait(1, NodeId::Db);
        assert_eq!(count.0.load(Ordering::SeqCst), 0, "an abandoned wait wakes nobody");
        assert!(t.poll(1, &mut cx).is_pending());
        t.wait(1, NodeId::Db);
        assert_eq!(count.0.load(Ordering::SeqCst), 1, "a live wait replaced is woken");
        t.answer(1, "for the second");
        assert_eq!(t.poll(1, &mut cx), Poll::Ready(Some("for the second")));
    }

    #[test]
    fn stopping_many_wakes_in_key_order_and_only_the_chosen() {
        let order = Arc::new(std::sync::Mutex::new(Vec::new()));
        struct Log(u64, Arc<std::sync::Mutex<Vec<u64>>>);
        impl Wake for Log {
            fn wake(self: Arc<Self>) {
                self.1.lock().unwrap().push(self.0);
            }
        }
        let mut t = Table::default();
        for key in [5, 3, 9, 1, 7] {
            let owner = if key == 9 { NodeId::Relay } else { NodeId::Db };
            t.wait(key, owner);
            let waker = Waker::from(Arc::new(Log(key, order.clone())));
            assert!(t.poll(key, &mut Context::from_waker(&waker)).is_pending());
        }
        t.answer(7, "taken later");
        t.stop_all(|_, owner| owner == NodeId::Db);
        assert_eq!(*order.lock().unwrap(), vec![7, 1, 3, 5], "the answer's wake, then the stops in key order");
        assert!(t.waits(&9) && !t.holds(&7));
    }
}
