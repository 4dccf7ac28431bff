//! A node's mailbox: an unbounded queue of messages from one sender (the
//! world) to one receiver (the node's receive loop).
//!
//! Every message of a run passes through one, so it is kept to a vector
//! queue and a waker behind one lock: no allocation per message, unlike a
//! general channel's linked nodes. It wakes its receiver exactly when
//! `futures`' unbounded channel would (on a send after the receiver found
//! the queue empty), so swapping one for the other changes no schedule.

use parking_lot::Mutex;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

/// A new mailbox: the sending side (kept by the world) and the receiving
/// side (the node's receive loop).
pub(crate) fn mailbox<T>() -> (Sender<T>, Receiver<T>) {
    let shared = Arc::new(Mutex::new(Shared { queue: VecDeque::new(), waker: None, sending: true, receiving: true }));
    (Sender(shared.clone()), Receiver(shared))
}

struct Shared<T> {
    queue: VecDeque<T>,
    /// The receiver's waker, while it waits on an empty queue.
    waker: Option<Waker>,
    sending: bool,
    receiving: bool,
}

/// Puts messages into the mailbox.
pub(crate) struct Sender<T>(Arc<Mutex<Shared<T>>>);

/// Takes messages out, in order; `None` once the queue is empty and the
/// sender is gone.
pub(crate) struct Receiver<T>(Arc<Mutex<Shared<T>>>);

impl<T> Sender<T> {
    /// Queues `msg`, or hands it back when the receiver is gone.
    pub fn send(&self, msg: T) -> Result<(), T> {
        let waker = {
            let mut shared = self.0.lock();
            if !shared.receiving {
                return Err(msg);
            }
            shared.queue.push_back(msg);
            shared.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
        Ok(())
    }

    /// The receiver waits on an empty queue: what is sent next is the
    /// next thing it takes.
    pub fn idle(&self) -> bool {
        let shared = self.0.lock();
        shared.queue.is_empty() && shared.waker.is_some()
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        let waker = {
            let mut shared = self.0.lock();
            shared.sending = false;
            shared.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

impl<T> Receiver<T> {
    /// The next message, waiting for one.
    pub fn recv(&mut self) -> Recv<'_, T> {
        Recv(self)
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        let mut shared = self.0.lock();
        shared.receiving = false;
        // Queued messages go with the receiver, as a channel's would.
        shared.queue.clear();
        shared.waker = None;
    }
}

/// The future of [`Receiver::recv`].
pub(crate) struct Recv<'a, T>(&'a mut Receiver<T>);

impl<T> Future for Recv<'_, T> {
    type Output = Option<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let mut shared = self.0 .0.lock();
        if let Some(msg) = shared.queue.pop_front() {
            return Poll::Ready(Some(msg));
        }
        if !shared.sending {
            return Poll::Ready(None);
        }
        match &shared.waker {
            Some(waker) if waker.will_wake(cx.waker()) => {}
            _ => shared.waker = Some(cx.waker().clone()),
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Wake;

    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn poll<T>(rx: &mut Receiver<T>, waker: &Waker) -> Poll<Option<T>> {
        Pin::new(&mut rx.recv()).poll(&mut Context::from_waker(waker))
    }

    #[test]
    fn messages_come_out_in_order_and_a_send_wakes_a_waiting_receiver_once() {
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(count.clone());
        let (tx, mut rx) = mailbox();
        assert_eq!(poll(&mut rx, &waker), Poll::Pending);
        tx.send(1).unwrap();
        tx.send(2).unwrap();
        assert_eq!(count.0.load(Ordering::SeqCst), 1, "only the first send finds the receiver waiting");
        assert_eq!(poll(&mut rx, &waker), Poll::Ready(Some(1)));
        assert_eq!(poll(&mut rx, &waker), Poll::Ready(Some(2)));
        assert_eq!(poll(&mut rx, &waker), Poll::Pending);
        drop(tx);
        assert_eq!(count.0.load(Ordering::SeqCst), 2, "the sender going wakes it");
        assert_eq!(poll(&mut rx, &waker), Poll::Ready(None));
    }

    #[test]
    fn idle_only_while_the_receiver_waits_on_an_empty_queue() {
        let waker = Waker::from(Arc::new(Count(AtomicUsize::new(0))));
        let (tx, mut rx) = mailbox();
        assert!(!tx.idle(), "the receiver has not looked yet");
        assert_eq!(poll(&mut rx, &waker), Poll::Pending);
        assert!(tx.idle());
        tx.send(1).unwrap();
        assert!(!tx.idle(), "a message waits");
        assert_eq!(poll(&mut rx, &waker), Poll::Ready(Some(1)));
        assert!(!tx.idle(), "the receiver is busy with it");
        assert_eq!(poll(&mut rx, &waker), Poll::Pending);
        assert!(tx.idle());
    }

    #[test]
    fn a_send_to_a_dropped_receiver_comes_back() {
        let (tx, rx) = mailbox();
        drop(rx);
        assert_eq!(tx.send(7), Err(7));
    }

    #[test]
    fn messages_queued_before_the_sender_goes_are_still_received() {
        let waker = Waker::from(Arc::new(Count(AtomicUsize::new(0))));
        let (tx, mut rx) = mailbox();
        tx.send("a").unwrap();
        drop(tx);
        assert_eq!(poll(&mut rx, &waker), Poll::Ready(Some("a")));
        assert_eq!(poll(&mut rx, &waker), Poll::Ready(None));
    }
}
