//! Request fingerprints: a hash of method, path and canonical body.

use crate::bytes::hex;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::fmt;

/// SHA-256 (hex) of method, path and the canonical body. Two requests with the
/// same key but different fingerprints are different operations (422).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Fingerprint(pub crate::Text);

impl Fingerprint {
    /// Fingerprints a request. A body that parses as JSON is canonicalised
    /// first (object keys sorted, no insignificant whitespace), so key order and
    /// formatting do not change the fingerprint; any other body is hashed as is.
    pub fn of(method: &str, path: &str, body: &[u8]) -> Fingerprint {
        let mut hasher = Sha256::new();
        for part in [method.as_bytes(), path.as_bytes()] {
            hasher.update((part.len() as u64).to_be_bytes());
            hasher.update(part);
        }
        match canonical_json(body) {
            Some(canonical) => {
                hasher.update(b"json");
                hasher.update(&canonical);
            }
            None => {
                hasher.update(b"raw");
                hasher.update(body);
            }
        }
        Fingerprint(hex(&hasher.finalize()).into())
    }

    /// The first 8 hex digits, for stories and timelines.
    pub fn short(&self) -> &str {
        self.0.get(..8).unwrap_or(&self.0)
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.short())
    }
}

/// Remembers fingerprints by body, method and path, so a request seen many
/// times (retries, duplicates, copies on other servers) is hashed once.
/// The answer is always `Fingerprint::of` of the same three values. (A
/// hash map with a fixed hasher: nothing iterates it, so its order cannot
/// reach a run.)
#[derive(Clone, Debug, Default)]
pub struct FingerprintMemo {
    by_body: crate::lookup::Lookup<Vec<u8>, Vec<(String, String, Fingerprint)>>,
}

impl FingerprintMemo {
    /// The fingerprint of a request, computed once per distinct request.
    pub fn of(&mut self, method: &str, path: &str, body: &[u8]) -> Fingerprint {
        let known = self.by_body.get(body).and_then(|seen| seen.iter().find(|(m, p, _)| m == method && p == path));
        if let Some((_, _, fp)) = known {
            return fp.clone();
        }
        let fp = Fingerprint::of(method, path, body);
        self.by_body.entry(body.to_vec()).or_default().push((method.to_string(), path.to_string(), fp.clone()));
        fp
    }

    /// How many distinct bodies it remembers (a bound for long-lived memos).
    pub fn bodies(&self) -> usize {
        self.by_body.len()
    }
}

/// The canonical text of a JSON body, or `None` when it is not JSON.
fn canonical_json(body: &[u8]) -> Option<Vec<u8>> {
    let value: serde_json::Value = serde_json::from_slice(body).ok()?;
    let mut out = Vec::with_capacity(body.len());
    write_canonical(&value, &mut out);
    Some(out)
}

/// Writes `value` with object keys sorted by byte order, whatever map type
/// serde_json was built with (its `preserve_order` feature keeps insertion
/// order, and feature unification could switch it on behind our back).
/// Strings and scalars are written by serde_json's compact serializer, as
/// `Value`'s own `Display` writes them.
fn write_canonical(value: &serde_json::Value, out: &mut Vec<u8>) {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push(b'{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                compact(k.as_str(), out);
                out.push(b':');
                write_canonical(v, out);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(v, out);
            }
            out.push(b']');
        }
        scalar => compact(scalar, out),
    }
}

/// Writes `item` as serde_json's compact serializer does (into a vector,
/// which cannot fail).
fn compact(item: &(impl serde::Serialize + ?Sized), out: &mut Vec<u8>) {
    item.serialize(&mut serde_json::Serializer::new(out)).expect("writing JSON to a vector cannot fail");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_order_and_whitespace_do_not_matter() {
        let a = Fingerprint::of("POST", "/charges", br#"{"amount": 5, "currency":"eur"}"#);
        let b = Fingerprint::of("POST", "/charges", b"{\"currency\":\"eur\",\n  \"amount\":5}");
        assert_eq!(a, b);
    }

    #[test]
    fn nested_objects_are_canonical_too() {
        let a = Fingerprint::of("POST", "/x", br#"{"o":{"b":[1,{"d":1,"c":2}],"a":null}}"#);
        let b = Fingerprint::of("POST", "/x", br#"{ "o" : { "a":null, "b":[1,{"c":2,"d":1}] } }"#);
        assert_eq!(a, b);
        assert_eq!(canonical_json(br#"{"b":1,"a":[true]}"#).unwrap(), br#"{"a":[true],"b":1}"#);
    }

    #[test]
    fn strings_and_numbers_are_written_as_serde_json_writes_them() {
        let body = br#"{"z\"q":"tab\tand \u00e9 \/","n":-1.5e3,"i":18446744073709551615,"t":[null,false]}"#;
        let want = r#"{"i":18446744073709551615,"n":-1500.0,"t":[null,false],"z\"q":"tab\tand é /"}"#;
        assert_eq!(String::from_utf8(canonical_json(body).unwrap()).unwrap(), want);
        let value: serde_json::Value = serde_json::from_slice(body).unwrap();
        assert_eq!(value["z\"q"].to_string(), r#""tab\tand é /""#, "as Value's Display writes it");
    }

    #[test]
    fn method_path_and_values_matter() {
        let base = Fingerprint::of("POST", "/charges", br#"{"amount":5}"#);
        assert_ne!(base, Fingerprint::of("PUT", "/charges", br#"{"amount":5}"#));
        assert_ne!(base, Fingerprint::of("POST", "/orders", br#"{"amount":5}"#));
        assert_ne!(base, Fingerprint::of("POST", "/charges", br#"{"amount":6}"#));
    }

    #[test]
    fn parts_are_length_prefixed() {
        // "POST" + "/a" must not collide with "POST/" + "a".
        assert_ne!(Fingerprint::of("POST", "/a", b""), Fingerprint::of("POST/", "a", b""));
    }

    #[test]
    fn non_json_bodies_hash_raw_and_differ_from_json() {
        let raw = Fingerprint::of("POST", "/x", b"not json");
        assert_eq!(raw, Fingerprint::of("POST", "/x", b"not json"));
        assert_ne!(Fingerprint::of("POST", "/x", b"1"), Fingerprint::of("POST", "/x", b" 1x"));
        assert_eq!(raw.0.len(), 64);
    }

    #[test]
    fn the_memo_answers_what_of_answers() {
        let mut memo = FingerprintMemo::default();
        let cases = [
            ("POST", "/a", &b"{\"x\":1}"[..]),
            ("PUT", "/a", b"{\"x\":1}"),
            ("POST", "/b", b"{\"x\":1}"),
            ("POST", "/a", b"raw"),
        ];
        for _ in 0..2 {
            for (method, path, body) in cases {
                assert_eq!(memo.of(method, path, body), Fingerprint::of(method, path, body));
            }
        }
        assert_eq!(memo.by_body.len(), 2);
    }
}
