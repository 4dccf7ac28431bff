//! Error text as one plain line: URLs without their passwords, a driver's
//! repeated wrappers said once, no `(os error N)` numbers.

/// Names under which connection strings carry a secret: a URL's query
/// (`?password=`) or a libpq `key=value` string.
const SECRET_KEYS: [&str; 4] = ["password", "pass", "pwd", "sslpassword"];

fn is_secret_key(key: &str) -> bool {
    SECRET_KEYS.iter().any(|k| key.eq_ignore_ascii_case(k))
}

/// The URL (or libpq `key=value` string) with every password replaced by
/// `***`: in the user info, in the query, or as a `password=` pair.
pub fn mask_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return mask_pairs(url) };
    let (authority, path) = match rest.find(['/', '?']) {
        Some(at) => rest.split_at(at),
        None => (rest, ""),
    };
    // Only a password is hidden: `user@host` has none.
    let authority = match authority.rsplit_once('@').and_then(|(c, host)| Some((c.split_once(':')?.0, host))) {
        Some((user, host)) => format!("{user}:***@{host}"),
        None => authority.to_string(),
    };
    let path = match path.split_once('?') {
        Some((p, query)) => {
            let pairs: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((k, _)) if is_secret_key(k) => format!("{k}=***"),
                    _ => pair.to_string(),
                })
                .collect();
            format!("{p}?{}", pairs.join("&"))
        }
        None => path.to_string(),
    };
    format!("{scheme}://{authority}{path}")
}

/// A libpq `key=value ...` string with its password values masked
/// (quoted values included).
fn mask_pairs(text: &str) -> String {
    let (pairs, tail) = libpq_pairs(text);
    let mut out = String::new();
    for p in pairs {
        out.push_str(p.through_eq);
        out.push_str(if is_secret_key(p.key) { "***" } else { p.value });
    }
    out.push_str(tail);
    out
}

/// One `key=value` of a libpq connection string: the text from the end of
/// the previous value through the `=`, the key, and the value as written.
struct Pair<'a> {
    through_eq: &'a str,
    key: &'a str,
    value: &'a str,
}

/// The `key=value` pairs of `text` in order, and what follows the last.
fn libpq_pairs(text: &str) -> (Vec<Pair<'_>>, &str) {
    let mut pairs = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find('=') {
        let key_start = rest[..at].rfind(char::is_whitespace).map_or(0, |w| w + 1);
        let (through_eq, key) = (&rest[..=at], rest[key_start..at].trim());
        rest = &rest[at + 1..];
        let n = value_len(rest);
        pairs.push(Pair { through_eq, key, value: &rest[..n] });
        rest = &rest[n..];
    }
    (pairs, rest)
}

/// The length of a libpq value at the start of `s`: quoted (with `\'`
/// escapes) or up to whitespace.
fn value_len(s: &str) -> usize {
    if let Some(quoted) = s.strip_prefix('\'') {
        let mut escaped = false;
        for (i, c) in quoted.char_indices() {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '\'') => return i + 2,
                _ => {}
            }
        }
        return s.len();
    }
    s.find(char::is_whitespace).unwrap_or(s.len())
}

/// One line: `a: a: b (os error 32)` becomes `a: b`, and a password that
/// appears in `url` is masked wherever it appears.
pub fn plain(text: &str, url: Option<&str>) -> String {
    let mut line = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" ");
    while let Some(at) = line.find(" (os error") {
        let end = line[at..].find(')').map_or(line.len(), |e| at + e + 1);
        line.replace_range(at..end, "");
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in line.split(": ") {
        if parts.last() != Some(&part) {
            parts.push(part);
        }
    }
    let mut line = parts.join(": ");
    for secret in url.map(secrets_of).unwrap_or_default() {
        line = line.replace(&secret, "***");
    }
    line
}

/// Every password `url` carries: in its user info, its query, or as a
/// libpq `password=` pair (quotes taken off).
fn secrets_of(url: &str) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(rest) = url.split_once("://").map(|(_, r)| r) {
        let authority = rest.split(['/', '?']).next().unwrap_or("");
        if let Some(password) = authority.rsplit_once('@').and_then(|(c, _)| c.split_once(':')).map(|(_, p)| p) {
            out.push(password.to_string());
        }
        let query = rest.split_once('?').map_or("", |(_, q)| q);
        for pair in query.split('&') {
            if let Some((_, v)) = pair.split_once('=').filter(|(k, _)| is_secret_key(k)) {
                out.push(v.to_string());
            }
        }
    } else {
        let secrets = libpq_pairs(url).0.into_iter().filter(|p| is_secret_key(p.key));
        out.extend(secrets.map(|p| p.value.trim_matches('\'').to_string()));
    }
    out.retain(|p| !p.is_empty());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_show_and_wrappers_are_said_once() {
        assert_eq!(mask_url("postgres://u:s3cret@db:5432/test"), "postgres://u:***@db:5432/test");
        assert_eq!(mask_url("redis://:pw@127.0.0.1:6379/0"), "redis://:***@127.0.0.1:6379/0");
        assert_eq!(mask_url("mysql://root@127.0.0.1/test"), "mysql://root@127.0.0.1/test");
        let e = "Input/output error: Input/output error: Broken pipe (os error 32)";
        assert_eq!(plain(e, None), "Input/output error: Broken pipe");
        assert_eq!(
            plain("bad url postgres://u:s3cret@x", Some("postgres://u:s3cret@x/db")),
            "bad url postgres://u:***@x"
        );
        // A password in the query, or in a libpq key=value string.
        assert_eq!(mask_url("postgres://u@db/test?password=s3cret&x=1"), "postgres://u@db/test?password=***&x=1");
        assert_eq!(
            mask_url("mysql://root@127.0.0.1:3306/test?pass=hunter2"),
            "mysql://root@127.0.0.1:3306/test?pass=***"
        );
        assert_eq!(
            mask_url("host=127.0.0.1 user=u password='s3 cret' dbname=test"),
            "host=127.0.0.1 user=u password=*** dbname=test"
        );
        assert_eq!(mask_url("host=db password=s3cret"), "host=db password=***");
        let url = "host=db password='s3 cret'";
        assert_eq!(plain("auth failed for s3 cret", Some(url)), "auth failed for ***");
        assert_eq!(plain("no: s3cret", Some("postgres://db/t?password=s3cret")), "no: ***");
        assert_eq!(plain("a (os error 2): b (os error 13)", None), "a: b");
    }
}
