//! The API server node: each delivered request gets a task that runs the
//! protocol core's handler in the simulator's environment and sends the
//! answer back.

use crate::nodes::env::SimEnv;
use crate::runtime::msg::Msg;
use crate::runtime::node::Node;
use idemsim_model::history::Origin;

/// The server's message handler: each request gets its own task.
#[expect(clippy::boxed_local, reason = "a node::Handler: messages travel boxed")]
pub(crate) fn handle(node: &Node, msg: Box<Msg>) {
    let Msg::Request { req, request } = *msg else { return };
    let node = node.clone();
    // Boxed: madsim moves a future several times on its way into a task,
    // and this one holds the request.
    madsim::task::spawn_local(Box::pin(async move {
        let (copy, fingerprint, protocol) = node.sim.with(|w| {
            let protocol = w.protocol.clone();
            let (method, path, body) = protocol.fingerprint_fields(&request);
            let fingerprint = w.servers.fingerprints.of(method, path, body);
            (w.servers.receive(req), fingerprint, protocol)
        });
        let env = SimEnv::new(&node, Origin::Request { req, copy });
        let Some(reply) = crate::protocol::serve(&*protocol, &env, req, copy, &request, fingerprint).await else {
            return;
        };
        let client = node.sim.with(|w| w.clients.of(req));
        node.sim.send(node.id, client, Box::new(Msg::Response { req, reply }));
    }));
}

/// What the servers share: the copies of each request they have received,
/// their key locks, and a memo of request fingerprints.
///
/// **Invariant:** a request's n-th delivery to any server is its copy n;
/// a key lock has one holder, and a process's locks die with it.
pub(crate) struct Servers {
    received: crate::runtime::world::Lookup<idemsim_model::RequestId, u32>,
    locks: std::collections::BTreeMap<KeyLock, idemsim_model::NodeId>,
    /// Fingerprints of the requests received: a pure function's memo,
    /// shared by all servers only to save the hashing.
    pub fingerprints: idemsim_model::FingerprintMemo,
}

/// A key lock of the broken lock-based claims: a process's own (by its
/// node), or the lock service's (`None`), on one record.
pub(crate) type KeyLock = (Option<idemsim_model::NodeId>, idemsim_model::Scope);

impl Servers {
    /// Room for about `requests` deliveries, with this worker's memo.
    pub fn new(requests: usize, fingerprints: idemsim_model::FingerprintMemo) -> Servers {
        let received = crate::runtime::world::Lookup::with_capacity_and_hasher(requests, Default::default());
        Servers { received, locks: Default::default(), fingerprints }
    }

    /// One more delivery of `req`: which copy it is (1 for the first).
    pub fn receive(&mut self, req: idemsim_model::RequestId) -> u32 {
        let copies = self.received.entry(req).or_insert(0);
        *copies += 1;
        *copies
    }

    /// Takes `lock` for `holder`, unless some node holds it.
    pub fn try_lock(&mut self, lock: &KeyLock, holder: idemsim_model::NodeId) -> bool {
        if self.locks.contains_key(lock) {
            return false;
        }
        self.locks.insert(lock.clone(), holder);
        true
    }

    /// Releases `lock`.
    pub fn unlock(&mut self, lock: &KeyLock) {
        self.locks.remove(lock);
    }

    /// `node` crashed: its locks die with it.
    pub fn crashed(&mut self, node: idemsim_model::NodeId) {
        self.locks.retain(|_, holder| *holder != node);
    }
}

impl crate::runtime::world::Sim {
    /// Takes a key lock, waiting in 1 ms steps while another node holds it.
    pub async fn lock_key(&self, lock: KeyLock, holder: idemsim_model::NodeId) {
        loop {
            if self.with(|w| w.servers.try_lock(&lock, holder)) {
                return;
            }
            crate::runtime::node::sleep_ms(1).await;
        }
    }

    /// Releases a key lock.
    pub fn unlock_key(&self, lock: &KeyLock) {
        self.with(|w| w.servers.unlock(lock));
    }
}
