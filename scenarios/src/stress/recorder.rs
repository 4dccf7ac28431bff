//! The stress run's recorder: events from many tasks, stamped by one
//! monotonic clock, with counters and error kinds.

use super::*;

/// Records events from many tasks, stamped by a monotonic clock.
pub(super) struct Recorder {
    pub(super) start: Instant,
    pub(super) events: Mutex<Vec<(u128, u64, NodeId, Event)>>,
    pub(super) counters: Mutex<BTreeMap<&'static str, usize>>,
    pub(super) errors: Mutex<BTreeMap<String, usize>>,
}

impl Recorder {
    pub(super) fn now_ns(&self) -> u128 {
        self.start.elapsed().as_nanos()
    }

    pub(super) fn now(&self) -> SimTime {
        SimTime((self.now_ns() / 1_000_000) as u64)
    }

    pub(super) fn at(&self, ns: u128, node: NodeId, event: Event) {
        let mut events = self.events.lock().unwrap_or_else(|p| p.into_inner());
        let seq = events.len() as u64;
        events.push((ns, seq, node, event));
    }

    pub(super) fn record(&self, node: NodeId, event: Event) {
        self.at(self.now_ns(), node, event);
    }

    pub(super) fn count(&self, what: &'static str) {
        *self.counters.lock().unwrap_or_else(|p| p.into_inner()).entry(what).or_default() += 1;
    }

    pub(super) fn error(&self, op: &str, e: &StoreError) {
        let text = crate::report::cut_at_word(&format!("{op}: {e}"), ERROR_KIND_CHARS);
        *self.errors.lock().unwrap_or_else(|p| p.into_inner()).entry(text).or_default() += 1;
    }

    pub(super) fn into_history(
        self,
        meta: RunMeta,
    ) -> (History, BTreeMap<&'static str, usize>, BTreeMap<String, usize>) {
        let mut events = self.events.into_inner().unwrap_or_else(|p| p.into_inner());
        events.sort_by_key(|(ns, seq, _, _)| (*ns, *seq));
        let entries = events
            .into_iter()
            .map(|(ns, _, node, event)| Entry { at: SimTime((ns / 1_000_000) as u64), node, event })
            .collect();
        let counters = self.counters.into_inner().unwrap_or_else(|p| p.into_inner());
        (History { meta, entries }, counters, self.errors.into_inner().unwrap_or_else(|p| p.into_inner()))
    }
}
