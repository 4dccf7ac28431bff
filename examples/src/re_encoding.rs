//! A protocol variant with a step no built-in variant has.

use idemsim::model::StoredResponse;
use idemsim::sim::protocol::Protocol;

/// Replays a completed record's response with its JSON body parsed and
/// encoded again (keys sorted), as a framework that deserialises the
/// stored body into an object and serialises it back would: the status is
/// right and the JSON means the same, but the bytes differ from the ones
/// the first answer carried. Every other step is the trait's correct one.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReEncodingReplay;

impl Protocol for ReEncodingReplay {
    fn name(&self) -> String {
        "re-encoding-replay".into()
    }

    fn replay(&self, stored: StoredResponse) -> StoredResponse {
        match serde_json::from_slice::<serde_json::Value>(&stored.body.0) {
            Ok(json) => StoredResponse::new(stored.status, &json.to_string()),
            Err(_) => stored,
        }
    }
}
