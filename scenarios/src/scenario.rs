//! A scenario: a named, taught, serializable simulation setup with the
//! verdict each protocol variant must get.

use crate::error::Error;
use idemsim_model::Property;
use idemsim_sim::{SimConfig, Steps, Variant};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What a sweep of a variant must conclude.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Expect {
    /// No property is violated.
    Clean,
    /// This property is violated in some seed.
    Violates(Property),
}

impl std::fmt::Display for Expect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Expect::Clean => f.write_str("clean"),
            Expect::Violates(p) => f.write_str(p.name()),
        }
    }
}

/// A scenario of the catalogue.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Its name on the command line.
    pub name: String,
    /// One paragraph: what it teaches.
    pub lesson: String,
    /// The deployment, workload, faults and protocol settings.
    #[serde(default)]
    pub config: SimConfig,
    /// The verdict each variant must get, by variant name: a built-in
    /// variant (see `idemsim_sim::Variant`) or one of `variants`.
    pub expect: BTreeMap<String, Expect>,
    /// Variants of this scenario's own, by name: which steps they swap.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub variants: BTreeMap<String, Steps>,
    /// Coverage counters that must be above zero in a clean sweep of the
    /// correct variant: the interleavings this scenario exists to show.
    #[serde(default)]
    pub sometimes: Vec<String>,
    /// The failing run this file reproduces (a shrunk scenario says which
    /// variant and seed): `idemsim replay --file` uses them by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reproduces: Option<Reproduces>,
}

/// The run a scenario file reproduces.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reproduces {
    /// The variant's name.
    pub variant: String,
    /// The seed.
    pub seed: u64,
    /// The protocol's name, when the run used a protocol of the user's own
    /// (which a file cannot carry): replay the file with the same protocol.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// The store's name (a built-in one such as `mem`, or the name a store
    /// of the user's own was given): a replay on another store is refused.
    /// Absent in files written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<String>,
}

impl Reproduces {
    /// Refuses a replay of this run on `store` running `protocol` (`None`:
    /// a built-in variant) when the file names another, in one line naming
    /// both. `file` names the file or scenario.
    pub fn check(&self, file: &str, store: &str, protocol: Option<&str>) -> Result<(), Error> {
        if let Some(named) = self.store.as_deref().filter(|named| *named != store) {
            return Err(Error::Mismatch(format!(
                "{file} reproduces a run on store '{named}', but this replay runs store '{store}'"
            )));
        }
        match (self.protocol.as_deref(), protocol) {
            (None, _) => Ok(()),
            (Some(named), Some(own)) if named == own => Ok(()),
            (Some(named), Some(own)) => Err(Error::Mismatch(format!(
                "{file} reproduces a run of protocol '{named}', but this replay runs '{own}'"
            ))),
            (Some(named), None) => Err(Error::Mismatch(format!(
                "{file} reproduces a run of protocol '{named}' (a protocol of your own): replay it from your \
                 program, with Simulation::protocol"
            ))),
        }
    }
}

impl Scenario {
    /// Reads a scenario file: TOML if the name ends in `.toml`, else JSON
    /// (as `idemsim explain NAME --json` writes it). Every config field has
    /// a default. Errors name the file and, for syntax, where.
    pub fn from_file(path: &std::path::Path) -> Result<Scenario, Error> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io("read", path, e))?;
        let toml = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("toml"));
        let parsed = match toml {
            true => toml::from_str::<Scenario>(&text).map_err(|e| e.to_string().trim_end().replace('\n', " ")),
            false => serde_json::from_str::<Scenario>(&text).map_err(|e| e.to_string()),
        };
        let invalid =
            |message: String| Error::Parse { path: path.to_path_buf(), expected: "a valid scenario", message };
        let scenario = parsed.map_err(invalid)?;
        scenario.check().map_err(|e| invalid(e.to_string()))?;
        Ok(scenario)
    }

    /// The scenario as TOML, for a file a person edits.
    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).expect("a scenario always serializes to TOML")
    }

    /// Checks what parsing cannot: a name, a valid config, and variant
    /// names that resolve.
    pub fn check(&self) -> Result<(), Error> {
        if self.name.trim().is_empty() {
            return Err(Error::Scenario("the scenario needs a name".into()));
        }
        self.config.validate()?;
        for name in self.expect.keys().chain(self.reproduces.as_ref().map(|r| &r.variant)) {
            self.steps_of(name)?;
        }
        if let Some(name) = self.sometimes.iter().find(|n| idemsim_model::Sometimes::from_name(n).is_none()) {
            let counters: Vec<&str> = idemsim_model::Sometimes::ALL.iter().map(|s| s.name()).collect();
            return Err(Error::Scenario(format!(
                "sometimes: '{name}' is not a coverage counter; expected one of: {}",
                counters.join(", ")
            )));
        }
        if let Some(name) = self.variants.keys().find(|n| Variant::from_name(n).is_some()) {
            return Err(Error::Scenario(format!("variant '{name}' is built in; give your own variant another name")));
        }
        Ok(())
    }

    /// The steps of the variant called `name`: this scenario's own, or a
    /// built-in one.
    pub fn steps_of(&self, name: &str) -> Result<Steps, Error> {
        if let Some(steps) = self.variants.get(name) {
            return Ok(*steps);
        }
        Variant::from_name(name).map(Variant::steps).ok_or_else(|| {
            let mut names: Vec<&str> = Variant::ALL.iter().map(|v| v.name()).collect();
            names.extend(self.variants.keys().map(String::as_str));
            Error::Unknown {
                what: "variant",
                name: name.to_string(),
                hint: format!("expected one of: {}", names.join(", ")),
            }
        })
    }

    /// The property the variant called `name` is expected to break, if any.
    pub fn expected_property(&self, name: &str) -> Option<Property> {
        match self.expect.get(name) {
            Some(Expect::Violates(p)) => Some(*p),
            Some(Expect::Clean) | None => None,
        }
    }

    /// The scenario's config running the variant called `name`.
    pub fn config_for(&self, name: &str) -> Result<SimConfig, Error> {
        Ok(SimConfig { steps: self.steps_of(name)?, ..self.config.clone() })
    }

    /// Adds a variant of one's own, with the verdict it must get.
    ///
    /// ```
    /// use idemsim::{catalogue, Expect};
    /// use idemsim_sim::{ClaimStep, Steps};
    /// use idemsim_model::Property;
    /// let mut s = catalogue::find("concurrent-duplicates").unwrap();
    /// let racy = Steps { claim: ClaimStep::CheckThenInsert, ..Steps::default() };
    /// s.add_variant("my-racy-claim", racy, Expect::Violates(Property::Fencing));
    /// assert_eq!(s.config_for("my-racy-claim").unwrap().steps, racy);
    /// ```
    pub fn add_variant(&mut self, name: &str, steps: Steps, expect: Expect) {
        self.variants.insert(name.to_string(), steps);
        self.expect.insert(name.to_string(), expect);
    }
}
