//! What `idemsim http` attacks: the target's endpoints, headers and
//! tenants, from a TOML or JSON file and flags.

use serde::{Deserialize, Serialize};

/// The target's API, as the attacker needs to know it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HttpConfig {
    /// The service's base URL (loopback, plain HTTP).
    pub target: Option<String>,
    /// The idempotency key header.
    pub key_header: String,
    /// The header that names the tenant (or carries its credentials).
    pub tenant_header: String,
    /// The header's value for a tenant; `{tenant}` is replaced.
    pub tenant_value: String,
    /// The tenants (at least two for the other-tenant attack).
    pub tenants: Vec<String>,
    /// A tenant's header value when `tenant_value` cannot make it: a
    /// session cookie or an API token, by the tenant's readable name
    /// (which reports print).
    pub tenant_values: std::collections::BTreeMap<String, String>,
    /// The endpoints (at least two for the other-endpoint attack).
    pub endpoints: Vec<Endpoint>,
    /// A read-only URL listing the service's local effects for a key, as a
    /// JSON array (`{key}` and `{tenant}` are replaced; relative to the
    /// target unless absolute). Optional.
    pub effects_url: Option<String>,
    /// Where idemsim's payment provider listens; the service must be
    /// configured to call `http://<this>/charges`.
    pub provider_listen: String,
    /// The request that checks the target is the API before the attack:
    /// `"METHOD /path"` (sent without a key or body), `"none"` to skip
    /// it, or unset for one keyless request to the first endpoint (which
    /// the service may execute: one real charge).
    pub preflight: Option<String>,
    /// The service's longest lease, as `--lease-ms` (the flag wins): it
    /// judges progress and sets the timings that must outlast it.
    pub lease_ms: Option<u64>,
}

impl HttpConfig {
    /// The header value that names `tenant`.
    pub fn tenant_header_value(&self, tenant: &str) -> String {
        tenant_header_value(&self.tenant_value, &self.tenant_values, tenant)
    }

    /// The preflight request's method and path, `None` to skip it.
    pub fn preflight_request(&self) -> Option<(String, String, bool)> {
        match self.preflight.as_deref().map(str::trim) {
            Some("none") => None,
            Some(line) => {
                let (method, path) = line.split_once(' ').unwrap_or(("GET", line));
                Some((method.to_string(), path.trim().to_string(), false))
            }
            None => Some((self.endpoints[0].method.clone(), self.endpoints[0].path.clone(), true)),
        }
    }
}

/// One endpoint of the target.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Endpoint {
    /// HTTP method.
    pub method: String,
    /// Path, from the target's base URL.
    pub path: String,
    /// The JSON body; `{amount}` (a positive integer) and `{ref}` (a
    /// reference unique to the request, which the service must forward to
    /// the provider) are replaced.
    pub body: String,
    /// A body the service must refuse before executing (400), if it
    /// validates; enables the invalid-then-corrected attack.
    pub invalid_body: Option<String>,
    /// Whether the endpoint requires an idempotency key (400 without).
    pub requires_key: bool,
    /// Whether executing it charges through the provider.
    pub charges: bool,
}

impl Default for Endpoint {
    fn default() -> Endpoint {
        Endpoint {
            method: "POST".into(),
            path: "/charges".into(),
            body: r#"{"amount":{amount},"currency":"eur","ref":"{ref}"}"#.into(),
            invalid_body: Some(r#"{"amount":-{amount},"currency":"eur","ref":"{ref}"}"#.into()),
            requires_key: true,
            charges: true,
        }
    }
}

impl Default for HttpConfig {
    /// The API of `idemsim serve`.
    fn default() -> HttpConfig {
        let endpoint = |path: &str, charges: bool| Endpoint { path: path.into(), charges, ..Endpoint::default() };
        HttpConfig {
            target: None,
            key_header: "Idempotency-Key".into(),
            tenant_header: "X-Tenant".into(),
            tenant_value: "{tenant}".into(),
            tenants: vec!["acme".into(), "globex".into()],
            endpoints: vec![endpoint("/charges", true), endpoint("/checkout", true), endpoint("/orders", false)],
            effects_url: Some("/effects/{key}".into()),
            provider_listen: "127.0.0.1:7410".into(),
            tenant_values: Default::default(),
            preflight: None,
            lease_ms: None,
        }
    }
}

impl HttpConfig {
    /// Reads a TOML (by extension) or JSON file.
    pub fn from_file(path: &std::path::Path) -> Result<HttpConfig, crate::Error> {
        let text = std::fs::read_to_string(path).map_err(|e| crate::Error::io("read", path, e))?;
        let toml = path.extension().is_some_and(|e| e == "toml");
        let parsed = match toml {
            true => toml::from_str(&text).map_err(|e| e.message().to_string()),
            false => serde_json::from_str(&text).map_err(|e| e.to_string()),
        };
        let invalid =
            |message: String| crate::Error::Parse { path: path.to_path_buf(), expected: "an HTTP config", message };
        let config: HttpConfig = parsed.map_err(|e| invalid(e.lines().next().unwrap_or("").to_string()))?;
        config.problem().map_err(invalid)?;
        Ok(config)
    }

    /// Checks what the attacks rely on.
    pub fn validate(&self) -> Result<(), crate::Error> {
        self.problem().map_err(crate::Error::Usage)
    }

    /// The first thing the attacks rely on that this config lacks.
    fn problem(&self) -> Result<(), String> {
        if self.endpoints.is_empty() {
            return Err("at least one endpoint is needed".into());
        }
        if self.tenants.is_empty() || self.tenants.iter().any(|t| t.is_empty()) {
            return Err("at least one tenant, with a non-empty name, is needed".into());
        }
        for e in &self.endpoints {
            if !e.path.starts_with('/') {
                return Err(format!("endpoint path {:?} must start with /", e.path));
            }
            if reqwest::Method::from_bytes(e.method.as_bytes()).is_err() {
                return Err(format!("endpoint method {:?} is not an HTTP method", e.method));
            }
            if !e.body.contains("{amount}") {
                return Err(format!("the body of {} {} must contain {{amount}}", e.method, e.path));
            }
        }
        if self.key_header.is_empty() || self.tenant_header.is_empty() {
            return Err("key_header and tenant_header must be set".into());
        }
        if let Some(name) = self.tenant_values.keys().find(|t| !self.tenants.contains(t)) {
            return Err(format!("tenant_values names {name:?}, which is not in tenants"));
        }
        if let Some((method, path, _)) = self.preflight_request() {
            if reqwest::Method::from_bytes(method.as_bytes()).is_err() || !path.starts_with('/') {
                return Err(format!(
                    "preflight {:?} must be \"METHOD /path\" or \"none\"",
                    self.preflight.as_deref().unwrap_or("")
                ));
            }
        }
        Ok(())
    }
}

/// The header value that names `tenant`: its own value if it has one,
/// else the template with `{tenant}` replaced.
pub fn tenant_header_value(
    template: &str,
    values: &std::collections::BTreeMap<String, String>,
    tenant: &str,
) -> String {
    match values.get(tenant) {
        Some(v) => v.clone(),
        None => template.replace("{tenant}", tenant),
    }
}

/// A body from a template.
pub fn body(template: &str, amount: u64, reference: &str) -> String {
    template.replace("{amount}", &amount.to_string()).replace("{ref}", reference)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenants_get_their_own_values_and_the_preflight_can_be_pointed_or_skipped() {
        let c = HttpConfig {
            tenant_value: "Bearer {tenant}".into(),
            tenant_values: [("globex".to_string(), "session=9f2c".to_string())].into(),
            ..HttpConfig::default()
        };
        assert_eq!(
            (c.tenant_header_value("acme"), c.tenant_header_value("globex")),
            ("Bearer acme".into(), "session=9f2c".into())
        );
        assert_eq!(c.preflight_request(), Some(("POST".into(), "/charges".into(), true)));
        let health = HttpConfig { preflight: Some("GET /health".into()), ..HttpConfig::default() };
        assert_eq!(health.preflight_request(), Some(("GET".into(), "/health".into(), false)));
        assert_eq!(HttpConfig { preflight: Some("none".into()), ..HttpConfig::default() }.preflight_request(), None);
    }

    #[test]
    fn the_default_is_serves_api_and_valid() {
        let c = HttpConfig::default();
        c.validate().unwrap();
        assert_eq!(c.endpoints.len(), 3);
        assert_eq!(body(&c.endpoints[0].body, 5, "r1"), r#"{"amount":5,"currency":"eur","ref":"r1"}"#);
    }

    #[test]
    fn a_file_overrides_fields_and_rejects_unknown_ones() {
        let dir = std::env::temp_dir().join(format!("idemsim-http-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("c.toml");
        std::fs::write(&good, "tenants = [\"a\"]\nlease_ms = 60000\n[[endpoints]]\npath = \"/pay\"\n").unwrap();
        let c = HttpConfig::from_file(&good).unwrap();
        assert_eq!(c.lease_ms, Some(60_000));
        assert_eq!((c.tenants.len(), c.endpoints[0].path.as_str(), c.endpoints[0].charges), (1, "/pay", true));
        let bad = dir.join("b.json");
        std::fs::write(&bad, r#"{"endpoint": []}"#).unwrap();
        assert!(HttpConfig::from_file(&bad).unwrap_err().to_string().contains("unknown field"));
        std::fs::write(&bad, r#"{"endpoints": [{"path": "pay"}]}"#).unwrap();
        assert!(HttpConfig::from_file(&bad).unwrap_err().to_string().contains("must start with /"));
        std::fs::write(&bad, r#"{"preflight": "GET health"}"#).unwrap();
        assert!(HttpConfig::from_file(&bad).unwrap_err().to_string().contains("METHOD /path"));
        std::fs::write(&bad, r#"{"tenant_values": {"initech": "session=1"}}"#).unwrap();
        assert!(HttpConfig::from_file(&bad).unwrap_err().to_string().contains("not in tenants"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
