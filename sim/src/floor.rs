//! The floor madsim itself sets for a seed: a runtime, 13 nodes, and
//! `messages` messages, each a spawned task that sleeps a random 1 to 10 ms
//! and hands the message to a receiving task on another node, with none of
//! our code. A seed that carries that many messages cannot cost less on
//! madsim; `idemsim bench` counts both in instructions, and the divan
//! bench `madsim_floor_940_messages` times it.

use futures::StreamExt;
use std::time::Duration;

/// Runs the floor once, on this thread.
pub fn madsim_floor(seed: u64, messages: u64) {
    let rt = madsim::runtime::Runtime::with_seed_and_config(seed, madsim::Config::default());
    rt.block_on(async move {
        let handle = madsim::runtime::Handle::current();
        let mut inboxes = Vec::new();
        for n in 0..13 {
            let (tx, mut rx) = futures::channel::mpsc::unbounded::<u64>();
            handle.create_node().name(format!("n{n}")).build().spawn(async move { while rx.next().await.is_some() {} });
            inboxes.push(tx);
        }
        for i in 0..messages {
            let to = inboxes[(i % 13) as usize].clone();
            let latency_ms = 1 + madsim::rand::random::<u64>() % 10;
            madsim::task::spawn(async move {
                madsim::time::sleep(Duration::from_millis(latency_ms)).await;
                let _ = to.unbounded_send(i);
            });
            if i % 20 == 0 {
                madsim::time::sleep(Duration::from_millis(5)).await;
            }
        }
        madsim::time::sleep(Duration::from_millis(100)).await;
    });
}
