//! The outside judge on hand-made observations.

use super::*;

/// What a run with one charging endpoint, `POST /charges`, observes.
fn charging_obs() -> Observability {
    Observability {
        charging: [("POST".to_string(), "/charges".to_string())].into(),
        charge_prefix: "ch_".into(),
        ..Observability::default()
    }
}

/// Builds observations one at a time.
#[derive(Default)]
struct Run {
    seen: Vec<Seen>,
}

fn request(tenant: &str, key: Option<&str>, path: &str, amount: u32, reference: &str) -> Request {
    Request {
        caller: CallerId(tenant.into()),
        key: key.map(|k| IdempotencyKey(k.into())),
        method: "POST".into(),
        path: path.into(),
        body: Bytes::text(&format!(r#"{{"amount":{amount},"ref":"{reference}"}}"#)),
    }
}

impl Run {
    fn push(&mut self, s: Seen) -> usize {
        self.seen.push(s);
        self.seen.len() - 1
    }
    fn send(&mut self, op: u32, request: Request) -> usize {
        let at_ms = self.seen.len() as u64;
        self.push(Seen::Sent { at_ms, op: OpId(op), try_no: 1, request, attack: "test".into() })
    }
    fn answer(&mut self, op: u32, status: u16, body: &str) -> usize {
        let at_ms = self.seen.len() as u64;
        let response = StoredResponse::new(status, body);
        self.push(Seen::Answered { at_ms, op: OpId(op), try_no: 1, response, retry_after_ms: None })
    }
    fn charge(&mut self, reference: &str, charge: &str, new: bool, holder: Option<(&str, u64)>) -> usize {
        self.push(Seen::Charged {
            at_ms: self.seen.len() as u64,
            reference: Some(reference.into()),
            charge: charge.into(),
            downstream_key: Some(format!("dk-{reference}")),
            new,
            execution: holder.map(|(e, _)| e.into()),
            attempt: holder.map(|(_, a)| a),
            delay_ms: 0,
        })
    }
    fn judge(&self) -> OutsideVerdict {
        let obs = Observability { local_effects: false, ..charging_obs() };
        judge_outside(&self.seen, &obs)
    }
    fn broken(&self) -> Vec<(Property, String)> {
        self.judge().violations.into_iter().map(|v| (v.property, v.explanation)).collect()
    }
}

/// A request executed once and replayed once.
fn clean() -> Run {
    let mut r = Run::default();
    let req = request("acme", Some("k"), "/charges", 5, "r1");
    r.send(1, req.clone());
    r.charge("r1", "ch_1", true, Some(("e1", 1)));
    r.answer(1, 201, r#"{"charge":"ch_1","execution":"e1"}"#);
    r.send(2, req);
    r.charge("r1", "ch_1", false, None);
    r.answer(2, 201, r#"{"charge":"ch_1","execution":"e1"}"#);
    r
}

#[test]
fn an_execution_and_its_replay_are_clean_and_every_observable_property_is_judged() {
    let v = clean().judge();
    assert!(v.violations.is_empty(), "{:?}", v.violations);
    for p in [Property::AtMostOnce, Property::ReplayFidelity, Property::Isolation, Property::Fencing] {
        assert!(v.judged.iter().any(|j| j.property == p && j.not_judged.is_none()), "{p}");
    }
    assert!(v.judged.iter().any(|j| j.property == Property::Expiry && j.not_judged.is_some()));
}

#[test]
fn a_5xx_for_a_completed_key_breaks_the_status_rules() {
    let mut r = clean();
    r.send(3, request("acme", Some("k"), "/charges", 5, "r1"));
    r.answer(3, 500, r#"{"error":"internal"}"#);
    let broken = r.broken();
    assert!(broken.iter().any(|(p, why)| *p == Property::StatusRules && why.contains("never a 500")), "{broken:?}");
}

/// The provider refuses the first call; the service answers 502, then
/// answers a retry 502 again without calling the provider: stored.
#[test]
fn a_provider_failure_answered_again_without_a_new_call_is_a_stored_transient_error() {
    let failing = |replayed: bool| {
        let mut r = Run::default();
        let req = request("acme", Some("k"), "/charges", 5, "r1");
        r.send(1, req.clone());
        r.push(Seen::ProviderFailed { at_ms: 1, reference: Some("r1".into()) });
        r.answer(1, 502, r#"{"error":"provider unavailable"}"#);
        r.send(2, req);
        if !replayed {
            r.charge("r1", "ch_1", true, Some(("e2", 2)));
        }
        r.answer(2, 502, r#"{"error":"provider unavailable"}"#);
        r
    };
    let stored = failing(true).broken();
    assert!(
        stored.iter().any(|(p, why)| *p == Property::Liveness && why.contains("transient failure was stored")),
        "{stored:?}"
    );
    // A retry that called the provider again (and failed again) stored nothing.
    let called = failing(false).broken();
    assert!(!called.iter().any(|(_, why)| why.contains("stored")), "{called:?}");
}

#[test]
fn every_property_is_judged_or_said_not_to_be() {
    let v = clean().judge();
    let listed: Vec<Property> = v.judged.iter().map(|j| j.property).collect();
    assert_eq!(listed, Property::ALL.to_vec());
    let progress = v.judged.iter().find(|j| j.property == Property::Progress).unwrap();
    assert!(progress.not_judged.as_deref().is_some_and(|why| why.contains("lease")), "{progress:?}");
}

#[test]
fn two_new_charges_for_one_key_break_at_most_once() {
    let mut r = clean();
    r.charge("r1", "ch_2", true, Some(("e2", 1)));
    let broken = r.broken();
    assert!(broken.iter().any(|(p, why)| *p == Property::AtMostOnce && why.contains("2 effects")), "{broken:?}");
    assert!(broken.iter().any(|(p, _)| *p == Property::Fencing), "two executions held attempt 1: {broken:?}");
}

#[test]
fn a_replay_that_differs_breaks_replay_fidelity() {
    let mut r = clean();
    r.send(3, request("acme", Some("k"), "/charges", 5, "r1"));
    r.answer(3, 201, r#"{"charge":"ch_1","execution":"e1" }"#);
    assert_eq!(r.broken().iter().filter(|(p, _)| *p == Property::ReplayFidelity).count(), 1, "{:?}", r.broken());
}

#[test]
fn another_body_with_the_key_must_get_422() {
    let mut r = clean();
    r.send(3, request("acme", Some("k"), "/charges", 6, "r2"));
    r.answer(3, 201, r#"{"charge":"ch_1","execution":"e1"}"#);
    let broken = r.broken();
    assert!(broken.iter().any(|(p, why)| *p == Property::StatusRules && why.contains("422 is due")), "{broken:?}");
    let mut ok = clean();
    ok.send(3, request("acme", Some("k"), "/charges", 6, "r2"));
    ok.answer(3, 422, "{}");
    assert!(ok.broken().is_empty(), "{:?}", ok.broken());
}

/// A service without a fingerprint replays the first body's record to
/// a second body (wrong: 422 is due), and then to a later copy of the
/// first request (right: it is that request's own record). The 2xx the
/// second body got is evidence of the record it came from, not of the
/// body it carried.
#[test]
fn a_replay_of_the_first_bodys_record_is_not_evidence_of_another_body() {
    // The answers show their record: the charge made for r1.
    let mut r = clean();
    r.send(3, request("acme", Some("k"), "/charges", 6, "r2"));
    r.answer(3, 201, r#"{"charge":"ch_1","execution":"e1"}"#);
    r.send(4, request("acme", Some("k"), "/charges", 5, "r1"));
    r.answer(4, 201, r#"{"charge":"ch_1","execution":"e1"}"#);
    let status = |r: &Run| -> Vec<String> {
        r.broken().into_iter().filter(|(p, _)| *p == Property::StatusRules).map(|(_, why)| why).collect()
    };
    let broken = status(&r);
    assert_eq!(broken.len(), 1, "only the second body's silent success: {broken:?}");
    assert!(broken[0].starts_with("OpId(3) was answered 201") && broken[0].contains("422 is due"), "{broken:?}");

    // The answers show nothing: the first body had succeeded before the
    // second was sent, so the record was the first body's.
    let mut r = Run::default();
    r.send(1, request("acme", Some("k"), "/charges", 5, "r1"));
    r.answer(1, 201, r#"{"ok":true}"#);
    r.send(3, request("acme", Some("k"), "/charges", 6, "r2"));
    r.answer(3, 201, r#"{"ok":true}"#);
    r.send(4, request("acme", Some("k"), "/charges", 5, "r1"));
    r.answer(4, 201, r#"{"ok":true}"#);
    let broken = status(&r);
    assert_eq!(broken.len(), 1, "{broken:?}");
    assert!(broken[0].starts_with("OpId(3)"), "{broken:?}");
}

/// The judgement the fix must keep: when the other body's record came
/// first, the first body's later success is a silent success.
#[test]
fn a_success_after_another_bodys_record_completed_is_still_caught() {
    // Shown by the charge: the record was made for r2.
    let mut r = Run::default();
    r.send(1, request("acme", Some("k"), "/charges", 6, "r2"));
    r.charge("r2", "ch_2", true, Some(("e1", 1)));
    r.answer(1, 201, r#"{"charge":"ch_2"}"#);
    r.send(2, request("acme", Some("k"), "/charges", 5, "r1"));
    r.answer(2, 201, r#"{"charge":"ch_2"}"#);
    let broken = r.broken();
    assert!(broken.iter().any(|(p, why)| *p == Property::StatusRules && why.starts_with("OpId(2)")), "{broken:?}");
    // Shown by the order alone.
    let mut r = Run::default();
    r.send(1, request("acme", Some("k"), "/charges", 6, "r2"));
    r.answer(1, 201, r#"{"ok":true}"#);
    r.send(2, request("acme", Some("k"), "/charges", 5, "r1"));
    r.answer(2, 201, r#"{"ok":true}"#);
    let broken = r.broken();
    assert!(broken.iter().any(|(p, why)| *p == Property::StatusRules && why.starts_with("OpId(2)")), "{broken:?}");
}

#[test]
fn a_422_without_any_other_request_is_wrong_and_one_caused_by_another_tenant_is_a_leak() {
    let mut r = Run::default();
    r.send(1, request("acme", Some("k"), "/charges", 5, "r1"));
    r.answer(1, 422, "{}");
    assert!(r.broken().iter().any(|(p, why)| *p == Property::StatusRules && why.contains("nothing to mismatch")));
    let mut r = clean();
    r.send(3, request("globex", Some("k"), "/charges", 5, "r3"));
    r.answer(3, 422, "{}");
    assert!(r.broken().iter().any(|(p, why)| *p == Property::Isolation && why.contains("tenant acme had")));
}

#[test]
fn another_tenants_charge_in_a_response_is_a_leak() {
    let mut r = clean();
    r.send(3, request("globex", Some("k"), "/charges", 5, "r3"));
    r.answer(3, 201, r#"{"charge":"ch_1","execution":"e1"}"#);
    let broken = r.broken();
    assert!(
        broken.iter().any(|(p, why)| *p == Property::Isolation && why.contains("tenant acme's charge")),
        "{broken:?}"
    );
}

#[test]
fn a_keyless_request_must_be_refused_and_not_executed() {
    let mut r = Run::default();
    r.send(1, request("acme", None, "/charges", 5, "r1"));
    r.charge("r1", "ch_1", true, None);
    r.answer(1, 201, r#"{"charge":"ch_1"}"#);
    let broken = r.broken();
    assert_eq!(broken.iter().filter(|(p, _)| *p == Property::StatusRules).count(), 2, "{broken:?}");
}

#[test]
fn a_stored_validation_error_is_caught_when_the_corrected_request_is_refused() {
    let mut r = Run::default();
    r.send(1, request("acme", Some("k"), "/charges", 0, "r1"));
    r.answer(1, 400, r#"{"error":"amount"}"#);
    r.send(2, request("acme", Some("k"), "/charges", 5, "r2"));
    r.answer(2, 422, "{}");
    assert!(r.broken().iter().any(|(p, why)| *p == Property::StatusRules && why.contains("must not be stored")));
}

#[test]
fn a_stored_validation_error_replayed_in_other_bytes_is_caught_too() {
    let mut r = Run::default();
    r.send(1, request("acme", Some("k"), "/charges", 0, "r1"));
    r.answer(1, 400, r#"{"error":"amount"}"#);
    r.send(2, request("acme", Some("k"), "/charges", 5, "r2"));
    r.answer(2, 400, r#"{ "error": "amount" }"#);
    let broken = r.broken();
    assert!(broken.iter().any(|(p, why)| *p == Property::StatusRules && why.contains("got 400 again")), "{broken:?}");
}

#[test]
fn a_decline_after_execution_is_a_record_and_its_replays_repeat_its_bytes() {
    let decline = |second: &str| {
        let mut r = Run::default();
        let req = request("acme", Some("k"), "/charges", 5, "r1");
        r.send(1, req.clone());
        r.charge("r1", "ch_1", true, None);
        r.answer(1, 402, r#"{"error":"declined"}"#);
        r.send(2, req);
        r.answer(2, 402, second);
        r.broken()
    };
    assert!(decline(r#"{"error":"declined"}"#).is_empty());
    let broken = decline(r#"{"error": "declined"}"#);
    assert!(broken.iter().any(|(p, _)| *p == Property::ReplayFidelity), "{broken:?}");
    // Without an execution behind it a 4xx is a fresh answer, which
    // may differ.
    let mut r = Run::default();
    let req = request("acme", Some("k"), "/charges", 5, "r1");
    r.send(1, req.clone());
    r.answer(1, 404, r#"{"error":"no such account","trace":"a"}"#);
    r.send(2, req);
    r.answer(2, 404, r#"{"error":"no such account","trace":"b"}"#);
    assert!(r.broken().iter().all(|(p, _)| *p != Property::ReplayFidelity), "{:?}", r.broken());
}

/// A key refused with `status` at `times`, with a dependency call at
/// `call_ms` if any, answered 1,500 ms later, judged with a lease of
/// 1,000 ms.
fn refused_at(status: u16, times: &[u64], call_ms: Option<u64>) -> Vec<(Property, String)> {
    let mut r = Run::default();
    let req = request("acme", Some("k"), "/charges", 5, "r1");
    r.push(Seen::Sent { at_ms: 0, op: OpId(1), try_no: 1, request: req, attack: "test".into() });
    // Another key's execution, so the service is known to call the
    // dependency.
    r.send(2, request("acme", Some("k2"), "/charges", 5, "r2"));
    r.charge("r2", "ch_2", true, None);
    if let Some(at_ms) = call_ms {
        r.push(Seen::Charged {
            at_ms,
            reference: Some("r1".into()),
            charge: "ch_1".into(),
            downstream_key: None,
            new: true,
            execution: None,
            attempt: None,
            delay_ms: 1_500,
        });
    }
    for (n, at_ms) in times.iter().enumerate() {
        let response = StoredResponse::new(status, "{}");
        r.push(Seen::Answered { at_ms: *at_ms, op: OpId(1), try_no: n as u32 + 1, response, retry_after_ms: None });
    }
    r.seen.sort_by_key(Seen::at_ms);
    let obs = Observability { lease_ms: Some(1_000), ..charging_obs() };
    judge_outside(&r.seen, &obs).violations.into_iter().map(|v| (v.property, v.explanation)).collect()
}

#[test]
fn a_key_refused_past_twice_the_lease_with_no_execution_breaks_progress() {
    let stuck = |found: &[(Property, String)]| found.iter().any(|(p, _)| *p == Property::Progress);
    assert!(stuck(&refused_at(409, &[10, 1_500, 3_100], None)), "409 for 3.1 s with a 1 s lease");
    assert!(stuck(&refused_at(500, &[10, 3_100], None)), "a 500 forever after the handler raised");
    assert!(!stuck(&refused_at(409, &[10, 1_500, 2_900], None)), "within twice the lease and the slack");
    // A call in progress (slow for 1.5 s) is an execution: the refusals
    // before its end do not count.
    assert!(!stuck(&refused_at(409, &[10, 1_000, 3_100], Some(1_000))));
    assert!(stuck(&refused_at(409, &[10, 2_600, 5_700], Some(1_000))));
}

#[test]
fn progress_is_judged_only_with_the_services_lease() {
    let mut r = Run::default();
    r.send(1, request("acme", Some("k"), "/charges", 5, "r1"));
    r.charge("r1", "ch_1", true, None);
    let obs = |lease_ms| Observability { lease_ms, ..charging_obs() };
    let progress = |v: OutsideVerdict| v.judged.into_iter().find(|j| j.property == Property::Progress).unwrap();
    assert!(progress(judge_outside(&r.seen, &obs(None))).not_judged.unwrap().contains("--lease-ms"));
    assert_eq!(progress(judge_outside(&r.seen, &obs(Some(500)))).not_judged, None);
}

#[test]
fn answers_no_rule_reads_are_counted_by_status() {
    let mut r = clean();
    r.send(3, request("acme", Some("k"), "/charges", 5, "r1"));
    r.answer(3, 302, "");
    r.answer(3, 302, "");
    assert_eq!(r.judge().unjudged, [(302, 2)].into());
    assert!(clean().judge().unjudged.is_empty());
}

#[test]
fn a_completed_key_must_replay_not_409() {
    let mut r = clean();
    r.send(3, request("acme", Some("k"), "/charges", 5, "r1"));
    r.answer(3, 409, r#"{"charge":"ch_1"}"#);
    assert!(r.broken().iter().any(|(p, why)| *p == Property::StatusRules && why.contains("409 means in flight")));
}

#[test]
fn a_success_from_a_superseded_attempt_breaks_fencing() {
    let mut r = Run::default();
    r.send(1, request("acme", Some("k"), "/charges", 5, "r1"));
    r.charge("r1", "ch_1", true, Some(("e1", 1)));
    r.charge("r1", "ch_1", false, Some(("e2", 2)));
    r.answer(1, 201, r#"{"charge":"ch_1","execution":"e1"}"#);
    let broken = r.broken();
    assert!(
        broken.iter().any(|(p, why)| *p == Property::Fencing && why.contains("attempt 2 had been granted")),
        "{broken:?}"
    );
    let mut ok = Run::default();
    ok.send(1, request("acme", Some("k"), "/charges", 5, "r1"));
    ok.charge("r1", "ch_1", true, Some(("e1", 1)));
    ok.charge("r1", "ch_1", false, Some(("e2", 2)));
    ok.answer(1, 201, r#"{"charge":"ch_1","execution":"e2"}"#);
    assert!(ok.broken().is_empty(), "{:?}", ok.broken());
}

#[test]
fn without_forwarded_references_effects_are_not_judged_instead_of_passing() {
    let mut r = Run::default();
    r.send(1, request("acme", Some("k"), "/charges", 5, "r1"));
    r.push(Seen::Charged {
        at_ms: 1,
        reference: None,
        charge: "x".into(),
        downstream_key: None,
        new: true,
        execution: None,
        attempt: None,
        delay_ms: 0,
    });
    r.answer(1, 201, "{}");
    let v = r.judge();
    for p in [Property::AtMostOnce, Property::Liveness, Property::Fencing, Property::Isolation] {
        assert!(v.judged.iter().any(|j| j.property == p && j.not_judged.is_some()), "{p}");
    }
}
