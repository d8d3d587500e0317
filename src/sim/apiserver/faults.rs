//! Fault injection for reliability tests: added latency, error rates per verb/resource/namespace,
//! and dropped watches. The decision is a pure function of the plan and a random draw.
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// One rule: applies to requests matching every field that is set.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FaultRule {
    /// Kubernetes verb (`get`, `list`, `watch`, `create`, ...).
    pub verb: Option<String>,
    /// Resource plural (`nonadminbackups`); `group/plural` to pin the group.
    pub resource: Option<String>,
    pub namespace: Option<String>,
    /// Added before the request is served.
    #[serde(default)]
    pub latency_ms: u64,
    /// Probability (0..=1) that the request fails with `error_code`.
    #[serde(default)]
    pub error_rate: f64,
    /// HTTP code of injected failures (500 when unset).
    pub error_code: Option<u16>,
    /// Watches matching the rule end after this long.
    pub watch_drop_after_ms: Option<u64>,
}

/// The active fault rules.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FaultPlan {
    #[serde(default)]
    pub rules: Vec<FaultRule>,
}

/// What to do to one request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FaultDecision {
    pub delay: Duration,
    pub fail_with: Option<u16>,
    pub watch_drop_after: Option<Duration>,
}

impl FaultRule {
    fn matches(&self, verb: &str, group: &str, resource: &str, namespace: &str) -> bool {
        self.verb.as_deref().is_none_or(|v| v == verb)
            && self.namespace.as_deref().is_none_or(|n| n == namespace)
            && self
                .resource
                .as_deref()
                .is_none_or(|r| match r.split_once('/') {
                    Some((g, p)) => g == group && p == resource,
                    None => r == resource,
                })
    }
}

impl FaultPlan {
    /// Decides the faults for a request; `draw` is a uniform random number in `[0, 1)`.
    pub fn decide(
        &self,
        verb: &str,
        group: &str,
        resource: &str,
        namespace: &str,
        draw: f64,
    ) -> FaultDecision {
        let mut d = FaultDecision::default();
        for rule in self
            .rules
            .iter()
            .filter(|r| r.matches(verb, group, resource, namespace))
        {
            d.delay += Duration::from_millis(rule.latency_ms);
            if d.fail_with.is_none() && rule.error_rate > 0.0 && draw < rule.error_rate {
                d.fail_with = Some(rule.error_code.unwrap_or(500));
            }
            if let Some(ms) = rule.watch_drop_after_ms {
                let after = Duration::from_millis(ms);
                d.watch_drop_after = Some(d.watch_drop_after.map_or(after, |x| x.min(after)));
            }
        }
        d
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn rules_match_on_set_fields_only() {
        let plan: FaultPlan = serde_json::from_value(serde_json::json!({"rules": [
            {"verb": "create", "resource": "oadp.openshift.io/nonadminbackups", "errorRate": 0.5, "errorCode": 503},
            {"resource": "secrets", "latencyMs": 20},
            {"verb": "watch", "watchDropAfterMs": 100}
        ]}))
        .unwrap();
        let hit = plan.decide("create", "oadp.openshift.io", "nonadminbackups", "a", 0.1);
        assert_eq!(hit.fail_with, Some(503));
        let miss = plan.decide("create", "oadp.openshift.io", "nonadminbackups", "a", 0.9);
        assert_eq!(miss.fail_with, None);
        let other_group = plan.decide("create", "velero.io", "nonadminbackups", "a", 0.1);
        assert_eq!(other_group.fail_with, None);
        assert_eq!(
            plan.decide("get", "", "secrets", "x", 0.0).delay,
            Duration::from_millis(20)
        );
        assert_eq!(
            plan.decide("watch", "", "pods", "x", 0.0).watch_drop_after,
            Some(Duration::from_millis(100))
        );
    }

    #[test]
    fn unknown_fields_are_rejected() {
        assert!(
            serde_json::from_value::<FaultPlan>(serde_json::json!({"rules": [{"verbs": "x"}]}))
                .is_err()
        );
    }
}
