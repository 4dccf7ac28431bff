//! The idempotency store: the trait servers call, its implementations, and
//! the conformance kit that checks any implementation against the model.
//!
//! **Invariant:** every store operation is atomic and means exactly what the
//! method of the same name on [`idemsim_model::RefStore`] means. Claims are
//! insert-if-absent, never check-then-insert; takeovers and every later write
//! are conditional on the attempt and answer `Fenced`, never a silent
//! success. Stores read no clock: `now` is passed in.
//!
//! ```
//! use idemsim_model::{Claim, Fingerprint, Scope, SimTime};
//! use idemsim_store::{IdempotencyStore, SqliteStore};
//!
//! # futures::executor::block_on(async {
//! let store = SqliteStore::in_memory().unwrap();
//! let scope = Scope::new("acme", "8e03978e");
//! let fp = Fingerprint::of("POST", "/orders", b"{}");
//! let first = store.claim(&scope, &fp, SimTime(0), 1_000).await.unwrap();
//! assert!(matches!(first, Claim::Owned(_)));
//! let second = store.claim(&scope, &fp, SimTime(5), 1_000).await.unwrap();
//! assert!(matches!(second, Claim::Existing(_)));
//! # });
//! ```

#[cfg(feature = "kit")]
pub mod conformance;
mod delegate;
mod durability;
mod error;
mod flaw;
mod mem;
#[cfg(feature = "mysql")]
mod mysql;
mod panic;
#[cfg(feature = "pg")]
mod pg;
pub mod plan;
#[cfg(feature = "redis")]
mod redis_store;
#[cfg(any(feature = "sqlite", feature = "pg", feature = "mysql"))]
mod sql;
#[cfg(feature = "sqlite")]
mod sqlite;
mod store;
mod terminator;
mod text;

pub use delegate::Delegate;
pub use durability::CrashDurability;
pub use error::StoreError;
pub use flaw::StoreFlaw;
pub use mem::MemStore;
#[cfg(feature = "mysql")]
pub use mysql::{MySqlStore, MYSQL_SCHEMA};
pub use panic::panic_message;
#[cfg(feature = "pg")]
pub use pg::{PgStore, PG_APPLICATION_NAME, POSTGRES_SCHEMA};
#[cfg(feature = "redis")]
pub use redis_store::RedisStore;
#[cfg(feature = "sqlite")]
pub use sqlite::{SqliteStore, SQLITE_SCHEMA};
pub use store::IdempotencyStore;
pub use terminator::Terminator;
pub use text::{mask_url, plain as plain_error};
