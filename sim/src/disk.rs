//! Storage durability on the database node. With `Synced` every committed
//! operation survives a crash. With `WriteBack` only the state as of the
//! last sync does: a crash loses what was acknowledged since, which is how
//! a store with write-back caching breaks exactly-once.

use crate::config::Durability;
use crate::msg::StoreOp;
use crate::node::{sleep_ms, Node};
use crate::world::World;
use idemsim_model::history::Fault;
use idemsim_model::{Event, NodeId, RefStore, Scope, SimTime};
use std::collections::BTreeMap;
use std::rc::Rc;

/// What the last sync made durable.
pub(crate) struct Synced {
    state: RefStore,
    records: BTreeMap<Scope, (SimTime, bool)>,
}

impl World {
    /// Counts an operation that changes state, for the lost-writes report.
    pub(crate) fn note_write(&mut self, op: &StoreOp) {
        let writes =
            !matches!(op, StoreOp::Read { .. } | StoreOp::StaleInProgress { .. } | StoreOp::OutboxPending { .. });
        if writes && self.mem.is_some() {
            self.unsynced_ops += 1;
        }
    }

    /// Makes the current state durable.
    pub(crate) fn sync_storage(&mut self) {
        if let Some(mem) = &self.mem {
            self.synced = Some(Synced { state: mem.snapshot(), records: self.records.clone() });
            self.unsynced_ops = 0;
        }
    }

    /// A database crash under write-back caching: back to the last sync.
    pub(crate) fn lose_unsynced_writes(&mut self) {
        let (Some(mem), Some(synced)) = (&self.mem, &self.synced) else { return };
        if self.unsynced_ops == 0 {
            return;
        }
        mem.restore(synced.state.clone());
        self.records = synced.records.clone();
        let count = self.unsynced_ops;
        self.unsynced_ops = 0;
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
