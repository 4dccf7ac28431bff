//! What a concurrent caller asks of a store, step by step: one plan, run
//! by the concurrent kit's callers on a real runtime
//! (`conformance::Concurrent`) and by the simulator's callers under
//! madsim. The random draws come from a function given in, the clock is
//! passed in; [`apply`] runs a call on a store.

use crate::{IdempotencyStore, StoreError};
use idemsim_model::linearizability::{Answer, Call};
use idemsim_model::{
    Attempt, Bytes, Claim, Completion, DownstreamKey, Fingerprint, MessageId, OutboxMessage, RecoveryPoint, Scope,
    SimTime, StoredResponse, Takeover,
};

/// Operations (of all callers) per generation of keys: then every caller
/// moves to fresh keys, so first claims race again and again (a record
/// once made is rarely absent again), and each key's history stays short.
pub const GENERATION_OPS: u64 = 100;

/// The lease every claim and takeover asks for, in the model's clock.
pub const LEASE_MS: u64 = 1_000;

/// One caller's plan: its draws, and the attempt it last saw per key.
pub struct Plan<D> {
    id: u32,
    draw: D,
    keys: usize,
    attempts: Vec<Attempt>,
    generation: u64,
    key: usize,
    n: usize,
}

impl<D: FnMut() -> u64> Plan<D> {
    /// Caller `id`'s plan over `keys` keys at a time, drawing from `draw`.
    pub fn new(id: u32, draw: D, keys: usize) -> Plan<D> {
        let keys = keys.max(1);
        Plan { id, draw, keys, attempts: vec![Attempt(1); keys], generation: 0, key: 0, n: 0 }
    }

    /// The caller's number.
    pub fn caller(&self) -> u32 {
        self.id
    }

    /// How far this step moves the shared clock on: a quarter of the steps
    /// move it 200 to 999 ms, so leases end; the others, not at all.
    pub fn clock_step_ms(&mut self) -> u64 {
        match self.pick(4) {
            0 => 200 + self.pick(800) as u64,
            _ => 0,
        }
    }

    /// The next call, at `now`, when all callers have issued `issued`
    /// operations before it (which picks the generation of keys).
    pub fn next_call(&mut self, now: SimTime, issued: u64) -> Call {
        let generation = issued / GENERATION_OPS;
        if generation != self.generation {
            self.generation = generation;
            self.attempts.fill(Attempt(1));
        }
        self.key = self.pick(self.keys);
        self.n += 1;
        self.call(now)
    }

    /// Forgets what the caller saw (a caller that crashed and came back).
    pub fn forget(&mut self) {
        self.attempts.fill(Attempt(1));
    }

    /// Learns the attempt an answer to the last call shows.
    pub fn learn(&mut self, answer: &Answer) {
        let seen = match answer {
            Answer::Claim(Claim::Owned(a)) | Answer::Takeover(Takeover::Granted(a)) => Some(*a),
            Answer::Claim(Claim::Existing(r)) | Answer::Record(Some(r)) => Some(r.attempt()),
            Answer::Takeover(Takeover::Refused(Some(r))) => Some(r.attempt()),
            _ => None,
        };
        if let Some(a) = seen {
            self.attempts[self.key] = a;
        }
    }

    fn pick(&mut self, n: usize) -> usize {
        ((self.draw)() % n as u64) as usize
    }

    /// The attempt to act as: most often the one last seen for the key, at
    /// times one that does not hold it (a stale or confused caller).
    fn attempt(&mut self) -> Attempt {
        match self.pick(4) {
            0 => Attempt(1 + self.pick(3) as u32),
            _ => self.attempts[self.key],
        }
    }

    fn call(&mut self, now: SimTime) -> Call {
        let (key, n) = (self.key, self.n);
        let scope = Scope::new(["alice", "bob"][key % 2], &format!("k{key}-g{}", self.generation));
        match self.pick(20) {
            0..=5 => {
                let body = format!("{{\"amount\":{}}}", 100 + self.pick(2));
                let fingerprint = Fingerprint::of("POST", "/orders", body.as_bytes());
                Call::Claim { scope, fingerprint, now, lease_ms: LEASE_MS }
            }
            6..=9 => Call::TakeOver { scope, expected: self.attempt(), now, lease_ms: LEASE_MS },
            10..=11 => {
                let point = RecoveryPoint {
                    downstream_key: DownstreamKey(format!("dk-{}-{n}", self.id).into()),
                    data: Bytes::text("{}"),
                };
                Call::WriteRecoveryPoint { scope, attempt: self.attempt(), point }
            }
            12..=15 => {
                let id = MessageId(format!("m-{}-{n}", self.id).into());
                let message = OutboxMessage { id, topic: "t".into(), payload: Bytes::text("{}") };
                let outbox = if self.pick(2) == 0 { vec![message] } else { Vec::new() };
                let completion = Completion { response: StoredResponse::new(201, "{}"), local_effect: None, outbox };
                Call::Complete { scope, attempt: self.attempt(), completion }
            }
            16..=17 => Call::Release { scope, attempt: self.attempt() },
            18 => Call::Read { scope },
            // A sweep racing the others, over every record.
            _ => Call::Sweep { now, window_ms: 1_000 * self.pick(4) as u64 },
        }
    }
}

/// Runs `call` on `store`.
pub async fn apply(store: &dyn IdempotencyStore, call: &Call) -> Result<Answer, StoreError> {
    Ok(match call {
        Call::Claim { scope, fingerprint, now, lease_ms } => {
            Answer::Claim(store.claim(scope, fingerprint, *now, *lease_ms).await?)
        }
        Call::TakeOver { scope, expected, now, lease_ms } => {
            Answer::Takeover(store.take_over(scope, *expected, *now, *lease_ms).await?)
        }
        Call::WriteRecoveryPoint { scope, attempt, point } => {
            Answer::Write(store.write_recovery_point(scope, *attempt, point).await?)
        }
        Call::Complete { scope, attempt, completion } => {
            Answer::Write(store.complete(scope, *attempt, completion).await?)
        }
        Call::Release { scope, attempt } => Answer::Write(store.release(scope, *attempt).await?),
        Call::Read { scope } => Answer::Record(store.read(scope).await?),
        Call::Sweep { now, window_ms } => Answer::Swept(store.sweep(*now, *window_ms).await?),
    })
}
