//! The seeded attack plan of `idemsim http`: groups of operations on one
//! key, each group one attack, and the provider's plan for their charges.
//! The seed fixes every request, every fault and every provider answer;
//! the interleaving is real.

use super::config::{body, HttpConfig};
use idemsim_model::{Bytes, CallerId, IdempotencyKey, OpId, Request};
use idemsim_sim::rng::{between, stream, SimRng, Stream};
use rand::Rng;
use std::collections::BTreeMap;

/// The attacks, each counted in the report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Attack {
    /// N copies of one request at the same moment.
    ConcurrentDuplicates,
    /// The same request again after the first finished.
    SequentialRetries,
    /// The first try's response is dropped by the proxy after the service
    /// sent it; the client retries.
    LostResponse,
    /// The proxy resets the first try's connection before the answer.
    ResetConnection,
    /// The same key with another body, after the first succeeded.
    ChangedBody,
    /// The same key on another endpoint.
    OtherEndpoint,
    /// The same key from another tenant.
    OtherTenant,
    /// No key on an endpoint that requires one.
    MissingKey,
    /// A body the service must refuse before executing, then the corrected
    /// body with the same key.
    InvalidThenCorrected,
    /// The provider answers the first charge slowly, so a lease can run out
    /// while duplicates retry.
    SlowProvider,
    /// The provider fails the first charge (503), so the service answers an
    /// error and the client retries.
    ProviderFails,
}

impl Attack {
    /// Every attack, in report order.
    pub const ALL: [Attack; 11] = [
        Attack::ConcurrentDuplicates,
        Attack::SequentialRetries,
        Attack::LostResponse,
        Attack::ResetConnection,
        Attack::ChangedBody,
        Attack::OtherEndpoint,
        Attack::OtherTenant,
        Attack::MissingKey,
        Attack::InvalidThenCorrected,
        Attack::SlowProvider,
        Attack::ProviderFails,
    ];

    /// The report's name.
    pub fn name(self) -> &'static str {
        match self {
            Attack::ConcurrentDuplicates => "concurrent-duplicates",
            Attack::SequentialRetries => "sequential-retries",
            Attack::LostResponse => "lost-response",
            Attack::ResetConnection => "reset-connection",
            Attack::ChangedBody => "changed-body",
            Attack::OtherEndpoint => "other-endpoint",
            Attack::OtherTenant => "other-tenant",
            Attack::MissingKey => "missing-key",
            Attack::InvalidThenCorrected => "invalid-then-corrected",
            Attack::SlowProvider => "slow-provider",
            Attack::ProviderFails => "provider-fails",
        }
    }

    /// Whether the target's configuration allows it.
    fn possible(self, config: &HttpConfig) -> bool {
        match self {
            Attack::OtherEndpoint => config.endpoints.len() > 1,
            Attack::OtherTenant => config.tenants.len() > 1,
            Attack::MissingKey => config.endpoints.iter().any(|e| e.requires_key),
            Attack::InvalidThenCorrected => config.endpoints.iter().any(|e| e.invalid_body.is_some()),
            Attack::SlowProvider | Attack::ProviderFails => config.endpoints.iter().any(|e| e.charges),
            _ => true,
        }
    }
}

/// What the proxy does to an operation's first try.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProxyFault {
    /// Nothing.
    None,
    /// Forward, let the service answer, drop the answer.
    DropResponse,
    /// Close the connection this long after sending, unless answered.
    Reset {
        /// Milliseconds after the send.
        after_ms: u64,
    },
}

/// What the provider does on the first charge carrying a reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProviderPlan {
    /// Charge, then answer after this many milliseconds.
    Slow(u64),
    /// Answer 503 without charging.
    Fail,
}

/// One operation: a request the client sends and retries.
#[derive(Clone, Debug)]
pub struct PlannedOp {
    /// Its id.
    pub op: OpId,
    /// The request as sent.
    pub request: Request,
    /// The attack it belongs to (the late replay has its own name).
    pub attack: &'static str,
    /// The proxy's fault on the first try.
    pub fault: ProxyFault,
}

/// One attack on one key: stages run one after another, the operations
/// of a stage at the same moment.
#[derive(Clone, Debug)]
pub struct Group {
    /// The attack.
    pub attack: Attack,
    /// The stages.
    pub stages: Vec<Vec<PlannedOp>>,
}

/// The whole plan.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    /// The groups, in start order.
    pub groups: Vec<Group>,
    /// The provider's plan, by request reference.
    pub provider: BTreeMap<String, ProviderPlan>,
}

/// Builds the plan for `ops` operations: every possible attack once in the
/// first groups, then attacks drawn at random. `tag` makes keys and
/// references unique to the run; `slow_ms` is the slow provider's delay.
pub fn plan(config: &HttpConfig, seed: u64, ops: usize, tag: &str, slow_ms: u64) -> Plan {
    let mut b = Builder {
        config,
        rng: stream(seed, Stream::Workload),
        faults: stream(seed, Stream::Plan),
        tag,
        slow_ms,
        next_op: 0,
        next_ref: 0,
        plan: Plan::default(),
    };
    let attacks: Vec<Attack> = Attack::ALL.into_iter().filter(|a| a.possible(config)).collect();
    let mut made = 0;
    let mut g = 0;
    while made < ops {
        let attack = match attacks.get(g) {
            Some(a) => *a,
            None => attacks[b.rng.gen_range(0..attacks.len())],
        };
        let group = b.group(attack, g);
        made += group.stages.iter().map(Vec::len).sum::<usize>();
        b.plan.groups.push(group);
        g += 1;
    }
    b.plan
}

struct Builder<'a> {
    config: &'a HttpConfig,
    rng: SimRng,
    faults: SimRng,
    tag: &'a str,
    slow_ms: u64,
    next_op: u32,
    next_ref: u32,
    plan: Plan,
}

/// A request before it is an operation: tenant, endpoint, key, body.
#[derive(Clone)]
struct Shape {
    tenant: usize,
    endpoint: usize,
    key: Option<String>,
    amount: u64,
    invalid: bool,
    reference: String,
}

impl Builder<'_> {
    fn reference(&mut self) -> String {
        self.next_ref += 1;
        format!("{}-r{}", self.tag, self.next_ref)
    }

    fn op(&mut self, shape: &Shape, attack: Attack, fault: ProxyFault) -> PlannedOp {
        self.next_op += 1;
        let e = &self.config.endpoints[shape.endpoint];
        let template = match shape.invalid {
            true => e.invalid_body.as_deref().expect("only endpoints with an invalid body get invalid requests"),
            false => &e.body,
        };
        let request = Request {
            caller: CallerId(self.config.tenants[shape.tenant].as_str().into()),
            key: shape.key.as_deref().map(|k| IdempotencyKey(k.into())),
            method: e.method.as_str().into(),
            path: e.path.as_str().into(),
            body: Bytes::text(&body(template, shape.amount, &shape.reference)),
        };
        PlannedOp { op: OpId(self.next_op), request, attack: attack.name(), fault }
    }

    fn pick_endpoint(&mut self, want: impl Fn(&super::config::Endpoint) -> bool) -> usize {
        let fits: Vec<usize> = (0..self.config.endpoints.len()).filter(|i| want(&self.config.endpoints[*i])).collect();
        fits[self.rng.gen_range(0..fits.len())]
    }

    fn group(&mut self, attack: Attack, g: usize) -> Group {
        let endpoint = match attack {
            Attack::MissingKey => self.pick_endpoint(|e| e.requires_key),
            Attack::InvalidThenCorrected => self.pick_endpoint(|e| e.invalid_body.is_some()),
            Attack::SlowProvider | Attack::ProviderFails => self.pick_endpoint(|e| e.charges),
            _ => self.pick_endpoint(|_| true),
        };
        let first = Shape {
            tenant: self.rng.gen_range(0..self.config.tenants.len()),
            endpoint,
            key: (attack != Attack::MissingKey).then(|| format!("{}-k{g}", self.tag)),
            amount: between(&mut self.rng, 1, 999),
            invalid: false,
            reference: self.reference(),
        };
        let one = |b: &mut Self, s: &Shape, fault| vec![b.op(s, attack, fault)];
        let stages = match attack {
            Attack::ConcurrentDuplicates => {
                let n = between(&mut self.rng, 2, 4);
                vec![(0..n).map(|_| self.op(&first, attack, ProxyFault::None)).collect()]
            }
            Attack::SequentialRetries => vec![one(self, &first, ProxyFault::None), one(self, &first, ProxyFault::None)],
            Attack::LostResponse => vec![one(self, &first, ProxyFault::DropResponse)],
            Attack::ResetConnection => {
                let after_ms = between(&mut self.faults, 0, 30);
                vec![one(self, &first, ProxyFault::Reset { after_ms })]
            }
            Attack::ChangedBody => {
                let changed = Shape { amount: first.amount + 1, reference: self.reference(), ..first.clone() };
                vec![one(self, &first, ProxyFault::None), one(self, &changed, ProxyFault::None)]
            }
            Attack::OtherEndpoint => {
                let n = self.config.endpoints.len();
                let other = (first.endpoint + 1 + self.rng.gen_range(0..n - 1)) % n;
                let moved = Shape { endpoint: other, reference: self.reference(), ..first.clone() };
                vec![one(self, &first, ProxyFault::None), one(self, &moved, ProxyFault::None)]
            }
            Attack::OtherTenant => {
                let n = self.config.tenants.len();
                let other = (first.tenant + 1 + self.rng.gen_range(0..n - 1)) % n;
                let moved = Shape { tenant: other, reference: self.reference(), ..first.clone() };
                vec![one(self, &first, ProxyFault::None), one(self, &moved, ProxyFault::None)]
            }
            Attack::MissingKey => vec![one(self, &first, ProxyFault::None)],
            Attack::InvalidThenCorrected => {
                let invalid = Shape { invalid: true, reference: self.reference(), ..first.clone() };
                vec![one(self, &invalid, ProxyFault::None), one(self, &first, ProxyFault::None)]
            }
            Attack::SlowProvider => {
                self.plan.provider.insert(first.reference.clone(), ProviderPlan::Slow(self.slow_ms));
                vec![vec![self.op(&first, attack, ProxyFault::None), self.op(&first, attack, ProxyFault::None)]]
            }
            Attack::ProviderFails => {
                self.plan.provider.insert(first.reference.clone(), ProviderPlan::Fail);
                vec![one(self, &first, ProxyFault::None)]
            }
        };
        Group { attack, stages }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ops(p: &Plan) -> Vec<(u32, String, Option<String>, String)> {
        p.groups
            .iter()
            .flat_map(|g| g.stages.iter().flatten())
            .map(|o| {
                (
                    o.op.0,
                    o.request.path.to_string(),
                    o.request.key.as_ref().map(|k| k.0.to_string()),
                    o.request.body.lossy(),
                )
            })
            .collect()
    }

    #[test]
    fn the_seed_fixes_the_plan_and_every_attack_appears() {
        let c = HttpConfig::default();
        let a = plan(&c, 7, 60, "t", 900);
        assert_eq!(ops(&a), ops(&plan(&c, 7, 60, "t", 900)));
        assert_ne!(ops(&a), ops(&plan(&c, 8, 60, "t", 900)));
        for attack in Attack::ALL {
            assert!(a.groups.iter().any(|g| g.attack == attack), "{attack:?} missing");
        }
        assert!(a.provider.values().any(|p| *p == ProviderPlan::Slow(900)));
    }

    #[test]
    fn attacks_the_config_cannot_carry_are_left_out() {
        let c =
            HttpConfig { tenants: vec!["solo".into()], endpoints: vec![Default::default()], ..HttpConfig::default() };
        let p = plan(&c, 1, 40, "t", 900);
        assert!(p.groups.iter().all(|g| g.attack != Attack::OtherTenant && g.attack != Attack::OtherEndpoint));
    }
}
