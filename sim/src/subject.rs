//! What a run tests: a store (a built-in kind, or any store factory) and
//! a protocol.

use crate::config::SimConfig;
use crate::protocol::Protocol;
use idemsim_store::{IdempotencyStore, MemStore, SqliteStore, StoreError};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

/// Which built-in store the database node runs: the command line's
/// shortcut for a [`Subject`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StoreKind {
    /// `MemStore` (the default).
    #[default]
    Mem,
    /// `SqliteStore` on a private in-memory database.
    Sqlite,
}

impl StoreKind {
    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            StoreKind::Mem => "mem",
            StoreKind::Sqlite => "sqlite",
        }
    }

    /// Parses a name.
    pub fn from_name(name: &str) -> Option<StoreKind> {
        [StoreKind::Mem, StoreKind::Sqlite].into_iter().find(|k| k.name() == name)
    }
}

/// Opens a fresh, empty store for one run. Called once per seed, on the
/// seed's thread, before the simulation starts.
pub type StoreFactory = Arc<dyn Fn() -> Result<Arc<dyn IdempotencyStore>, StoreError> + Send + Sync>;

/// Makes the protocol for one run: every seed, worker and shrink candidate
/// gets its own instance, so state a protocol keeps (a cache, a counter)
/// never leaks from one run into another.
pub type ProtocolFactory = Arc<dyn Fn() -> Arc<dyn Protocol> + Send + Sync>;

/// What a run tests: a store (any [`IdempotencyStore`], opened fresh for
/// each seed) and a protocol (any [`Protocol`], made fresh for each seed;
/// by default the config's [`Steps`](crate::Steps)).
///
/// ```
/// use idemsim_sim::{run_seed, SimConfig, Subject};
/// use idemsim_store::MemStore;
///
/// let mine = Subject::store("my-mem", || Ok(MemStore::new()));
/// let out = run_seed(&SimConfig::default(), &mine, 3).unwrap();
/// assert!(!out.failed());
/// ```
#[derive(Clone)]
pub struct Subject {
    store_name: String,
    open: StoreFactory,
    protocol: Option<ProtocolFactory>,
}

impl Subject {
    /// A store, opened by `open` for every seed, running the config's steps.
    pub fn store<S, F>(name: &str, open: F) -> Subject
    where
        S: IdempotencyStore + 'static,
        F: Fn() -> Result<S, StoreError> + Send + Sync + 'static,
    {
        let open: StoreFactory = Arc::new(move || open().map(|s| Arc::new(s) as Arc<dyn IdempotencyStore>));
        Subject { store_name: name.to_string(), open, protocol: None }
    }

    /// The same store with `protocol` instead of the config's steps; every
    /// run gets a clone of it. (A clone that shares state, such as an
    /// `Arc` of a protocol, shares it between runs: use
    /// [`protocol_with`](Subject::protocol_with) for such a protocol.)
    pub fn protocol<P: Protocol + Clone + 'static>(self, protocol: P) -> Subject {
        self.protocol_with(move || protocol.clone())
    }

    /// The same store with a protocol that `make` builds afresh for every run.
    pub fn protocol_with<P, F>(mut self, make: F) -> Subject
    where
        P: Protocol + 'static,
        F: Fn() -> P + Send + Sync + 'static,
    {
        self.protocol = Some(Arc::new(move || Arc::new(make()) as Arc<dyn Protocol>));
        self
    }

    /// The same store with a protocol factory (as [`own_protocol`](Subject::own_protocol) returns).
    pub fn protocol_factory(mut self, make: ProtocolFactory) -> Subject {
        self.protocol = Some(make);
        self
    }

    /// The store's name, as reports print it.
    pub fn store_name(&self) -> &str {
        &self.store_name
    }

    /// The protocol's name under `config`: the subject's own, or the
    /// config's steps.
    pub fn protocol_name(&self, config: &SimConfig) -> String {
        self.protocol_for(config).name()
    }

    /// True when the subject brings its own protocol (the config's steps
    /// are then not used).
    pub fn has_own_protocol(&self) -> bool {
        self.protocol.is_some()
    }

    /// The factory of the subject's own protocol, if it brings one.
    pub fn own_protocol(&self) -> Option<ProtocolFactory> {
        self.protocol.clone()
    }

    /// A fresh instance of the protocol a run of `config` runs.
    pub fn protocol_for(&self, config: &SimConfig) -> Arc<dyn Protocol> {
        match (&self.protocol, config.steps == crate::Steps::default()) {
            (Some(make), _) => make(),
            // The same steps without the per-step dispatch of `Steps`.
            (None, true) => Arc::new(crate::protocol::Correct),
            (None, false) => config.steps.protocol(),
        }
    }

    pub(crate) fn open(&self) -> Result<Arc<dyn IdempotencyStore>, crate::RunError> {
        match std::panic::catch_unwind(AssertUnwindSafe(|| (self.open)())) {
            Ok(Ok(store)) => Ok(store),
            Ok(Err(e)) => Err(crate::RunError::Store(format!("store '{}' could not be opened: {e}", self.store_name))),
            Err(panic) => Err(crate::RunError::Store(format!(
                "store '{}' panicked while opening: {}",
                self.store_name,
                idemsim_store::panic_message(&*panic)
            ))),
        }
    }
}

impl std::fmt::Debug for Subject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let protocol = self.protocol.as_ref().map(|make| make().name());
        f.debug_struct("Subject").field("store", &self.store_name).field("protocol", &protocol).finish()
    }
}

impl From<StoreKind> for Subject {
    fn from(kind: StoreKind) -> Subject {
        match kind {
            StoreKind::Mem => Subject::store("mem", || Ok(MemStore::new())),
            StoreKind::Sqlite => Subject::store("sqlite", SqliteStore::in_memory),
        }
    }
}

impl From<&Subject> for Subject {
    fn from(subject: &Subject) -> Subject {
        subject.clone()
    }
}
