//! The stress run's environments of the protocol core: a request copy (or
//! the reconciler) against the real store, and a client's retry loop in
//! real time.

use super::*;

/// One request copy (or the reconciler) against the real store.
pub(super) struct StressEnv {
    pub(super) ctx: Arc<Ctx>,
    pub(super) node: NodeId,
    pub(super) origin: Origin,
    /// The operation being served, with its planned faults.
    pub(super) op: Option<Arc<Op>>,
}

impl StressEnv {
    /// Records a store operation's events: grants when they returned, so
    /// real-time order can only hide a fencing violation, never invent
    /// one; writes when they were sent.
    pub(super) fn record_store(&self, sent_ns: u128, op: &StoreOp, reply: &StoreReply) {
        let at = if reply.grants() { self.ctx.rec.now_ns() } else { sent_ns };
        for event in op.events(self.origin, reply) {
            self.ctx.rec.at(at, NodeId::Db, event);
        }
        if let StoreReply::Failed(e) = reply {
            self.ctx.rec.count("store_error");
            self.ctx.rec.error(op.name(), e);
        }
    }

    /// After a completion whose outcome is unknown (the connection broke
    /// around the commit): read back whether it landed, so the history
    /// does not lose an effect.
    pub(super) async fn read_back(&self, sent_ns: u128, op: &StoreOp) {
        let StoreOp::Complete { scope, attempt, completion } = op else { return };
        for _ in 0..5 {
            match self.ctx.store.read(scope).await {
                Ok(Some(r)) => {
                    let landed = matches!(&r.state, RecordState::Completed { attempt: a, response }
                        if a == attempt && *response == completion.response);
                    if landed {
                        let applied = StoreReply::Write(idemsim_model::WriteOutcome::Applied);
                        self.record_store(sent_ns, op, &applied);
                    }
                    return;
                }
                Ok(None) => return,
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    }

    pub(super) fn is_first_of_planned(&self, attempt: Attempt, fault: fn(&Op) -> bool) -> bool {
        self.op.as_deref().is_some_and(|op| fault(op) && attempt == Attempt::FIRST)
    }
}

#[async_trait]
impl Env for StressEnv {
    fn node(&self) -> NodeId {
        self.node
    }

    fn origin(&self) -> Origin {
        self.origin
    }

    fn settings(&self) -> &ProtocolSettings {
        &self.ctx.settings
    }

    fn now(&self) -> SimTime {
        self.ctx.rec.now()
    }

    async fn store(&self, op: StoreOp) -> Option<StoreReply> {
        let sent = self.ctx.rec.now_ns();
        let reply = op.apply(&*self.ctx.store).await;
        self.record_store(sent, &op, &reply);
        if let StoreReply::Failed(StoreError::Indeterminate(_)) = reply {
            self.read_back(sent, &op).await;
        }
        reply.answered()
    }

    async fn charge(
        &self,
        scope: &Scope,
        attempt: Attempt,
        downstream_key: DownstreamKey,
        _request: &Request,
    ) -> ChargeAnswer {
        let rec = &self.ctx.rec;
        let mut ledger = self.ctx.ledger.lock().unwrap_or_else(|p| p.into_inner());
        rec.record(NodeId::Downstream, Ledger::received(self.origin, self.node, scope, attempt, &downstream_key));
        let (answer, effect) = ledger.charge(scope, &downstream_key);
        if let Some(effect) = effect {
            rec.record(NodeId::Downstream, effect);
        }
        answer.into()
    }

    async fn publish(&self, entry: OutboxEntry) -> bool {
        let applied = self.ctx.consumed.lock().unwrap_or_else(|p| p.into_inner()).insert(entry.message.id.clone());
        let consumed = Event::MessageConsumed { id: entry.message.id, scope: entry.scope, applied };
        self.ctx.rec.record(NodeId::Consumer, consumed);
        true
    }

    async fn sleep_ms(&self, ms: u64) {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }

    fn record(&self, event: Event) {
        self.ctx.rec.record(self.node, event);
    }

    fn work_ms(&self) -> u64 {
        self.op.as_ref().map_or(0, |op| op.work_ms)
    }

    async fn fault(&self, site: FaultSite) -> Proceed {
        let FaultSite::BeforeCompletion { attempt, charged } = site else { return Proceed::Continue };
        if charged && self.is_first_of_planned(attempt, |op| op.abandon) {
            self.ctx.rec.count("abandon");
            return Proceed::Stop;
        }
        if self.is_first_of_planned(attempt, |op| op.pause) {
            self.ctx.rec.count("pause");
            self.sleep_ms(self.ctx.settings.lease_ms + self.work_ms() * 2).await;
        }
        Proceed::Continue
    }

    async fn lock(&self, lock: &KeyLock) {
        while !self.ctx.locks.lock().unwrap_or_else(|p| p.into_inner()).insert(lock.clone()) {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    fn unlock(&self, lock: &KeyLock) {
        self.ctx.locks.lock().unwrap_or_else(|p| p.into_inner()).remove(lock);
    }
}

/// One client sending one operation, in process: a send is the server's
/// handler called directly.
pub(super) struct StressClient {
    pub(super) ctx: Arc<Ctx>,
    pub(super) op: Arc<Op>,
    pub(super) rng: Mutex<SimRng>,
}

impl StressClient {
    pub(super) fn new(ctx: Arc<Ctx>, op: Arc<Op>) -> StressClient {
        let rng = Mutex::new(stream(op.op.0.into(), Stream::Clients));
        StressClient { ctx, op, rng }
    }

    pub(super) fn bucket<R>(&self, f: impl FnOnce(&mut TokenBucket) -> R) -> R {
        let mut buckets = self.ctx.buckets.lock().unwrap_or_else(|p| p.into_inner());
        let budget = &self.ctx.settings.retry.budget;
        f(buckets.entry(self.op.client).or_insert_with(|| TokenBucket::new(budget)))
    }
}

#[async_trait]
impl ClientEnv for StressClient {
    fn node(&self) -> NodeId {
        NodeId::Client(self.op.client)
    }

    fn policy(&self) -> &RetryPolicy {
        &self.ctx.settings.retry
    }

    fn now(&self) -> SimTime {
        self.ctx.rec.now()
    }

    fn pick_server(&self) -> NodeId {
        NodeId::Server(0)
    }

    fn draw(&self, lo: u64, hi: u64) -> u64 {
        between(&mut self.rng.lock().unwrap_or_else(|p| p.into_inner()), lo, hi)
    }

    fn first_send(&self) {
        self.bucket(TokenBucket::on_first_send);
    }

    fn spend_retry(&self) -> bool {
        self.bucket(TokenBucket::try_spend)
    }

    async fn send(&self, req: RequestId, to: NodeId, request: Request) -> Option<Reply> {
        let origin = Origin::Request { req, copy: 1 };
        let env = StressEnv { ctx: self.ctx.clone(), node: to, origin, op: Some(self.op.clone()) };
        let fingerprint = idemsim_protocol::fingerprint(&*self.ctx.protocol, &request);
        idemsim_sim::protocol::serve(&*self.ctx.protocol, &env, req, 1, &request, fingerprint).await
    }

    async fn sleep_ms(&self, ms: u64) {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }

    fn record(&self, event: Event) {
        self.ctx.rec.record(self.node(), event);
    }
}
