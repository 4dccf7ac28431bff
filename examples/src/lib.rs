//! Bringing your own store and your own protocol to idemsim: a worked
//! example that uses nothing but idemsim's public API, as a crate of yours
//! would.
//!
//! * [`RacyStore`] is a store whose claim is two awaited steps, a read and
//!   then an upsert, with a yield between them. Run one operation at a
//!   time, as the conformance kit does, it behaves exactly like the model;
//!   under the simulator two duplicates interleave between the read and
//!   the upsert and both "own" the record. It is a `Delegate` over the
//!   bundled `MemStore`: only the claim is written out.
//! * [`ReEncodingReplay`] is a protocol variant no built-in step has: it
//!   replays a completed record's JSON body re-encoded (keys sorted)
//!   instead of the stored bytes. Every step but one is the correct
//!   protocol's, inherited from the trait's provided methods.
//! * [`LongLease`] (a protocol with a 90 s lease) and [`UnfencedComplete`]
//!   (a store whose completion ignores the attempt): what a simulated
//!   sweep and `Explorer` must catch together, and clear apart.
//!
//! The tests in `tests/` catch both with a sweep, shrink the failure to a
//! scenario file, and replay that file with the same trace hash.
//!
//! ```
//! use idemsim_examples::{RacyStore, ReEncodingReplay};
//! use idemsim::Simulation;
//!
//! let report = Simulation::scenario("concurrent-duplicates")
//!     .unwrap()
//!     .store("racy", || Ok(RacyStore::new()))
//!     .seeds(0..30)
//!     .jobs(1)
//!     .sweep()
//!     .unwrap();
//! assert!(report.seeds_failed > 0, "the racy claim is caught");
//! # let _ = ReEncodingReplay;
//! ```

mod long_lease;
mod racy_store;
mod re_encoding;

pub use long_lease::{LongLease, UnfencedComplete};
pub use racy_store::RacyStore;
pub use re_encoding::ReEncodingReplay;

/// `docs/store-testing.md`, compiled and run as a doctest here (this crate
/// sees every idemsim crate as a user's crate does), so its examples stay
/// true.
#[doc = include_str!("../../docs/store-testing.md")]
#[cfg(doctest)]
pub struct StoreTestingGuide;

/// `docs/scenarios.md`, compiled and run as a doctest.
#[doc = include_str!("../../docs/scenarios.md")]
#[cfg(doctest)]
pub struct ScenariosGuide;
