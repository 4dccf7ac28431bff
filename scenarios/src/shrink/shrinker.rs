//! The shrinker's passes: delta debugging over the explicit schedule, the
//! operations, the servers and the fault knobs, one candidate run at a
//! time.

use super::*;

/// A violation's kind: the words of its explanation without names and
/// numbers, so a shrink keeps "two executions ... share a fencing token"
/// and does not drift to a kind of violation the seed did not show.
pub(super) fn signature(explanation: &str) -> String {
    let words = explanation.split_whitespace().map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()));
    words.filter(|w| !w.is_empty() && w.chars().all(|c| c.is_alphabetic() || c == '-')).collect::<Vec<_>>().join(" ")
}

pub(super) struct Shrinker {
    pub(super) subject: Subject,
    pub(super) seed: u64,
    pub(super) property: Property,
    pub(super) signatures: BTreeSet<String>,
    pub(super) runs: u32,
    pub(super) runs_max: u32,
}

impl Shrinker {
    pub(super) fn fails(&mut self, config: &SimConfig) -> bool {
        if self.runs >= self.runs_max || config.validate().is_err() {
            return false;
        }
        self.runs += 1;
        run_seed(config, &self.subject, self.seed).is_ok_and(|o| {
            o.violations
                .iter()
                .any(|v| v.property == self.property && self.signatures.contains(&signature(&v.explanation)))
        })
    }

    /// Keeps `candidate` if it still fails.
    fn try_config(&mut self, current: &mut SimConfig, candidate: SimConfig) -> bool {
        if candidate != *current && self.fails(&candidate) {
            *current = candidate;
            return true;
        }
        false
    }

    /// Shrinks until a whole round changes nothing: the last round tried
    /// removing each remaining fault, operation and knob on its own (ddmin
    /// ends on single-item complements), so the result is 1-minimal.
    pub(super) fn minimise(&mut self, mut config: SimConfig) -> SimConfig {
        loop {
            let before = config.clone();
            self.drop_faults(&mut config);
            self.drop_operations(&mut config);
            self.drop_knobs(&mut config);
            self.drop_clients(&mut config);
            self.drop_servers(&mut config);
            self.shorten(&mut config);
            self.tighten(&mut config);
            self.lower_budget(&mut config);
            self.knobs_to_faults(&mut config);
            self.unbind_faults(&mut config);
            if config == before || self.runs >= self.runs_max {
                return config;
            }
        }
    }

    fn drop_faults(&mut self, config: &mut SimConfig) {
        let FaultSettings::Scheduled { faults, .. } = &config.faults else { return };
        let with = |c: &SimConfig, kept: Vec<TimedFault>| {
            let mut c = c.clone();
            if let FaultSettings::Scheduled { faults, .. } = &mut c.faults {
                *faults = kept;
            }
            c
        };
        let base = config.clone();
        let kept = ddmin(faults.clone(), &mut |kept| self.fails(&with(&base, kept.to_vec())));
        *config = with(&base, kept);
    }

    fn drop_operations(&mut self, config: &mut SimConfig) {
        let Some(ops) = config.workload.operations.clone() else { return };
        let with = |c: &SimConfig, kept: Vec<Operation>| {
            let mut c = c.clone();
            c.workload.operations = Some(kept);
            c
        };
        let base = config.clone();
        let kept = ddmin(ops, &mut |kept| self.fails(&with(&base, kept.to_vec())));
        *config = with(&base, kept);
    }

    fn drop_knobs(&mut self, config: &mut SimConfig) {
        let FaultSettings::Scheduled { profile, .. } = &config.faults else { return };
        for (_, off) in profile.knobs_on() {
            let mut candidate = config.clone();
            if let FaultSettings::Scheduled { profile, .. } = &mut candidate.faults {
                off(profile);
            }
            self.try_config(config, candidate);
        }
    }

    /// Moves every operation to one client if the failure allows, else
    /// renumbers the clients that still send something to `0..n`.
    fn drop_clients(&mut self, config: &mut SimConfig) {
        if config.topology.clients > 1 {
            let mut candidate = config.clone();
            candidate.topology.clients = 1;
            if let Some(ops) = &mut candidate.workload.operations {
                ops.iter_mut().for_each(|o| o.client = 0);
            }
            if let FaultSettings::Scheduled { faults, .. } = &mut candidate.faults {
                faults.retain(|f| !matches!(f.action.node(), idemsim_model::NodeId::Client(c) if c > 0));
            }
            if self.try_config(config, candidate) {
                return;
            }
        }
        let Some(ops) = &config.workload.operations else { return };
        let used: std::collections::BTreeSet<u32> = ops.iter().map(|o| o.client).collect();
        let n = used.len().max(1) as u32;
        if n == config.topology.clients {
            return;
        }
        let mut candidate = config.clone();
        candidate.topology.clients = n;
        let rank = |c: u32| used.iter().position(|&u| u == c).unwrap_or(0) as u32;
        if let Some(ops) = &mut candidate.workload.operations {
            ops.iter_mut().for_each(|o| o.client = rank(o.client));
        }
        if let FaultSettings::Scheduled { faults, .. } = &mut candidate.faults {
            faults.retain(|f| !matches!(f.action.node(), idemsim_model::NodeId::Client(_)));
        }
        self.try_config(config, candidate);
    }

    /// Sends everything to one server if the failure allows, else keeps
    /// only the servers that a send or a timed fault names, renumbered.
    fn drop_servers(&mut self, config: &mut SimConfig) {
        if config.topology.servers > 1 {
            let mut candidate = config.clone();
            renumber_servers(&mut candidate, &|_| 0, 1);
            if self.try_config(config, candidate) {
                return;
            }
        }
        let mut used = BTreeSet::new();
        if let Some(ops) = &config.workload.operations {
            used.extend(ops.iter().flat_map(|o| o.servers.iter().copied()));
        }
        if let FaultSettings::Scheduled { faults, .. } = &config.faults {
            used.extend(faults.iter().filter_map(|f| match f.action.node() {
                idemsim_model::NodeId::Server(s) => Some(s),
                _ => None,
            }));
        }
        let n = used.len().max(1) as u32;
        if n < config.topology.servers {
            let mut candidate = config.clone();
            let rank = |s: u32| used.iter().position(|&u| u == s).unwrap_or(0) as u32;
            renumber_servers(&mut candidate, &rank, n);
            self.try_config(config, candidate);
        }
        while config.topology.servers > 1 {
            // The last server goes: its faults with it, its sends to the others.
            let mut candidate = config.clone();
            let n = candidate.topology.servers - 1;
            if let FaultSettings::Scheduled { faults, .. } = &mut candidate.faults {
                faults.retain(|f| !matches!(f.action.node(), idemsim_model::NodeId::Server(s) if s >= n));
            }
            renumber_servers(&mut candidate, &|s| if s < n { s } else { s % n }, n);
            if !self.try_config(config, candidate) {
                return;
            }
        }
    }

    /// Halves pauses, outages, partitions and latency while the failure
    /// stays.
    fn shorten(&mut self, config: &mut SimConfig) {
        let count = match &config.faults {
            FaultSettings::Scheduled { faults, .. } => faults.len(),
            _ => return,
        };
        for i in 0..count {
            for _ in 0..8 {
                let mut candidate = config.clone();
                let FaultSettings::Scheduled { faults, .. } = &mut candidate.faults else { return };
                if !faults[i].action.halve() || !self.try_config(config, candidate) {
                    break;
                }
            }
        }
        for _ in 0..6 {
            let mut candidate = config.clone();
            let FaultSettings::Scheduled { profile, .. } = &mut candidate.faults else { return };
            let [lo, hi] = profile.latency_ms;
            if hi <= lo.max(1) {
                return;
            }
            profile.latency_ms = [lo.min(1), (hi / 2).max(1)];
            profile.dup_delay_max_ms /= 2;
            if !self.try_config(config, candidate) {
                return;
            }
        }
    }
}

/// Moves every send and every server fault from server `s` to server
/// `rank(s)` of `n`.
pub(super) fn renumber_servers(config: &mut SimConfig, rank: &dyn Fn(u32) -> u32, n: u32) {
    config.topology.servers = n;
    if let Some(ops) = &mut config.workload.operations {
        ops.iter_mut().flat_map(|o| o.servers.iter_mut()).for_each(|s| *s = rank(*s));
    }
    if let FaultSettings::Scheduled { faults, .. } = &mut config.faults {
        for f in faults.iter_mut() {
            if let idemsim_model::NodeId::Server(s) = f.action.node_mut() {
                *s = rank(*s);
            }
        }
    }
}

impl Shrinker {
    /// Turns the crashes and pauses that fault sites drew (a holder
    /// crashing or freezing before it completes) into planned faults at
    /// the same moments, and switches those knobs off. What made them fire
    /// (an operation on another key, say) can then go, and delta debugging
    /// keeps only the faults that matter. A plain timed fault strikes at
    /// the start of its millisecond and needs nothing else to fire, so it
    /// is tried first; where the failure needs the fault at the point the
    /// site drew it, it stays bound to the node's next site.
    fn knobs_to_faults(&mut self, config: &mut SimConfig) {
        let FaultSettings::Scheduled { profile, faults } = &config.faults else { return };
        if profile.crash_before_complete_permille == 0 && profile.pause_before_complete_permille == 0 {
            return;
        }
        let Ok(run) = run_seed(config, &self.subject, self.seed) else { return };
        let planned: BTreeSet<(u64, idemsim_model::NodeId)> =
            faults.iter().map(|f| (f.at_ms, f.action.node())).collect();
        let drawn: Vec<TimedFault> = site_faults(&run.history.entries)
            .into_iter()
            .filter(|f| !planned.contains(&(f.at_ms, f.action.node())))
            .collect();
        let with = |faults_of: &dyn Fn(&TimedFault) -> TimedFault| {
            let mut candidate = config.clone();
            if let FaultSettings::Scheduled { profile, faults } = &mut candidate.faults {
                profile.crash_before_complete_permille = 0;
                profile.pause_before_complete_permille = 0;
                faults.extend(drawn.iter().map(faults_of));
                faults.sort_by_key(|f| f.at_ms);
            }
            candidate
        };
        let (timed, bound) =
            (with(&|f| TimedFault { at_ms: f.at_ms, action: unbound(&f.action) }), with(&|f| f.clone()));
        if !self.try_config(config, timed) {
            self.try_config(config, bound);
        }
    }

    /// Tries each fault bound to a fault site as a plain timed fault, which
    /// needs no other operation to reach a site.
    fn unbind_faults(&mut self, config: &mut SimConfig) {
        let FaultSettings::Scheduled { faults, .. } = &config.faults else { return };
        let bound: Vec<usize> = (0..faults.len()).filter(|&i| faults[i].action.at_site()).collect();
        for i in bound {
            let mut candidate = config.clone();
            let FaultSettings::Scheduled { faults, .. } = &mut candidate.faults else { return };
            faults[i].action = unbound(&faults[i].action);
            self.try_config(config, candidate);
        }
    }

    /// Halves the clients' retry budget while the failure stays, so that
    /// operations that were only there to drain it can go.
    fn lower_budget(&mut self, config: &mut SimConfig) {
        while config.protocol.retry.budget.tokens_max > 0 {
            let mut candidate = config.clone();
            candidate.protocol.retry.budget.tokens_max /= 2;
            if !self.try_config(config, candidate) {
                return;
            }
        }
    }

    /// Moves everything earlier (the run starts where the first operation
    /// or fault does), halves the gaps between operations, and ends the
    /// phases soon after the violation, while the failure stays.
    fn tighten(&mut self, config: &mut SimConfig) {
        for _ in 0..6 {
            let Some(candidate) = earlier(config) else { break };
            if !self.try_config(config, candidate) {
                break;
            }
        }
        let Ok(run) = run_seed(config, &self.subject, self.seed) else { return };
        let Some(v) = run.violations.iter().find(|v| v.property == self.property) else { return };
        let last = v.events.iter().filter_map(|&i| run.history.entries.get(i)).map(|e| e.at.0).max().unwrap_or(0);
        let mut candidate = config.clone();
        let phases = &mut candidate.phases;
        phases.fault_ms = phases.fault_ms.min(last + 1_000);
        if self.try_config(config, candidate) {
            while config.phases.heal_ms > 2_000 {
                let mut candidate = config.clone();
                candidate.phases.heal_ms /= 2;
                if !self.try_config(config, candidate) {
                    break;
                }
            }
        }
    }
}

/// `config` with every operation and timed fault moved earlier: by the
/// time before the first of them, and with the gaps between operations
/// halved; `None` when nothing moves.
pub(super) fn earlier(config: &SimConfig) -> Option<SimConfig> {
    let mut c = config.clone();
    let ops = c.workload.operations.as_mut()?;
    ops.sort_by_key(|o| (o.start_ms, o.op));
    let first = ops.first()?.start_ms;
    let FaultSettings::Scheduled { faults, .. } = &mut c.faults else { return None };
    let shift = faults.iter().map(|f| f.at_ms).min().unwrap_or(first).min(first);
    let mut prev = (first, first - shift);
    for o in ops.iter_mut() {
        let gap = o.start_ms - prev.0;
        prev = (o.start_ms, prev.1 + gap / 2);
        o.start_ms = prev.1;
    }
    faults.iter_mut().for_each(|f| f.at_ms -= shift);
    (c != *config).then_some(c)
}

/// The crashes and pauses of a history that fault sites may have drawn
/// (with the planned ones among them), bound to the node's next site at
/// the moment they happened.
pub(super) fn site_faults(entries: &[idemsim_model::history::Entry]) -> Vec<TimedFault> {
    use idemsim_model::{history::Fault, Event};
    let mut drawn = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        let Event::Fault(fault) = &e.event else { continue };
        let action = match *fault {
            Fault::Paused { node, for_ms } => FaultAction::PauseBeforeCompletion { node, for_ms },
            Fault::Crashed { node } => {
                let restarted = |r: &&idemsim_model::history::Entry| matches!(r.event, Event::Fault(Fault::Restarted { node: n }) if n == node);
                let Some(r) = entries[i..].iter().find(restarted) else { continue };
                FaultAction::CrashBeforeCompletion { node, down_ms: r.at.0 - e.at.0 }
            }
            _ => continue,
        };
        drawn.push(TimedFault { at_ms: e.at.0, action });
    }
    drawn
}

/// A site-bound fault as a plain timed one; any other as it is.
pub(super) fn unbound(action: &FaultAction) -> FaultAction {
    match *action {
        FaultAction::CrashBeforeCompletion { node, down_ms } => FaultAction::Crash { node, down_ms },
        FaultAction::PauseBeforeCompletion { node, for_ms } => FaultAction::Pause { node, for_ms },
        other => other,
    }
}
