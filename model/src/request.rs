//! Requests, responses and the effects an endpoint has.

use crate::bytes::Bytes;
use crate::fingerprint::Fingerprint;
use crate::ids::{CallerId, IdempotencyKey, Scope};
use crate::text::Text;
use serde::{Deserialize, Serialize};

/// An HTTP-like request to a keyed endpoint.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Request {
    /// Who makes the request (from authentication, never from the body).
    pub caller: CallerId,
    /// The `Idempotency-Key` header, if the client sent one.
    pub key: Option<IdempotencyKey>,
    /// HTTP method.
    pub method: Text,
    /// Endpoint path; it decides the effects (see [`Effects::of_path`]).
    pub path: Text,
    /// Request body.
    pub body: Bytes,
}

impl Request {
    /// The record scope, or `None` when the key is missing (answer 400).
    pub fn scope(&self) -> Option<Scope> {
        let key = self.key.clone()?;
        Some(Scope { caller: self.caller.clone(), key })
    }

    /// The request fingerprint (method, path, canonical body).
    pub fn fingerprint(&self) -> Fingerprint {
        Fingerprint::of(&self.method, &self.path, &self.body.0)
    }

    /// The request fingerprint, through a memo.
    pub fn fingerprint_in(&self, memo: &mut crate::fingerprint::FingerprintMemo) -> Fingerprint {
        memo.of(&self.method, &self.path, &self.body.0)
    }
}

/// A response as stored and replayed: status and body bytes.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct StoredResponse {
    /// HTTP status code.
    pub status: u16,
    /// Body bytes, replayed byte for byte.
    pub body: Bytes,
}

impl StoredResponse {
    /// A response with a text body.
    pub fn new(status: u16, body: &str) -> StoredResponse {
        StoredResponse { status, body: Bytes::text(body) }
    }
}

/// What executing a request does besides answering.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Effects {
    /// A row written in the same database as the record (e.g. an order).
    pub local: bool,
    /// A call to the downstream dependency (e.g. a card charge).
    pub external: bool,
    /// A follow-on message staged in the outbox.
    pub message: bool,
}

impl Effects {
    /// The effects of the simulated API's endpoints:
    /// `/orders` writes a local row, `/charges` calls the dependency,
    /// `/checkout` does both and queues a message. Unknown paths do nothing.
    pub fn of_path(path: &str) -> Effects {
        match path {
            "/orders" => Effects { local: true, external: false, message: false },
            "/charges" => Effects { local: false, external: true, message: false },
            "/checkout" => Effects { local: true, external: true, message: true },
            _ => Effects::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(key: Option<&str>) -> Request {
        Request {
            caller: CallerId("acme".into()),
            key: key.map(|k| IdempotencyKey(k.into())),
            method: "POST".into(),
            path: "/orders".into(),
            body: Bytes::text("{}"),
        }
    }

    #[test]
    fn scope_needs_a_key() {
        assert_eq!(req(None).scope(), None);
        assert_eq!(req(Some("k")).scope(), Some(Scope::new("acme", "k")));
    }

    #[test]
    fn endpoints_have_fixed_effects() {
        assert!(Effects::of_path("/orders").local);
        assert!(!Effects::of_path("/orders").external);
        let checkout = Effects::of_path("/checkout");
        assert!(checkout.local && checkout.external && checkout.message);
        assert_eq!(Effects::of_path("/nope"), Effects::default());
    }
}
