//! A scenario: a named, taught, serializable simulation setup with the
//! verdict each protocol variant must get.

use idemsim_model::Property;
use idemsim_sim::{SimConfig, Variant};
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
    /// The verdict each variant must get.
    pub expect: BTreeMap<Variant, Expect>,
    /// Coverage counters that must be above zero in a clean sweep of the
    /// correct variant: the interleavings this scenario exists to show.
    #[serde(default)]
    pub sometimes: Vec<String>,
}

impl Scenario {
    /// Reads a scenario file (JSON, as `idemsim explain NAME --json` writes
    /// it; every config field has a default). Errors name the file and, for
    /// syntax, the line and column.
    pub fn from_file(path: &std::path::Path) -> Result<Scenario, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let scenario: Scenario =
            serde_json::from_str(&text).map_err(|e| format!("{} is not a valid scenario: {e}", path.display()))?;
        if scenario.name.trim().is_empty() {
            return Err(format!("{}: the scenario needs a name", path.display()));
        }
        scenario.config.validate().map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(scenario)
    }

    /// The scenario's config running `variant`.
    pub fn config_for(&self, variant: Variant) -> SimConfig {
        SimConfig { variant, ..self.config.clone() }
    }
}
