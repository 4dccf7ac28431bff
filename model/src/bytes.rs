//! `Bytes`: a body that stays readable in JSON traces.

use serde::de::{self, Deserializer};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Opaque bytes (a request or response body). Serialized as a JSON string when
/// the bytes are UTF-8, else as `{"hex": "..."}`, so traces stay readable and
/// every byte round-trips.
#[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bytes(pub Vec<u8>);

impl Bytes {
    /// The bytes of a string.
    pub fn text(s: &str) -> Bytes {
        Bytes(s.as_bytes().to_vec())
    }

    /// The body as text, with invalid UTF-8 replaced.
    pub fn lossy(&self) -> String {
        String::from_utf8_lossy(&self.0).into_owned()
    }
}

impl fmt::Debug for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match std::str::from_utf8(&self.0) {
            Ok(s) => write!(f, "{s:?}"),
            Err(_) => write!(f, "hex:{}", hex(&self.0)),
        }
    }
}

impl Serialize for Bytes {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match std::str::from_utf8(&self.0) {
            Ok(s) => serializer.serialize_str(s),
            Err(_) => {
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry("hex", &hex(&self.0))?;
                map.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Bytes, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Repr {
            Text(String),
            Hex { hex: String },
        }
        match Repr::deserialize(deserializer)? {
            Repr::Text(s) => Ok(Bytes(s.into_bytes())),
            Repr::Hex { hex } => unhex(&hex).map(Bytes).ok_or_else(|| de::Error::custom("invalid hex in bytes")),
        }
    }
}

/// Lower-case hex of some bytes.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    // Sized once and filled in place: every fingerprint is written here.
    let mut digits = vec![0u8; 2 * bytes.len()];
    for (pair, b) in digits.chunks_exact_mut(2).zip(bytes) {
        pair[0] = DIGITS[usize::from(b >> 4)];
        pair[1] = DIGITS[usize::from(b & 15)];
    }
    String::from_utf8(digits).expect("hex digits are ASCII")
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_bytes_serialize_as_string() {
        let json = serde_json::to_string(&Bytes::text("{\"a\":1}")).unwrap();
        assert_eq!(json, r#""{\"a\":1}""#);
    }

    #[test]
    fn binary_bytes_round_trip_through_hex() {
        let b = Bytes(vec![0xff, 0x00, 0x7f]);
        let json = serde_json::to_string(&b).unwrap();
        assert_eq!(json, r#"{"hex":"ff007f"}"#);
        assert_eq!(serde_json::from_str::<Bytes>(&json).unwrap(), b);
    }

    #[test]
    fn malformed_hex_is_an_error() {
        assert!(serde_json::from_str::<Bytes>(r#"{"hex":"f"}"#).is_err());
        assert!(serde_json::from_str::<Bytes>(r#"{"hex":"zz"}"#).is_err());
    }
}
