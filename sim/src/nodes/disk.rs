//! Storage durability on the database node. With `Synced` every committed
//! operation survives a crash. With `WriteBack` only the state as of the
//! last sync does: a crash loses what was acknowledged since, which is how
//! a store with write-back caching breaks exactly-once. Write-back needs a
//! store that opts in to [`CrashDurability`](idemsim_store::CrashDurability);
//! for any other store the fault is left out and the run says so.

use crate::config::Durability;
use crate::runtime::node::{sleep_ms, Node};
use crate::runtime::world::World;
use idemsim_model::history::Fault;
use idemsim_model::{Event, NodeId};
use std::rc::Rc;

/// The database's write-back cache, in a run that has one (the store
/// opted in and the config asks for it).
///
/// **Invariant:** it counts the writes since the last sync and nothing
/// else; before the first sync there is nothing to go back to, so a crash
/// then loses nothing.
#[derive(Debug, Default)]
pub(crate) struct WriteBack {
    synced: bool,
    unsynced_ops: u32,
}

impl WriteBack {
    /// The writes a crash now would lose.
    fn at_risk(&self) -> u32 {
        if self.synced {
            self.unsynced_ops
        } else {
            0
        }
    }
}

impl World {
    /// Counts an operation that changes state, for the lost-writes report.
    pub(crate) fn note_write(&mut self) {
        if let Some(cache) = &mut self.write_back {
            cache.unsynced_ops += 1;
        }
    }

    /// Makes the current state durable.
    pub(crate) fn sync_storage(&mut self) {
        if self.write_back.is_none() {
            return;
        }
        let store = self.store.clone();
        match store.durability().map(|d| d.sync()) {
            Some(Ok(())) => self.write_back = Some(WriteBack { synced: true, unsynced_ops: 0 }),
            Some(Err(e)) => self.store_broke(format!("store '{}' failed to sync: {e}", store.name())),
            None => {}
        }
    }

    /// A database crash under write-back caching: back to the last sync.
    pub(crate) fn lose_unsynced_writes(&mut self) {
        let count = self.write_back.as_ref().map_or(0, WriteBack::at_risk);
        if count == 0 {
            return;
        }
        let store = self.store.clone();
        if let Some(Err(e)) = store.durability().map(|d| d.lose_unsynced()) {
            return self.store_broke(format!("store '{}' failed to roll back to its last sync: {e}", store.name()));
        }
        self.write_back = Some(WriteBack { synced: true, unsynced_ops: 0 });
        self.record(NodeId::Db, Event::Fault(Fault::UnsyncedWritesLost { count }));
    }
}

/// The write-back syncer, run on the database node.
pub(crate) async fn syncer(node: Rc<Node>) {
    let Durability::WriteBack { sync_interval_ms } = node.sim.with(|w| w.config.durability.clone()) else { return };
    node.sim.with(World::sync_storage);
    loop {
        sleep_ms(sync_interval_ms).await;
        node.sim.with(World::sync_storage);
    }
}
