//! [`Text`]: an immutable, shared string for the ids that every event,
//! message and record carries (callers, keys, fingerprints, paths).
//!
//! A run clones these thousands of times (into events, store operations,
//! retries); a clone of a `Text` is a reference count, not an allocation
//! and a copy. It reads as a `&str` (it derefs to one), compares, orders
//! and hashes as one, and serializes as a plain string.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

/// An immutable string, cheap to clone; see the module doc.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Text(Arc<str>);

impl Text {
    /// The text as a `&str`.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for Text {
    fn default() -> Text {
        Text::from("")
    }
}

impl Deref for Text {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Text {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl AsRef<[u8]> for Text {
    fn as_ref(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

impl Borrow<str> for Text {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Text {
        Text(Arc::from(s))
    }
}

impl From<String> for Text {
    fn from(s: String) -> Text {
        Text(Arc::from(s))
    }
}

impl From<&String> for Text {
    fn from(s: &String) -> Text {
        Text::from(s.as_str())
    }
}

impl From<Text> for String {
    fn from(t: Text) -> String {
        t.0.to_string()
    }
}

impl PartialEq<str> for Text {
    fn eq(&self, other: &str) -> bool {
        &*self.0 == other
    }
}

impl PartialEq<&str> for Text {
    fn eq(&self, other: &&str) -> bool {
        &*self.0 == *other
    }
}

impl PartialEq<String> for Text {
    fn eq(&self, other: &String) -> bool {
        *self.0 == **other
    }
}

impl PartialEq<Text> for String {
    fn eq(&self, other: &Text) -> bool {
        **self == *other.0
    }
}

impl PartialEq<Text> for str {
    fn eq(&self, other: &Text) -> bool {
        *self == *other.0
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl Serialize for Text {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Text, D::Error> {
        String::deserialize(d).map(Text::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_compares_and_serializes_as_a_string() {
        let t = Text::from("acme");
        let u = t.clone();
        assert!(Arc::ptr_eq(&t.0, &u.0), "a clone shares the text");
        assert_eq!(t, "acme");
        assert_eq!(t.len(), 4);
        let (a, b) = (Text::from("a"), Text::from("b"));
        assert!(a < b, "ordered as strings");
        assert_eq!(format!("{t} {t:?}"), "acme \"acme\"");
        assert_eq!(serde_json::to_string(&t).unwrap(), "\"acme\"");
        assert_eq!(serde_json::from_str::<Text>("\"acme\"").unwrap(), t);
    }
}
