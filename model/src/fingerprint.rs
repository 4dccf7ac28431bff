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
    ///
    /// What is hashed: the method and the path, each after its length (a
    /// LEB128 varint), then `j` and the canonical body, or `r` and the raw
    /// body. The encoding is injective (each part's end is known), and
    /// compact: a typical request (`POST`, a short path, a small JSON body)
    /// fits one SHA-256 block.
    pub fn of(method: &str, path: &str, body: &[u8]) -> Fingerprint {
        let mut hasher = Sha256::new();
        for part in [method.as_bytes(), path.as_bytes()] {
            update_len(&mut hasher, part.len());
            hasher.update(part);
        }
        match canonical_json(body) {
            Some(canonical) => {
                hasher.update(b"j");
                hasher.update(&*canonical);
            }
            None => {
                hasher.update(b"r");
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

/// Feeds `len` to `hasher` as a LEB128 varint: seven bits a byte, low
/// first, the high bit set on every byte but the last.
fn update_len(hasher: &mut Sha256, mut len: usize) {
    let mut bytes = [0u8; 10];
    let mut n = 0;
    loop {
        let low = (len & 0x7f) as u8;
        len >>= 7;
        bytes[n] = low | if len > 0 { 0x80 } else { 0 };
        n += 1;
        if len == 0 {
            break;
        }
    }
    hasher.update(&bytes[..n]);
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

/// The canonical text of a JSON body, or `None` when it is not JSON: the
/// body itself when it is canonical already (checked without building a
/// value, see [`crate::canonical`]), else written from its parsed value.
fn canonical_json(body: &[u8]) -> Option<std::borrow::Cow<'_, [u8]>> {
    if crate::canonical::is_canonical(body) {
        return Some(std::borrow::Cow::Borrowed(body));
    }
    parse_canonical(body).map(std::borrow::Cow::Owned)
}

/// The canonical text of a JSON body by parsing and writing it again.
fn parse_canonical(body: &[u8]) -> Option<Vec<u8>> {
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
        assert_eq!(&*canonical_json(br#"{"b":1,"a":[true]}"#).unwrap(), br#"{"a":[true],"b":1}"#);
    }

    #[test]
    fn strings_and_numbers_are_written_as_serde_json_writes_them() {
        let body = br#"{"z\"q":"tab\tand \u00e9 \/","n":-1.5e3,"i":18446744073709551615,"t":[null,false]}"#;
        let want = r#"{"i":18446744073709551615,"n":-1500.0,"t":[null,false],"z\"q":"tab\tand é /"}"#;
        assert_eq!(String::from_utf8(canonical_json(body).unwrap().into_owned()).unwrap(), want);
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
    fn the_hashed_bytes_are_length_varints_then_a_tag_and_the_body() {
        let digest = |bytes: &[u8]| hex(&Sha256::digest(bytes));
        let json = [&b"\x04POST\x08/charges"[..], b"j", br#"{"amount":5}"#].concat();
        assert_eq!(Fingerprint::of("POST", "/charges", br#"{"amount": 5}"#).0.as_str(), digest(&json));
        // A 200-byte path: its length takes two bytes (0xc8 0x01).
        let long = "/".repeat(200);
        let raw = [&b"\x04POST\xc8\x01"[..], long.as_bytes(), b"r", b"x y"].concat();
        assert_eq!(Fingerprint::of("POST", &long, b"x y").0.as_str(), digest(&raw));
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

    /// A JSON value from a small alphabet of keys and scalars, so that
    /// objects share keys and bodies hit the fast path's edge cases.
    fn json() -> impl proptest::strategy::Strategy<Value = serde_json::Value> {
        use proptest::prelude::*;
        use serde_json::Value;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
            "[a-c\u{e9}\"\\\\/ \t]{0,3}".prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::vec(("[a-c]{0,2}", inner), 0..4)
                    .prop_map(|entries| Value::Object(entries.into_iter().collect())),
            ]
        })
    }

    /// Whether `value` holds only what the fast path takes: integers,
    /// booleans, nulls, and strings of printable ASCII that need no escape.
    fn plain(value: &serde_json::Value) -> bool {
        use serde_json::Value;
        let plain_text = |s: &str| s.bytes().all(|b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\');
        match value {
            Value::Number(n) => !n.is_f64(),
            Value::String(s) => plain_text(s),
            Value::Array(items) => items.iter().all(plain),
            Value::Object(map) => map.iter().all(|(k, v)| plain_text(k) && plain(v)),
            Value::Null | Value::Bool(_) => true,
        }
    }

    proptest::proptest! {
        /// The fast path never changes a fingerprint: whatever it takes for
        /// canonical is what the full parse writes back.
        #[test]
        fn the_fast_path_agrees_with_the_full_parse(value in json(), cut in 0usize..64, byte in proptest::prelude::any::<u8>()) {
            let compact = serde_json::to_vec(&value).unwrap();
            let canonical = parse_canonical(&compact).unwrap();
            // The fast path takes exactly the canonical texts of plain values.
            proptest::prop_assert_eq!(crate::canonical::is_canonical(&canonical), plain(&value), "{}", String::from_utf8_lossy(&canonical));
            // Written by serde_json's serializer, in whatever key order it kept.
            let written = [compact, canonical.clone()];
            // And a corrupted copy: one byte changed, or the text cut short.
            let mut broken = canonical.clone();
            match cut < broken.len() {
                true => broken[cut] = byte,
                false => broken.truncate(cut % (broken.len() + 1)),
            }
            for body in [&written[0][..], &written[1][..], &broken[..]] {
                if crate::canonical::is_canonical(body) {
                    let written_back = parse_canonical(body);
                    proptest::prop_assert_eq!(written_back.as_deref(), Some(body));
                }
                proptest::prop_assert_eq!(canonical_json(body).map(|c| c.into_owned()), parse_canonical(body));
            }
        }
    }
}
