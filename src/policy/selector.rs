//! A small Kubernetes label-selector matcher for per-namespace policy rules
//! (`matchLabels` and `matchExpressions` with `In`, `NotIn`, `Exists`, `DoesNotExist`).
//!
//! `policy` may only depend on `api` (DESIGN.md section 2), so it cannot reuse the API
//! emulator's selector engine. The selector is checked once when the policy is loaded
//! ([`NamespaceSelector::new`]) so a typo in an operator is a configuration error, not a rule
//! that silently never matches.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

/// Why a label selector is not valid (same rules as the API server's).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    /// The operator is not one of the four Kubernetes knows.
    #[error(
        "matchExpressions[{index}]: unknown operator {operator:?} (use In, NotIn, Exists or DoesNotExist)"
    )]
    UnknownOperator {
        /// Position in `matchExpressions`.
        index: usize,
        /// The operator as written.
        operator: String,
    },
    /// `In`/`NotIn` without values.
    #[error("matchExpressions[{index}]: operator {operator} needs at least one value")]
    MissingValues {
        /// Position in `matchExpressions`.
        index: usize,
        /// The operator.
        operator: String,
    },
    /// `Exists`/`DoesNotExist` with values.
    #[error("matchExpressions[{index}]: operator {operator} takes no values")]
    UnexpectedValues {
        /// Position in `matchExpressions`.
        index: usize,
        /// The operator.
        operator: String,
    },
    /// An empty key.
    #[error("matchExpressions[{index}]: key is empty")]
    EmptyKey {
        /// Position in `matchExpressions`.
        index: usize,
    },
}

/// One checked requirement.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Requirement {
    In(String, BTreeSet<String>),
    NotIn(String, BTreeSet<String>),
    Exists(String),
    DoesNotExist(String),
}

impl Requirement {
    fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        match self {
            Self::In(key, values) => labels.get(key).is_some_and(|value| values.contains(value)),
            // As Kubernetes: NotIn also matches objects without the key.
            Self::NotIn(key, values) => labels.get(key).is_none_or(|value| !values.contains(value)),
            Self::Exists(key) => labels.contains_key(key),
            Self::DoesNotExist(key) => !labels.contains_key(key),
        }
    }
}

/// A validated label selector; the empty selector matches every namespace.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NamespaceSelector {
    requirements: Vec<Requirement>,
}

impl NamespaceSelector {
    /// Checks `selector` and prepares it for matching.
    pub fn new(selector: &LabelSelector) -> Result<Self, SelectorError> {
        let mut requirements: Vec<Requirement> = selector
            .match_labels
            .iter()
            .flatten()
            .map(|(key, value)| Requirement::In(key.clone(), BTreeSet::from([value.clone()])))
            .collect();
        for (index, expression) in selector.match_expressions.iter().flatten().enumerate() {
            if expression.key.is_empty() {
                return Err(SelectorError::EmptyKey { index });
            }
            let values: BTreeSet<String> = expression.values.iter().flatten().cloned().collect();
            let key = expression.key.clone();
            let operator = expression.operator.clone();
            let requirement = match operator.as_str() {
                "In" | "NotIn" if values.is_empty() => {
                    return Err(SelectorError::MissingValues { index, operator });
                }
                "Exists" | "DoesNotExist" if !values.is_empty() => {
                    return Err(SelectorError::UnexpectedValues { index, operator });
                }
                "In" => Requirement::In(key, values),
                "NotIn" => Requirement::NotIn(key, values),
                "Exists" => Requirement::Exists(key),
                "DoesNotExist" => Requirement::DoesNotExist(key),
                _ => return Err(SelectorError::UnknownOperator { index, operator }),
            };
            requirements.push(requirement);
        }
        Ok(Self { requirements })
    }

    /// Whether a namespace with `labels` is selected (every requirement holds).
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements
            .iter()
            .all(|requirement| requirement.matches(labels))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
            .collect()
    }

    fn expression(key: &str, operator: &str, values: &[&str]) -> LabelSelectorRequirement {
        LabelSelectorRequirement {
            key: key.into(),
            operator: operator.into(),
            values: (!values.is_empty()).then(|| values.iter().map(|v| (*v).into()).collect()),
        }
    }

    fn selector(
        match_labels: &[(&str, &str)],
        expressions: Vec<LabelSelectorRequirement>,
    ) -> NamespaceSelector {
        NamespaceSelector::new(&LabelSelector {
            match_labels: (!match_labels.is_empty()).then(|| labels(match_labels)),
            match_expressions: (!expressions.is_empty()).then_some(expressions),
        })
        .unwrap()
    }

    #[test]
    fn empty_selector_matches_everything() {
        let empty = selector(&[], vec![]);
        assert!(empty.matches(&labels(&[])));
        assert!(empty.matches(&labels(&[("a", "b")])));
    }

    #[test]
    fn match_labels_must_all_hold() {
        let s = selector(&[("tier", "gold"), ("env", "prod")], vec![]);
        assert!(s.matches(&labels(&[("tier", "gold"), ("env", "prod"), ("x", "y")])));
        assert!(!s.matches(&labels(&[("tier", "gold")])));
        assert!(!s.matches(&labels(&[("tier", "silver"), ("env", "prod")])));
    }

    #[test]
    fn operators() {
        let in_ = selector(&[], vec![expression("env", "In", &["prod", "stage"])]);
        assert!(in_.matches(&labels(&[("env", "stage")])));
        assert!(!in_.matches(&labels(&[("env", "dev")])));
        assert!(!in_.matches(&labels(&[])));

        let not_in = selector(&[], vec![expression("env", "NotIn", &["prod"])]);
        assert!(not_in.matches(&labels(&[("env", "dev")])));
        assert!(not_in.matches(&labels(&[])), "NotIn matches a missing key");
        assert!(!not_in.matches(&labels(&[("env", "prod")])));

        let exists = selector(&[], vec![expression("regulated", "Exists", &[])]);
        assert!(exists.matches(&labels(&[("regulated", "")])));
        assert!(!exists.matches(&labels(&[])));

        let absent = selector(&[], vec![expression("regulated", "DoesNotExist", &[])]);
        assert!(absent.matches(&labels(&[])));
        assert!(!absent.matches(&labels(&[("regulated", "yes")])));
    }

    #[test]
    fn namespace_name_label_selects_one_namespace() {
        let s = selector(&[("kubernetes.io/metadata.name", "team-a")], vec![]);
        assert!(s.matches(&labels(&[("kubernetes.io/metadata.name", "team-a")])));
        assert!(!s.matches(&labels(&[("kubernetes.io/metadata.name", "team-b")])));
    }

    #[test]
    fn invalid_selectors_are_refused() {
        let check = |expr| {
            NamespaceSelector::new(&LabelSelector {
                match_labels: None,
                match_expressions: Some(vec![expr]),
            })
            .unwrap_err()
        };
        assert_eq!(
            check(expression("a", "Equals", &["b"])).to_string(),
            "matchExpressions[0]: unknown operator \"Equals\" (use In, NotIn, Exists or DoesNotExist)"
        );
        assert!(matches!(
            check(expression("a", "In", &[])),
            SelectorError::MissingValues { .. }
        ));
        assert!(matches!(
            check(expression("a", "Exists", &["x"])),
            SelectorError::UnexpectedValues { .. }
        ));
        assert!(matches!(
            check(expression("", "Exists", &[])),
            SelectorError::EmptyKey { .. }
        ));
    }
}
