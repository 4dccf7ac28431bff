//! The fingerprint memo a worker thread keeps across the seeds it runs.
//!
//! Fingerprinting (canonical JSON, SHA-256) is a pure function of a
//! request's method, path and body, and a sweep's seeds draw their bodies
//! from a small set, so a worker hashes each distinct request once for all
//! its seeds instead of twice per seed (server, then checker). Nothing
//! about a run depends on what the memo held before it: a hit and a miss
//! give the same fingerprint.

use idemsim_model::FingerprintMemo;
use std::cell::RefCell;

/// Above this many distinct bodies the memo starts over, so a workload of
/// ever-new bodies cannot grow a worker without bound.
const BODIES_MAX: usize = 16_384;

thread_local! {
    static MEMO: RefCell<FingerprintMemo> = RefCell::new(FingerprintMemo::default());
}

/// Takes this thread's memo for one run (the run owns it meanwhile).
pub(crate) fn take() -> FingerprintMemo {
    MEMO.with(|m| std::mem::take(&mut *m.borrow_mut()))
}

/// Gives the memo back after the run.
pub(crate) fn put(memo: FingerprintMemo) {
    if memo.bodies() <= BODIES_MAX {
        MEMO.with(|m| *m.borrow_mut() = memo);
    }
}
