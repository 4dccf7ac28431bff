//! Helpers shared by the SQL stores: value conversions, identifier checks,
//! and decoding a record row.

use crate::StoreError;
use idemsim_model::{
    Attempt, Bytes, DownstreamKey, Fingerprint, Record, RecordState, RecoveryPoint, SimTime, StoredResponse,
};

/// The columns of a record row, in `RECORD_COLUMNS` order, as the drivers
/// return them.
pub(crate) struct RecordRow {
    pub fingerprint: String,
    pub status: String,
    pub attempt: i64,
    pub locked_until: Option<i64>,
    pub recovery_key: Option<String>,
    pub recovery_data: Option<Vec<u8>>,
    pub response_status: Option<i64>,
    pub response_body: Option<Vec<u8>>,
    pub created_at: i64,
}

/// The record columns, in `RecordRow` order.
pub(crate) const RECORD_COLUMNS: &str = "fingerprint, status, attempt, locked_until, recovery_key, recovery_data, \
                                         response_status, response_body, created_at";

impl RecordRow {
    /// Checks the invariants a status implies and builds the record;
    /// `None` for a tombstone.
    pub fn into_record(self) -> Result<Option<Record>, StoreError> {
        let attempt = attempt_of(self.attempt)?;
        let state = match self.status.as_str() {
            "released" => return Ok(None),
            "in_progress" => {
                let locked_until =
                    self.locked_until.ok_or_else(|| StoreError::Corrupt("in_progress row without a lease".into()))?;
                let recovery_point = self.recovery_key.map(|k| RecoveryPoint {
                    downstream_key: DownstreamKey(k.into()),
                    data: Bytes(self.recovery_data.unwrap_or_default()),
                });
                RecordState::InProgress { attempt, locked_until: time_of(locked_until)?, recovery_point }
            }
            "completed" => {
                let (Some(status), Some(body)) = (self.response_status, self.response_body) else {
                    return Err(StoreError::Corrupt("completed row without a response".into()));
                };
                let status = u16::try_from(status).map_err(|_| StoreError::Corrupt(format!("status {status}")))?;
                RecordState::Completed { response: StoredResponse { status, body: Bytes(body) }, attempt }
            }
            other => return Err(StoreError::Corrupt(format!("unknown status {other:?}"))),
        };
        Ok(Some(Record {
            fingerprint: Fingerprint(self.fingerprint.into()),
            created_at: time_of(self.created_at)?,
            state,
        }))
    }
}

/// A time as a signed 64-bit column value.
pub(crate) fn ms(t: SimTime) -> Result<i64, StoreError> {
    i64::try_from(t.0).map_err(|_| StoreError::Unavailable(format!("time {} ms does not fit a BIGINT", t.0)))
}

pub(crate) fn time_of(v: i64) -> Result<SimTime, StoreError> {
    u64::try_from(v).map(SimTime).map_err(|_| StoreError::Corrupt(format!("negative time {v}")))
}

pub(crate) fn attempt_of(v: i64) -> Result<Attempt, StoreError> {
    u32::try_from(v).ok().filter(|a| *a >= 1).map(Attempt).ok_or_else(|| StoreError::Corrupt(format!("attempt {v}")))
}

/// A limit as a column value.
pub(crate) fn limit_of(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
}

/// Schema and database names are identifiers, which cannot be bound as
/// parameters: only `[a-z0-9_]`, starting with a letter, up to 48 bytes.
#[cfg(any(feature = "pg", feature = "mysql"))]
pub(crate) fn check_identifier(name: &str) -> Result<(), StoreError> {
    let ok = !name.is_empty()
        && name.len() <= 48
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(StoreError::Unavailable(format!(
            "{name:?} is not a valid schema name (use [a-z][a-z0-9_]*, at most 48 bytes)"
        )))
    }
}

/// Whether `record` (read under a lock) may be taken over by a caller that
/// expects `expected` at `now`: in progress, held by `expected`, its lease
/// over. The SQL stores read the record first, locked, and decide by this,
/// so a refusal answers with the record it was refused on (an UPDATE that
/// matched nothing and a later read could see a record inserted between
/// the two, which no order of operations explains).
#[cfg(any(feature = "pg", feature = "mysql"))]
pub(crate) fn takeable(record: Option<&Record>, expected: Attempt, now: SimTime) -> bool {
    matches!(record.map(|r| &r.state), Some(RecordState::InProgress { attempt, locked_until, .. })
        if *attempt == expected && *locked_until <= now)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(any(feature = "pg", feature = "mysql"))]
    fn identifiers_are_checked() {
        assert!(check_identifier("idemsim_test_1").is_ok());
        for bad in ["", "1abc", "a-b", "A", "x; DROP TABLE y", &"a".repeat(49)] {
            assert!(check_identifier(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn rows_decode_with_their_invariants() {
        let row = |status: &str, locked: Option<i64>| RecordRow {
            fingerprint: "f".into(),
            status: status.into(),
            attempt: 2,
            locked_until: locked,
            recovery_key: None,
            recovery_data: None,
            response_status: None,
            response_body: None,
            created_at: 5,
        };
        assert!(row("in_progress", Some(9)).into_record().unwrap().is_some());
        assert!(row("released", None).into_record().unwrap().is_none());
        assert!(matches!(row("in_progress", None).into_record(), Err(StoreError::Corrupt(_))));
        assert!(matches!(row("completed", None).into_record(), Err(StoreError::Corrupt(_))));
        assert!(matches!(row("weird", None).into_record(), Err(StoreError::Corrupt(_))));
    }
}
