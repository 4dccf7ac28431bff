//! The world's node table: a slot per node, found by its id without a
//! search (the network looks up the sender and the receiver of every
//! message), walked in `NodeId` order like the map it replaces.

use crate::runtime::world::NodeState;
use idemsim_model::NodeId;

/// Node states by id; see the module doc.
#[derive(Default)]
pub(crate) struct NodeTable {
    clients: Vec<Option<NodeState>>,
    servers: Vec<Option<NodeState>>,
    /// `Db` to `World`, in `NodeId` order.
    fixed: [Option<NodeState>; FIXED],
}

const FIXED: usize = 7;

impl NodeTable {
    /// The state of `id`, if the node was ever registered.
    pub fn get(&self, id: &NodeId) -> Option<&NodeState> {
        match *id {
            NodeId::Client(i) => self.clients.get(i as usize)?.as_ref(),
            NodeId::Server(i) => self.servers.get(i as usize)?.as_ref(),
            fixed => self.fixed[fixed_slot(fixed)].as_ref(),
        }
    }

    /// The state of `id`, registered (empty) first if need be.
    pub fn entry(&mut self, id: NodeId) -> &mut NodeState {
        let slot = match id {
            NodeId::Client(i) => grown(&mut self.clients, i),
            NodeId::Server(i) => grown(&mut self.servers, i),
            fixed => &mut self.fixed[fixed_slot(fixed)],
        };
        slot.get_or_insert_with(NodeState::default)
    }

    /// Every registered node, in `NodeId` order.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (NodeId, &mut NodeState)> {
        let clients = self.clients.iter_mut().enumerate().map(|(i, n)| (NodeId::Client(i as u32), n));
        let servers = self.servers.iter_mut().enumerate().map(|(i, n)| (NodeId::Server(i as u32), n));
        let fixed = self.fixed.iter_mut().enumerate().map(|(i, n)| (FIXED_IDS[i], n));
        clients.chain(servers).chain(fixed).filter_map(|(id, n)| Some((id, n.as_mut()?)))
    }

    /// Forgets every node.
    pub fn clear(&mut self) {
        *self = NodeTable::default();
    }
}

const FIXED_IDS: [NodeId; FIXED] = [
    NodeId::Db,
    NodeId::Downstream,
    NodeId::Reconciler,
    NodeId::Sweeper,
    NodeId::Relay,
    NodeId::Consumer,
    NodeId::World,
];

fn fixed_slot(id: NodeId) -> usize {
    let slot = FIXED_IDS.iter().position(|f| *f == id);
    slot.expect("clients and servers have slots of their own")
}

fn grown(slots: &mut Vec<Option<NodeState>>, i: u32) -> &mut Option<NodeState> {
    let i = i as usize;
    if slots.len() <= i {
        slots.resize_with(i + 1, || None);
    }
    &mut slots[i]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walks_in_node_id_order_like_a_sorted_map() {
        let mut table = NodeTable::default();
        let ids = [NodeId::World, NodeId::Server(1), NodeId::Db, NodeId::Client(2), NodeId::Relay, NodeId::Client(0)];
        for id in ids {
            table.entry(id).up = true;
        }
        let mut sorted = ids.to_vec();
        sorted.sort();
        assert_eq!(table.iter_mut().map(|(id, _)| id).collect::<Vec<_>>(), sorted);
        assert!(table.get(&NodeId::Client(1)).is_none(), "a slot grown past is not a node");
        assert!(table.get(&NodeId::Server(0)).is_none());
        assert!(table.get(&NodeId::Server(1)).is_some_and(|n| n.up));
        assert!(table.get(&NodeId::Consumer).is_none());
    }
}
