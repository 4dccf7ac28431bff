//! What executing a request means in the simulated API: validation, the
//! downstream key, and the completion (response, local effect, outbox
//! message). Shared by servers and the reconciler, so a resumed execution
//! finishes exactly as the original would have.

use idemsim_model::{
    Bytes, Completion, DownstreamKey, Effects, Fingerprint, LocalEffect, MessageId, OutboxMessage, Request, Scope,
    StoredResponse,
};

/// The `amount` of a JSON body, if there is one (an integer).
pub fn amount_of(request: &Request) -> Option<i64> {
    /// Only the field read; the rest of the body is skipped, not built.
    #[derive(serde::Deserialize)]
    struct Body {
        amount: Option<i64>,
    }
    // A struct also deserializes from a JSON array; only an object has fields.
    if request.body.0.trim_ascii_start().first() != Some(&b'{') {
        return None;
    }
    serde_json::from_slice::<Body>(&request.body.0).ok()?.amount
}

/// Validation before execution begins: the body must carry a positive
/// integer `amount`. A failure is answered 400 and not stored.
pub fn validate(request: &Request) -> Result<(), String> {
    match amount_of(request) {
        Some(a) if a > 0 => Ok(()),
        Some(a) => Err(format!("amount must be positive, got {a}")),
        None => Err("amount is required".to_string()),
    }
}

/// The downstream key, derived from the record (its scope and fingerprint),
/// so every attempt of one execution passes the same key.
pub fn downstream_key(scope: &Scope, fingerprint: &Fingerprint) -> DownstreamKey {
    // `format!("dk:{scope}:{}", fingerprint.short())`, without the
    // formatting machinery (one per execution).
    DownstreamKey(["dk:", &scope.caller.0, "/", &scope.key.0, ":", fingerprint.short()].concat().into())
}

/// The broken derivation of `Variant::DownstreamKeyFromAttempt`: one key
/// per attempt, so every resume is a new payment.
pub fn attempt_downstream_key(scope: &Scope, attempt: idemsim_model::Attempt) -> DownstreamKey {
    DownstreamKey(format!("dk:{scope}:attempt-{}", attempt.0).into())
}

/// The request as recovery-point data, and back.
pub fn recovery_data(request: &Request) -> Bytes {
    Bytes(serde_json::to_vec(request).expect("a request always serializes"))
}

/// The request back from recovery-point data.
pub fn request_from(data: &Bytes) -> Option<Request> {
    serde_json::from_slice(&data.0).ok()
}

/// Everything the completing transaction writes for `request`; `stamp`
/// (see `Env::stamp`) goes into the response.
pub fn completion(scope: &Scope, request: &Request, charge: Option<&str>, stamp: Option<&str>) -> Completion {
    let effects = Effects::of_path(&request.path);
    let amount = amount_of(request).unwrap_or(0);
    let scope = [&*scope.caller.0, "/", &*scope.key.0].concat();
    let mut body = String::with_capacity(128);
    let mut put = |parts: &[&str]| parts.iter().for_each(|part| body.push_str(part));
    put(&[r#"{"for":""#, &scope, r#"","path":""#, &request.path, r#"","amount":"#, &amount.to_string()]);
    if let Some(charge) = charge {
        put(&[r#","charge":""#, charge, "\""]);
    }
    if effects.local {
        put(&[r#","order":"order:"#, &scope, "\""]);
    }
    if let Some(stamp) = stamp {
        put(&[r#","execution":""#, stamp, "\""]);
    }
    put(&["}"]);
    let local_effect = effects.local.then(|| LocalEffect { id: ["order:", &scope].concat(), data: Bytes::text(&body) });
    let outbox = if effects.message {
        vec![OutboxMessage {
            id: MessageId(["msg:", &scope].concat().into()),
            topic: "checkout.completed".into(),
            payload: Bytes::text(&body),
        }]
    } else {
        Vec::new()
    };
    Completion { response: StoredResponse { status: 201, body: Bytes(body.into_bytes()) }, local_effect, outbox }
}

#[cfg(test)]
mod tests {
    use super::*;
    use idemsim_model::{CallerId, IdempotencyKey};

    #[test]
    fn the_downstream_key_is_scope_and_short_fingerprint() {
        let r = request("/orders", r#"{"amount":5}"#);
        let (scope, fp) = (r.scope().unwrap(), Fingerprint::of("POST", "/orders", &r.body.0));
        assert_eq!(downstream_key(&scope, &fp).0.as_str(), format!("dk:{scope}:{}", fp.short()));
        assert!(downstream_key(&scope, &fp).0.starts_with("dk:acme/k:"));
    }

    fn request(path: &str, body: &str) -> Request {
        Request {
            caller: CallerId("acme".into()),
            key: Some(IdempotencyKey("k".into())),
            method: "POST".into(),
            path: path.into(),
            body: Bytes::text(body),
        }
    }

    #[test]
    fn the_amount_is_an_integer_field_of_a_json_object() {
        let amount = |body: &str| amount_of(&request("/orders", body));
        assert_eq!(amount(r#"{"currency":"eur","amount":7}"#), Some(7));
        for none in [r#"{"amount":"7"}"#, r#"{"amount":1.5}"#, r#"{"amount":null}"#, "[7]", "{}", "nope"] {
            assert_eq!(amount(none), None, "{none}");
        }
    }

    #[test]
    fn validation_needs_a_positive_amount() {
        assert!(validate(&request("/orders", r#"{"amount":5}"#)).is_ok());
        assert!(validate(&request("/orders", r#"{"amount":-5}"#)).unwrap_err().contains("positive"));
        assert!(validate(&request("/orders", "nope")).is_err());
    }

    #[test]
    fn a_checkout_commits_a_row_and_a_message() {
        let r = request("/checkout", r#"{"amount":5}"#);
        let c = completion(&Scope::new("acme", "k"), &r, Some("ch_1"), None);
        assert_eq!(c.response.status, 201);
        assert!(c.response.body.lossy().contains("ch_1"));
        assert!(c.local_effect.is_some());
        assert_eq!(c.outbox.len(), 1);
        assert_eq!(request_from(&recovery_data(&r)), Some(r));
    }
}
