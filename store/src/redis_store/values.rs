//! What the Redis store reads back: replies decoded into records and
//! outcomes, errors into `StoreError`s.

use super::*;

/// A redis error as a store error, in one line without the URL.
pub(super) fn failed(e: &RedisError, writes: bool) -> StoreError {
    let text = clean(e);
    if e.code() == Some("CONFLICT") {
        return StoreError::Conflict(text);
    }
    if writes && (e.is_io_error() || e.is_connection_dropped() || e.is_timeout()) {
        return StoreError::Indeterminate(text);
    }
    StoreError::Unavailable(text)
}

/// One line of a redis error.
pub(super) fn clean(e: &RedisError) -> String {
    crate::text::plain(e.to_string().lines().next().unwrap_or_default(), None)
}

/// The member naming a scope in keys and indexes: caller, NUL, key. Its
/// byte order is scope order (caller, then key).
pub(super) fn member(scope: &Scope) -> Result<Vec<u8>, StoreError> {
    if scope.caller.0.contains('\0') {
        return Err(StoreError::Unavailable(format!("caller {:?} contains a NUL byte", scope.caller.0)));
    }
    let mut m = scope.caller.0.as_bytes().to_vec();
    m.push(0);
    m.extend_from_slice(scope.key.0.as_bytes());
    Ok(m)
}

pub(super) fn scope_of(m: &[u8]) -> Result<Scope, StoreError> {
    let corrupt = || StoreError::Corrupt(format!("member {:?} is not caller NUL key", String::from_utf8_lossy(m)));
    let at = m.iter().position(|b| *b == 0).ok_or_else(corrupt)?;
    let text = |b: &[u8]| String::from_utf8(b.to_vec()).map_err(|_| corrupt());
    Ok(Scope { caller: CallerId(text(&m[..at])?.into()), key: IdempotencyKey(text(&m[at + 1..])?.into()) })
}

pub(super) fn bytes(v: &Value) -> Option<Vec<u8>> {
    match v {
        Value::BulkString(b) => Some(b.clone()),
        Value::SimpleString(s) => Some(s.clone().into_bytes()),
        Value::Int(i) => Some(i.to_string().into_bytes()),
        _ => None,
    }
}

pub(super) fn text(v: &Value) -> Option<String> {
    bytes(v).and_then(|b| String::from_utf8(b).ok())
}

pub(super) fn int(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        other => text(other)?.parse().ok(),
    }
}

pub(super) fn items(v: &Value) -> &[Value] {
    match v {
        Value::Array(items) => items,
        _ => &[],
    }
}

pub(super) fn corrupt(what: &str, v: &Value) -> StoreError {
    StoreError::Corrupt(format!("unexpected reply to {what}: {v:?}"))
}

/// A record from the nine fields `lib.lua`'s `record` returns; `None` for
/// no record or a tombstone.
pub(super) fn record_of(v: &Value) -> Result<Option<Record>, StoreError> {
    let f = items(v);
    if f.is_empty() {
        return Ok(None);
    }
    if f.len() != 9 {
        return Err(corrupt("a record read", v));
    }
    let row = RecordRow {
        fingerprint: text(&f[0]).unwrap_or_default(),
        status: text(&f[1]).ok_or_else(|| corrupt("a record's status", v))?,
        attempt: int(&f[2]).ok_or_else(|| corrupt("a record's attempt", v))?,
        locked_until: int(&f[3]),
        recovery_key: text(&f[4]),
        recovery_data: bytes(&f[5]),
        response_status: int(&f[6]),
        response_body: bytes(&f[7]),
        created_at: int(&f[8]).ok_or_else(|| corrupt("a record's created_at", v))?,
    };
    row.into_record()
}

pub(super) fn write_outcome(v: &Value) -> Result<WriteOutcome, StoreError> {
    match int(v) {
        Some(1) => Ok(WriteOutcome::Applied),
        Some(0) => Ok(WriteOutcome::Fenced),
        _ => Err(corrupt("a fenced write", v)),
    }
}

pub(super) fn attempt_of(v: &Value) -> Result<Attempt, StoreError> {
    int(v).and_then(|a| u32::try_from(a).ok()).map(Attempt).ok_or_else(|| corrupt("an attempt", v))
}

pub(super) fn num(n: u64) -> Vec<u8> {
    n.to_string().into_bytes()
}
