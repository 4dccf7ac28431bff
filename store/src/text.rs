//! Error text as one plain line: URLs without their passwords, a driver's
//! repeated wrappers said once, no `(os error N)` numbers.

/// The URL with any password replaced by `***`.
pub fn mask_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_string() };
    let (authority, path) = match rest.find('/') {
        Some(at) => rest.split_at(at),
        None => (rest, ""),
    };
    // Only a password is hidden: `user@host` has none.
    match authority.rsplit_once('@').and_then(|(credentials, host)| Some((credentials.split_once(':')?.0, host))) {
        Some((user, host)) => format!("{scheme}://{user}:***@{host}{path}"),
        None => url.to_string(),
    }
}

/// One line: `a: a: b (os error 32)` becomes `a: b`, and a password that
/// appears in `url` is masked wherever it appears.
pub fn plain(text: &str, url: Option<&str>) -> String {
    let mut line = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" ");
    if let Some(at) = line.find(" (os error") {
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
    if let Some(password) = url.and_then(password_of) {
        line = line.replace(&password, "***");
    }
    line
}

fn password_of(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split('/').next()?;
    let credentials = authority.rsplit_once('@')?.0;
    let password = credentials.split_once(':')?.1;
    (!password.is_empty()).then(|| password.to_string())
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
    }
}
