//! The seeded workload: which operations the clients start, and when.

use crate::config::{Mix, SimConfig};
use crate::rng::{between, SimRng};
use idemsim_model::{Bytes, CallerId, IdempotencyKey, OpId, Request, Text};
use rand::Rng;
use serde::{Deserialize, Serialize};

/// One logical operation: a request that a client sends and retries.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Operation {
    /// Its id.
    pub op: OpId,
    /// The client that sends it.
    pub client: u32,
    /// When the first send happens (ms into the run).
    pub start_ms: u64,
    /// What kind of operation it is.
    pub kind: OpKind,
    /// The request, sent unchanged on every try.
    pub request: Request,
    /// The server each send goes to, in order (`servers[0]` for the first
    /// try); a send past the end of the list goes to a drawn server. Drawn
    /// workloads leave it empty; a shrunk file pins it, so that dropping
    /// servers keeps every send where it went.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub servers: Vec<u32>,
}

/// The kinds of operation of [`Mix`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OpKind {
    /// A fresh keyed create.
    Create,
    /// The same request as an earlier operation, from another client.
    ConcurrentDuplicate,
    /// An earlier operation's key with another body.
    Mismatch,
    /// No key.
    MissingKey,
    /// A body that fails validation.
    Invalid,
    /// The corrected body after an `Invalid` one, same key.
    Fixed,
    /// An earlier operation's key string, for another caller.
    TenantCollision,
    /// An earlier operation's key and body, to another endpoint.
    OtherEndpoint,
    /// An earlier operation again, late inside its expiry window.
    LateRetry,
    /// An earlier operation again, after its expiry window.
    AfterWindow,
}

const PATHS: [&str; 3] = ["/orders", "/charges", "/checkout"];

/// Draws the workload of a run.
pub fn draw(config: &SimConfig, rng: &mut SimRng) -> Vec<Operation> {
    let w = &config.workload;
    let texts = Texts {
        post: "POST".into(),
        paths: PATHS.map(Text::from),
        callers: config.topology.callers.iter().map(|c| Text::from(c.as_str())).collect(),
    };
    let capacity = w.requests as usize + 1;
    let mut gen = Gen { config, rng, texts, ops: Vec::with_capacity(capacity), creates: Vec::with_capacity(capacity) };
    while gen.ops.len() < w.requests as usize {
        let start_ms = between(gen.rng, 0, w.spread_ms);
        let kind = pick_kind(&w.mix, gen.rng);
        gen.push_kind(kind, start_ms);
    }
    gen.ops.truncate(w.requests as usize);
    by_start(gen.ops)
}

/// `ops` by start time, then id. Operation ids are unique, so no two keys
/// tie: an unstable sort gives the stable sort's order. The keys are
/// sorted, not the operations (large values, moved many times by a sort).
fn by_start(ops: Vec<Operation>) -> Vec<Operation> {
    let mut order: Vec<(u64, OpId, usize)> = ops.iter().enumerate().map(|(i, o)| (o.start_ms, o.op, i)).collect();
    order.sort_unstable();
    let mut slots: Vec<Option<Operation>> = ops.into_iter().map(Some).collect();
    order.into_iter().map(|(_, _, i)| slots[i].take().expect("each index once")).collect()
}

fn pick_kind(mix: &Mix, rng: &mut SimRng) -> (OpKind, usize) {
    let weighted = [
        (mix.orders, OpKind::Create, 0),
        (mix.charges, OpKind::Create, 1),
        (mix.checkout, OpKind::Create, 2),
        (mix.concurrent_duplicate, OpKind::ConcurrentDuplicate, 0),
        (mix.mismatch, OpKind::Mismatch, 0),
        (mix.missing_key, OpKind::MissingKey, 0),
        (mix.invalid_then_fixed, OpKind::Invalid, 0),
        (mix.tenant_collision, OpKind::TenantCollision, 0),
        (mix.other_endpoint, OpKind::OtherEndpoint, 0),
        (mix.late_retry, OpKind::LateRetry, 0),
        (mix.after_window, OpKind::AfterWindow, 0),
    ];
    let total: u32 = weighted.iter().map(|w| w.0).sum();
    let mut pick = rng.gen_range(0..total);
    for (weight, kind, path) in weighted {
        if pick < weight {
            return (kind, path);
        }
        pick -= weight;
    }
    unreachable!("pick < total")
}

struct Gen<'a> {
    config: &'a SimConfig,
    rng: &'a mut SimRng,
    /// The method, paths and callers, made once and shared by every request.
    texts: Texts,
    ops: Vec<Operation>,
    /// Indices of `Create` operations, which the derived kinds refer to.
    creates: Vec<usize>,
}

struct Texts {
    post: Text,
    paths: [Text; 3],
    callers: Vec<Text>,
}

impl Gen<'_> {
    fn push_kind(&mut self, (kind, path): (OpKind, usize), start_ms: u64) {
        let base = (!self.creates.is_empty()).then(|| self.creates[self.rng.gen_range(0..self.creates.len())]);
        match (kind, base) {
            (OpKind::Create | OpKind::Fixed, _) | (_, None) => self.create(path, start_ms),
            (OpKind::ConcurrentDuplicate, Some(b)) => {
                let base = self.ops[b].clone();
                let client = self.other_client(base.client);
                let start = base.start_ms + between(self.rng, 0, 20);
                self.push(client, start, OpKind::ConcurrentDuplicate, base.request);
            }
            (OpKind::Mismatch, Some(b)) => {
                let base = self.ops[b].clone();
                let request = Request { body: self.body(base.ops_amount() + 1), ..base.request };
                let start = base.start_ms + between(self.rng, 0, 2_000);
                self.push(base.client, start, OpKind::Mismatch, request);
            }
            (OpKind::MissingKey, Some(_)) => {
                let client = self.client();
                let request = Request { key: None, ..self.request(client, 0) };
                self.push(client, start_ms, OpKind::MissingKey, request);
            }
            (OpKind::Invalid, Some(_)) => {
                let client = self.client();
                let valid = self.request(client, 0);
                let invalid = Request { body: Bytes::text(r#"{"amount":-5}"#), ..valid.clone() };
                self.push(client, start_ms, OpKind::Invalid, invalid);
                let later = start_ms + between(self.rng, 500, 3_000);
                self.push(client, later, OpKind::Fixed, valid);
            }
            (OpKind::OtherEndpoint, Some(b)) => {
                let base = self.ops[b].clone();
                let at = PATHS.iter().position(|p| base.request.path == *p).unwrap_or(0);
                let path = self.texts.paths[(at + self.rng.gen_range(1..PATHS.len())) % PATHS.len()].clone();
                let start = base.start_ms + between(self.rng, 0, 2_000);
                self.push(base.client, start, OpKind::OtherEndpoint, Request { path, ..base.request });
            }
            (OpKind::LateRetry, Some(b)) => {
                let base = self.ops[b].clone();
                let window = self.config.protocol.expiry_window_ms;
                let start = base.start_ms + between(self.rng, window * 6 / 10, window * 85 / 100);
                self.push(base.client, start, OpKind::LateRetry, base.request);
            }
            (OpKind::AfterWindow, Some(b)) => {
                let base = self.ops[b].clone();
                let (window, sweep) = (self.config.protocol.expiry_window_ms, self.config.protocol.sweep_interval_ms);
                let start = base.start_ms + window + between(self.rng, 2 * sweep, 4 * sweep);
                self.push(base.client, start, OpKind::AfterWindow, base.request);
            }
            (OpKind::TenantCollision, Some(b)) => {
                let base = self.ops[b].clone();
                let callers = &self.texts.callers;
                let at = callers.iter().position(|c| *c == base.request.caller.0).unwrap_or(0);
                let caller = CallerId(callers[(at + 1) % callers.len()].clone());
                let start = base.start_ms + between(self.rng, 0, 500);
                let client = self.other_client(base.client);
                self.push(client, start, OpKind::TenantCollision, Request { caller, ..base.request });
            }
        }
    }

    fn create(&mut self, path: usize, start_ms: u64) {
        let client = self.client();
        let request = self.request(client, path);
        self.creates.push(self.ops.len());
        self.push(client, start_ms, OpKind::Create, request);
    }

    fn push(&mut self, client: u32, start_ms: u64, kind: OpKind, request: Request) {
        let op = OpId(self.ops.len() as u32 + 1);
        self.ops.push(Operation { op, client, start_ms, kind, request, servers: Vec::new() });
    }

    fn client(&mut self) -> u32 {
        self.rng.gen_range(0..self.config.topology.clients)
    }

    fn other_client(&mut self, not: u32) -> u32 {
        let n = self.config.topology.clients;
        if n == 1 {
            return not;
        }
        (not + self.rng.gen_range(1..n)) % n
    }

    fn request(&mut self, client: u32, path: usize) -> Request {
        let callers = &self.texts.callers;
        let caller = CallerId(callers[client as usize % callers.len()].clone());
        let key = IdempotencyKey(key_text(self.rng.gen::<u32>(), self.ops.len() + 1).into());
        let amount = between(self.rng, 1, 999);
        let (method, path) = (self.texts.post.clone(), self.texts.paths[path].clone());
        Request { caller, key: Some(key), method, path, body: self.body(amount) }
    }

    fn body(&mut self, amount: u64) -> Bytes {
        let mut body = Vec::with_capacity(40);
        body.extend_from_slice(br#"{"amount":"#);
        body.extend_from_slice(amount.to_string().as_bytes());
        body.extend_from_slice(br#","currency":"eur"}"#);
        Bytes(body)
    }
}

/// A drawn key: eight hex digits of `draw`, a dash, the operation's number
/// (`format!("{draw:08x}-{n}")`, without the formatting machinery).
fn key_text(draw: u32, n: usize) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut key = String::with_capacity(16);
    for shift in (0..8).rev() {
        key.push(char::from(HEX[(draw >> (shift * 4)) as usize & 0xf]));
    }
    key.push('-');
    key.push_str(&n.to_string());
    key
}

impl Operation {
    fn ops_amount(&self) -> u64 {
        amount_of(&self.request).unwrap_or(1).max(1) as u64
    }
}

pub use crate::protocol::execution::amount_of;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{stream, Stream};

    #[test]
    fn keys_are_eight_hex_digits_and_the_operation_number() {
        for (draw, n) in [(0, 1), (0xdead_beef, 42), (u32::MAX, 1_000_000), (0x0a0b_0c0d, 7)] {
            assert_eq!(key_text(draw, n), format!("{draw:08x}-{n}"));
        }
    }

    #[test]
    fn the_workload_is_seeded_sized_and_sorted() {
        let config = SimConfig::default();
        let a = draw(&config, &mut stream(5, Stream::Workload));
        assert_eq!(a, draw(&config, &mut stream(5, Stream::Workload)));
        assert_ne!(a, draw(&config, &mut stream(6, Stream::Workload)));
        assert_eq!(a.len(), 50);
        assert!(a.windows(2).all(|w| w[0].start_ms <= w[1].start_ms));
    }

    #[test]
    fn derived_kinds_refer_to_earlier_creates() {
        let mut config = SimConfig::default();
        config.workload.requests = 400;
        let ops = draw(&config, &mut stream(9, Stream::Workload));
        let kinds: std::collections::BTreeSet<_> = ops.iter().map(|o| format!("{:?}", o.kind)).collect();
        assert_eq!(kinds.len(), 7, "{kinds:?}");
        for dup in ops.iter().filter(|o| o.kind == OpKind::ConcurrentDuplicate) {
            assert!(ops.iter().any(|o| o.kind == OpKind::Create && o.request == dup.request && o.client != dup.client));
        }
        for t in ops.iter().filter(|o| o.kind == OpKind::TenantCollision) {
            assert!(ops.iter().any(|o| o.request.key == t.request.key && o.request.caller != t.request.caller));
        }
        assert!(ops.iter().filter(|o| o.kind == OpKind::MissingKey).all(|o| o.request.key.is_none()));
    }
}
