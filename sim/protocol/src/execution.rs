//! What executing a request means in the simulated API: validation, the
//! downstream key, and the completion (response, local effect, outbox
//! message). Shared by servers and the reconciler, so a resumed execution
//! finishes exactly as the original would have.

use idemsim_model::{
    Bytes, Completion, DownstreamKey, Effects, Fingerprint, LocalEffect, MessageId, OutboxMessage, Request, Scope,
    SimTime, StoredResponse,
};

/// The `amount` of a JSON body, if there is one (an integer).
pub fn amount_of(request: &Request) -> Option<i64> {
    let body = &request.body.0;
    match plain_amount(body) {
        Some(amount) => Some(amount),
        None => parsed_amount(body),
    }
}

/// [`amount_of`] by parsing the body.
fn parsed_amount(body: &[u8]) -> Option<i64> {
    /// Only the field read; the rest of the body is skipped, not built.
    #[derive(serde::Deserialize)]
    struct Body {
        amount: Option<i64>,
    }
    // A struct also deserializes from a JSON array; only an object has fields.
    if body.trim_ascii_start().first() != Some(&b'{') {
        return None;
    }
    serde_json::from_slice::<Body>(body).ok()?.amount
}

/// The amount of a body of exactly the shape the workload writes,
/// `{"amount":N}` or `{"amount":N,"currency":"abc"}` (N an integer without
/// leading zeros, at most 18 digits; a currency of lowercase letters), read
/// without a parse; `None` for any other body, which [`parsed_amount`]
/// reads. The amount is read twice per execution: parsing every time cost
/// 62,000 instructions of a default seed's 5.43M (1.1%; callgrind,
/// 2026-12-07), and a property test holds this to the parse.
fn plain_amount(body: &[u8]) -> Option<i64> {
    let rest = body.strip_prefix(br#"{"amount":"#)?;
    let (negative, rest) = match rest.strip_prefix(b"-") {
        Some(rest) => (true, rest),
        None => (false, rest),
    };
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    let leading_zero = digits > 1 && rest[0] == b'0';
    if digits == 0 || digits > 18 || leading_zero {
        return None;
    }
    let tail = &rest[digits..];
    let currency = tail.strip_prefix(br#","currency":""#).and_then(|t| t.strip_suffix(br#""}"#));
    let shaped = tail == b"}" || currency.is_some_and(|c| !c.is_empty() && c.iter().all(u8::is_ascii_lowercase));
    if !shaped {
        return None;
    }
    let value = rest[..digits].iter().fold(0i64, |n, d| n * 10 + i64::from(d - b'0'));
    Some(if negative { -value } else { value })
}

/// Why a request is refused before execution begins.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Invalid {
    /// The body carries no integer `amount`.
    #[error("amount is required")]
    AmountMissing,
    /// The amount is zero or negative.
    #[error("amount must be positive, got {0}")]
    AmountNotPositive(i64),
}

/// Validation before execution begins: the body must carry a positive
/// integer `amount`. A failure is answered 400 and not stored.
pub fn validate(request: &Request) -> Result<(), Invalid> {
    match amount_of(request) {
        Some(a) if a > 0 => Ok(()),
        Some(a) => Err(Invalid::AmountNotPositive(a)),
        None => Err(Invalid::AmountMissing),
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

/// The request as recovery-point data: its JSON. (A writer by hand, once
/// here, saved 11,500 instructions of a default seed's 5.43M, 0.2%: not
/// worth a second JSON writer.)
pub fn recovery_data(request: &Request) -> Bytes {
    Bytes(serde_json::to_vec(request).expect("a request always serializes"))
}

/// The request back from recovery-point data.
pub fn request_from(data: &Bytes) -> Option<Request> {
    serde_json::from_slice(&data.0).ok()
}

/// Everything the completing transaction writes for `request`; `stamp`
/// (see `Env::stamp`) goes into the response.
///
/// `created_at` is the record's: it names the key's lifetime, so the outbox
/// message id differs when a key is executed again after its record was
/// swept. That re-execution is a new operation (docs/protocol.md §8) and
/// its message a new message; under the old id the consumer would drop it
/// as a duplicate, and a store with a unique message id refuses it.
pub fn completion(
    scope: &Scope,
    created_at: SimTime,
    request: &Request,
    charge: Option<&str>,
    stamp: Option<&str>,
) -> Completion {
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
            id: MessageId(format!("msg:{scope}@{}", created_at.0).into()),
            topic: "checkout.completed".into(),
            payload: Bytes::text(&body),
        }]
    } else {
        Vec::new()
    };
    Completion { response: StoredResponse { status: 201, body: Bytes(body.into_bytes()) }, local_effect, outbox }
}

/// What the completing transaction writes when the dependency declined
/// the charge for good: the 402 as the operation's response, to be
/// replayed like any other, and neither the local effect nor a message.
pub fn declined(scope: &Scope, request: &Request, stamp: Option<&str>) -> Completion {
    let scope = [&*scope.caller.0, "/", &*scope.key.0].concat();
    let mut body = [r#"{"error":"payment declined","for":""#, &scope, r#"","path":""#, &request.path, "\""].concat();
    if let Some(stamp) = stamp {
        body.push_str(&[r#","execution":""#, stamp, "\""].concat());
    }
    body.push('}');
    Completion {
        response: StoredResponse { status: 402, body: Bytes(body.into_bytes()) },
        local_effect: None,
        outbox: Vec::new(),
    }
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
    fn the_plain_shape_is_read_without_a_parse() {
        assert_eq!(plain_amount(br#"{"amount":42,"currency":"eur"}"#), Some(42));
        assert_eq!(plain_amount(br#"{"amount":-5}"#), Some(-5));
        assert_eq!(plain_amount(br#"{"amount":0}"#), Some(0));
        for other in [
            &br#"{"amount":05}"#[..],
            br#"{"amount":-}"#,
            br#"{"amount":5,"amount":6}"#,
            br#"{"amount":5,"currency":"EUR"}"#,
            br#"{"amount":5,"currency":""}"#,
            br#"{"amount":5 }"#,
            br#"{"amount":1234567890123456789}"#,
            br#"{"amount":5.0}"#,
        ] {
            assert_eq!(plain_amount(other), None, "{}", String::from_utf8_lossy(other));
        }
    }

    proptest::proptest! {
        /// The fast path answers only where the parse would give the same
        /// amount, and `amount_of` always equals the parse: for the
        /// workload's shapes, for near misses (a byte changed, dropped or
        /// repeated), and for other JSON.
        #[test]
        fn amount_of_always_equals_the_parse(
            amount in proptest::prop_oneof![-2_000i64..2_000, proptest::prelude::any::<i64>()],
            currency in "[a-z]{0,3}|[A-Z]",
            with_currency in proptest::prelude::any::<bool>(),
            edit in proptest::prelude::any::<(usize, u8, u8)>(),
        ) {
            let plain = match with_currency {
                true => format!(r#"{{"amount":{amount},"currency":"{currency}"}}"#),
                false => format!(r#"{{"amount":{amount}}}"#),
            };
            let mut bodies = vec![plain.clone().into_bytes()];
            let (at, byte, how) = edit;
            let mut edited = plain.into_bytes();
            let at = at % edited.len();
            match how % 3 {
                0 => edited[at] = byte,
                1 => { edited.remove(at); }
                _ => edited.insert(at, edited[at]),
            }
            bodies.push(edited);
            for body in bodies {
                let parsed = parsed_amount(&body);
                if let Some(fast) = plain_amount(&body) {
                    proptest::prop_assert_eq!(Some(fast), parsed, "{}", String::from_utf8_lossy(&body));
                }
                let r = Request { body: Bytes(body), ..request("/orders", "") };
                proptest::prop_assert_eq!(amount_of(&r), parsed);
            }
        }
    }

    proptest::proptest! {
        /// Recovery data gives the request back, escapes, a missing key
        /// and bytes that are not UTF-8 included.
        #[test]
        fn recovery_data_gives_the_request_back(
            texts in proptest::collection::vec("(?s).{0,12}|[a-z/]{0,12}", 4),
            body in proptest::prop_oneof![
                proptest::strategy::Strategy::prop_map("(?s).{0,24}", String::into_bytes),
                proptest::collection::vec(proptest::prelude::any::<u8>(), 0..24),
            ],
            keyed in proptest::prelude::any::<bool>(),
        ) {
            let r = Request {
                caller: CallerId(texts[0].as_str().into()),
                key: keyed.then(|| IdempotencyKey(texts[1].as_str().into())),
                method: texts[2].as_str().into(),
                path: texts[3].as_str().into(),
                body: Bytes(body),
            };
            proptest::prop_assert_eq!(request_from(&recovery_data(&r)), Some(r));
        }
    }

    #[test]
    fn validation_needs_a_positive_amount() {
        assert!(validate(&request("/orders", r#"{"amount":5}"#)).is_ok());
        assert_eq!(validate(&request("/orders", r#"{"amount":-5}"#)), Err(Invalid::AmountNotPositive(-5)));
        assert_eq!(validate(&request("/orders", "nope")), Err(Invalid::AmountMissing));
    }

    #[test]
    fn a_checkout_commits_a_row_and_a_message() {
        let r = request("/checkout", r#"{"amount":5}"#);
        let c = completion(&Scope::new("acme", "k"), SimTime(7), &r, Some("ch_1"), None);
        assert_eq!(c.response.status, 201);
        assert!(c.response.body.lossy().contains("ch_1"));
        assert!(c.local_effect.is_some());
        assert_eq!(c.outbox.len(), 1);
        assert_eq!(c.outbox[0].id.0.as_str(), "msg:acme/k@7");
        let again = completion(&Scope::new("acme", "k"), SimTime(9), &r, Some("ch_1"), None);
        assert_ne!(again.outbox[0].id, c.outbox[0].id, "a new lifetime of the key is a new message");
        assert_eq!(request_from(&recovery_data(&r)), Some(r));
    }
}
