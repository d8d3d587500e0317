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
    /// A key that is not a qualified name (`[prefix/]name`), as apimachinery checks it.
    #[error("label key {key:?} is not valid: {reason}")]
    InvalidKey {
        /// The key as written.
        key: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A value that is not a label value (63 characters of `[A-Za-z0-9_.-]`, alphanumeric ends).
    #[error("label value {value:?} of key {key:?} is not valid: {reason}")]
    InvalidValue {
        /// The key.
        key: String,
        /// The value as written.
        value: String,
        /// What is wrong with it.
        reason: &'static str,
    },
}

/// apimachinery's `IsQualifiedName`: an optional DNS-1123 subdomain prefix and `/`, then a name
/// of at most 63 characters of `[A-Za-z0-9_.-]` starting and ending alphanumeric.
pub fn label_key_problem(key: &str) -> Option<&'static str> {
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if let Some(prefix) = prefix {
        let subdomain_ok = !prefix.is_empty()
            && prefix.len() <= 253
            && prefix.split('.').all(|part| {
                !part.is_empty()
                    && part
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                    && !part.starts_with('-')
                    && !part.ends_with('-')
            });
        if !subdomain_ok {
            return Some("the prefix must be a DNS-1123 subdomain");
        }
    }
    if name.is_empty() {
        return Some("the name part must not be empty");
    }
    label_value_problem(name)
}

/// apimachinery's `IsValidLabelValue`: empty, or at most 63 characters of `[A-Za-z0-9_.-]`
/// starting and ending alphanumeric.
pub fn label_value_problem(value: &str) -> Option<&'static str> {
    if value.is_empty() {
        return None;
    }
    if value.len() > 63 {
        return Some("must be no more than 63 characters");
    }
    let bytes = value.as_bytes();
    let inner_ok = bytes
        .iter()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    let ends_ok = bytes.first().is_some_and(u8::is_ascii_alphanumeric)
        && bytes.last().is_some_and(u8::is_ascii_alphanumeric);
    if !inner_ok || !ends_ok {
        return Some(
            "must consist of alphanumeric characters, '-', '_' or '.', and start and end alphanumeric",
        );
    }
    None
}

fn check_pair(key: &str, values: &BTreeSet<String>) -> Result<(), SelectorError> {
    if let Some(reason) = label_key_problem(key) {
        return Err(SelectorError::InvalidKey {
            key: key.to_owned(),
            reason,
        });
    }
    for value in values {
        if let Some(reason) = label_value_problem(value) {
            return Err(SelectorError::InvalidValue {
                key: key.to_owned(),
                value: value.clone(),
                reason,
            });
        }
    }
    Ok(())
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
        for requirement in &requirements {
            if let Requirement::In(key, values) = requirement {
                check_pair(key, values)?;
            }
        }
        for (index, expression) in selector.match_expressions.iter().flatten().enumerate() {
            if expression.key.is_empty() {
                return Err(SelectorError::EmptyKey { index });
            }
            let values: BTreeSet<String> = expression.values.iter().flatten().cloned().collect();
            let key = expression.key.clone();
            let operator = expression.operator.clone();
            check_pair(&key, &values)?;
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
    fn keys_and_values_are_checked_as_apimachinery_does() {
        let bad_key = NamespaceSelector::new(&LabelSelector {
            match_labels: Some(labels(&[("bad key!", "x")])),
            match_expressions: None,
        });
        assert!(matches!(bad_key, Err(SelectorError::InvalidKey { .. })));
        let bad_value = NamespaceSelector::new(&LabelSelector {
            match_labels: None,
            match_expressions: Some(vec![expression("app", "In", &["-web"])]),
        });
        assert!(matches!(bad_value, Err(SelectorError::InvalidValue { .. })));
        assert_eq!(label_key_problem("example.com/tier"), None);
        assert!(label_key_problem("Example.com/tier").is_some());
        assert!(label_key_problem("example.com/").is_some());
        assert_eq!(label_value_problem(""), None);
        assert!(label_value_problem(&"a".repeat(64)).is_some());
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
