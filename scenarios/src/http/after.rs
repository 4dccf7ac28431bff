//! After the attack: the late replays of every key, and the service's
//! local effects where it lists them.

use super::*;

/// Every keyed request that got a success is sent once more, after
/// everything else: a stored response must not have changed since. With
/// the service's lease known, every keyed request that never succeeded
/// and was refused (409, 429 or 5xx) is sent once more too, once twice the
/// lease and the slack have passed since its first refusal after the
/// dependency last answered a call for it: a key still refused then, with
/// no execution, is stuck (progress).
pub(super) async fn late_replays(
    spec: &HttpSpec,
    target: &Arc<Service>,
    rec: &Arc<Recorder>,
    last_op: u32,
    deadline: Instant,
) -> Option<String> {
    let seen = rec.seen.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let mut sent: BTreeMap<OpId, &Request> = BTreeMap::new();
    let mut succeeded: BTreeSet<OpId> = BTreeSet::new();
    let mut refused: BTreeMap<OpId, u64> = BTreeMap::new();
    for s in &seen {
        match s {
            Seen::Sent { op, request, .. } => {
                sent.entry(*op).or_insert(request);
            }
            Seen::Answered { op, response, .. } if (200..300).contains(&response.status) => {
                succeeded.insert(*op);
            }
            Seen::Answered { op, response, at_ms, .. } if refuses_for_now(response.status) => {
                refused.entry(*op).or_insert(*at_ms);
            }
            _ => {}
        }
    }
    let mut distinct: BTreeSet<&Request> = BTreeSet::new();
    let mut next = last_op;
    // Each late operation, and when it may be sent (ms since the start).
    let mut ops: Vec<(PlannedOp, u64)> = Vec::new();
    for op in &succeeded {
        let request = sent[op];
        if request.key.is_some() && distinct.insert(request) {
            next += 1;
            let late =
                PlannedOp { op: OpId(next), request: request.clone(), attack: "late-replay", fault: ProxyFault::None };
            ops.push((late, 0));
        }
    }
    let stuck_after_ms = spec.lease_ms.map(|l| l.saturating_mul(2).saturating_add(PROGRESS_SLACK_MS + 100));
    let calls_end = calls_end_ms(&seen);
    for (op, first_ms) in refused.iter().filter(|(op, _)| !succeeded.contains(op)) {
        let (Some(after_ms), request) = (stuck_after_ms, sent[op]) else { break };
        let called_ms = reference_of(&request.body).and_then(|r| calls_end.get(r.as_str()).copied()).unwrap_or(0);
        if request.key.is_some() && distinct.insert(request) {
            next += 1;
            let probe =
                PlannedOp { op: OpId(next), request: request.clone(), attack: "late-probe", fault: ProxyFault::None };
            ops.push((probe, (*first_ms).max(called_ms).saturating_add(after_ms)));
        }
    }
    let permits = Arc::new(tokio::sync::Semaphore::new(spec.clients));
    let mut tasks = tokio::task::JoinSet::new();
    for (op, due_ms) in ops {
        if let Some(why) = stop_reason(deadline, rec) {
            while tasks.join_next().await.is_some() {}
            return Some(why);
        }
        let Ok(permit) = permits.clone().acquire_owned().await else { break };
        let client = HttpClient::new(target.clone(), rec.clone(), op, policy(spec));
        let steps = client::ClientSteps { retry_5xx: spec.retry_5xx };
        let rec = rec.clone();
        tasks.spawn(async move {
            while rec.now_ms() < due_ms && !crate::sweep::stopped() && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            let (op, request) = (client.op().op, client.op().request.clone());
            idemsim_sim::protocol::run_operation(&steps, &client, op, &request).await;
            drop(permit);
        });
    }
    while tasks.join_next().await.is_some() {}
    stop_reason(deadline, rec).filter(|why| why != OUT_OF_TIME)
}

/// Reads the service's local effects for every key sent; `true` when the
/// service listed them.
pub(super) async fn local_effects(target: &Service, url: &str, rec: &Recorder) -> bool {
    let seen = rec.seen.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let mut slots: BTreeSet<(String, String, String, String)> = BTreeSet::new();
    let mut keys: BTreeSet<(String, String)> = BTreeSet::new();
    for s in &seen {
        if let Seen::Sent { request, .. } = s {
            if let Some(k) = &request.key {
                if keys.insert((request.caller.0.to_string(), k.0.to_string())) {
                    slots.insert((
                        request.caller.0.to_string(),
                        request.method.to_string(),
                        request.path.to_string(),
                        k.0.to_string(),
                    ));
                }
            }
        }
    }
    let mut listed = false;
    for (tenant, method, path, key) in slots {
        let url = url.replace("{key}", &key).replace("{tenant}", &tenant);
        let url = if url.starts_with("http") { url } else { format!("{}{url}", target.base) };
        let get = target.http.get(&url).header(&target.tenant_header, target.tenant_header_value(&tenant)).send().await;
        let Ok(answer) = get else { continue };
        let Ok(list) = answer.json::<Vec<serde_json::Value>>().await else { continue };
        listed = true;
        let (caller, key) = (idemsim_model::CallerId(tenant.into()), idemsim_model::IdempotencyKey(key.into()));
        rec.push(|at_ms| Seen::LocalEffects { at_ms, caller, method, path, key, count: list.len() });
    }
    listed
}
