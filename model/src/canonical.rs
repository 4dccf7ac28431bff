//! Recognising a JSON body that is already in canonical form, without
//! building a value: the common case (clients serialise their bodies
//! compactly, keys in order) then hashes the body as it came.
//!
//! The check is conservative. It answers `true` only for bytes that
//! serde_json parses and that [`crate::fingerprint`]'s canonical writer
//! writes back unchanged: no whitespace, object keys strictly ascending
//! (byte order, so no duplicates), strings of printable ASCII without
//! escapes, integers without leading zeros that fit `u64` or `i64` (and
//! not `-0`), `true`, `false`, `null`, nesting at most [`DEPTH_MAX`] deep.
//! Anything else (a float, an escape, non-ASCII text, whitespace, a key
//! out of order) takes the full parse, which gives the same answer for
//! canonical bodies, so the fast path never changes a fingerprint.

/// Deeper bodies take the full parse (serde_json's own limit is 128).
const DEPTH_MAX: usize = 64;

/// Whether `body` is one JSON value exactly as the canonical writer
/// would write it (see the module doc).
pub(crate) fn is_canonical(body: &[u8]) -> bool {
    let mut scan = Scan { bytes: body, at: 0 };
    scan.value(0) && scan.at == body.len()
}

struct Scan<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Scan<'a> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn eat(&mut self, byte: u8) -> bool {
        let here = self.peek() == Some(byte);
        self.at += usize::from(here);
        here
    }

    fn value(&mut self, depth: usize) -> bool {
        match self.peek() {
            Some(b'{') if depth < DEPTH_MAX => self.object(depth + 1),
            Some(b'[') if depth < DEPTH_MAX => self.array(depth + 1),
            Some(b'"') => self.string().is_some(),
            Some(b't') => self.literal(b"true"),
            Some(b'f') => self.literal(b"false"),
            Some(b'n') => self.literal(b"null"),
            Some(b'-' | b'0'..=b'9') => self.integer(),
            _ => false,
        }
    }

    fn object(&mut self, depth: usize) -> bool {
        self.at += 1;
        if self.eat(b'}') {
            return true;
        }
        let mut previous: Option<&'a [u8]> = None;
        loop {
            let Some(key) = self.string() else { return false };
            if previous.is_some_and(|p| p >= key) || !self.eat(b':') || !self.value(depth) {
                return false;
            }
            previous = Some(key);
            if self.eat(b'}') {
                return true;
            }
            if !self.eat(b',') {
                return false;
            }
        }
    }

    fn array(&mut self, depth: usize) -> bool {
        self.at += 1;
        if self.eat(b']') {
            return true;
        }
        loop {
            if !self.value(depth) {
                return false;
            }
            if self.eat(b']') {
                return true;
            }
            if !self.eat(b',') {
                return false;
            }
        }
    }

    /// A string of printable ASCII without escapes; its content.
    fn string(&mut self) -> Option<&'a [u8]> {
        let bytes = self.bytes;
        if bytes.get(self.at) != Some(&b'"') {
            return None;
        }
        let start = self.at + 1;
        let len = bytes[start..].iter().position(|&b| !(0x20..0x7f).contains(&b) || b == b'"' || b == b'\\')?;
        let end = start + len;
        self.at = end + 1;
        (bytes[end] == b'"').then(|| &bytes[start..end])
    }

    fn literal(&mut self, word: &[u8]) -> bool {
        let here = self.bytes[self.at..].starts_with(word);
        self.at += if here { word.len() } else { 0 };
        here
    }

    /// An integer as serde_json writes one it parsed: no leading zeros, no
    /// `-0`, within `u64` (or `i64` when negative), and no fraction or
    /// exponent after it.
    fn integer(&mut self) -> bool {
        let start = self.at;
        let negative = self.eat(b'-');
        let digits_start = self.at;
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.at += 1;
        }
        let digits = &self.bytes[digits_start..self.at];
        if digits.is_empty() || (digits[0] == b'0' && (digits.len() > 1 || negative)) {
            return false;
        }
        if matches!(self.peek(), Some(b'.' | b'e' | b'E')) {
            return false;
        }
        // Eighteen digits fit either way; only longer ones need the parse.
        if digits.len() <= 18 {
            return true;
        }
        let text = std::str::from_utf8(&self.bytes[start..self.at]).expect("sign and ASCII digits");
        match negative {
            true => text.parse::<i64>().is_ok(),
            false => text.parse::<u64>().is_ok(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::is_canonical;

    #[test]
    fn compact_sorted_bodies_are_canonical() {
        for body in [
            r#"{"amount":5,"currency":"eur"}"#,
            r#"{"a":[1,{"b":null,"c":true}],"d":false,"e":-12,"f":""}"#,
            r#"[]"#,
            r#"{}"#,
            r#"0"#,
            r#""x""#,
            "18446744073709551615",
            "-9223372036854775808",
        ] {
            assert!(is_canonical(body.as_bytes()), "{body}");
        }
    }

    #[test]
    fn anything_the_writer_would_change_is_not() {
        for body in [
            r#"{"currency":"eur","amount":5}"#,
            r#"{"a":1,"a":2}"#,
            r#"{"a": 1}"#,
            r#" {"a":1}"#,
            r#"{"a":1} "#,
            r#"{"a":1.5}"#,
            r#"{"a":1e3}"#,
            r#"{"a":01}"#,
            r#"{"a":-0}"#,
            r#"{"a":"\u0041"}"#,
            r#"{"a":"\/"}"#,
            "{\"a\":\"\u{e9}\"}",
            "18446744073709551616",
            "-9223372036854775809",
            r#"{"a":1,}"#,
            r#"[1,]"#,
            r#"{"a"}"#,
            r#"tru"#,
            r#""#,
            r#"{"a":1}{"#,
        ] {
            assert!(!is_canonical(body.as_bytes()), "{body}");
        }
    }

    #[test]
    fn deep_nesting_takes_the_full_parse() {
        let deep = format!("{}{}", "[".repeat(70), "]".repeat(70));
        assert!(!is_canonical(deep.as_bytes()));
        let shallow = format!("{}{}", "[".repeat(60), "]".repeat(60));
        assert!(is_canonical(shallow.as_bytes()));
    }
}
