//! The admin policy's wording of label-selector errors: per-namespace policy rules, DeletionAction
//! `appliesTo` and Velero's backup/restore selection compile `LabelSelector` objects with the
//! shared engine ([`crate::api::selector`]) and report a refusal in these words.
//!
//! The selector is checked once when the policy is loaded ([`compile`]) so a typo in an operator
//! is a configuration error, not a rule that silently never matches.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};

use crate::api::selector::{self as engine, KeyProblem, Selector, ValueProblem};

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

const TOO_LONG: &str = "must be no more than 63 characters";
const BAD_CHARACTERS: &str =
    "must consist of alphanumeric characters, '-', '_' or '.', and start and end alphanumeric";

/// apimachinery's `IsQualifiedName`: an optional DNS-1123 subdomain prefix and `/`, then a name
/// of at most 63 characters of `[A-Za-z0-9_.-]` starting and ending alphanumeric. The first
/// problem, in policy words; the prefix is what precedes the first `/`.
pub fn label_key_problem(key: &str) -> Option<&'static str> {
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if prefix.is_some_and(|prefix| !engine::prefix_problems(prefix).is_empty()) {
        return Some("the prefix must be a DNS-1123 subdomain");
    }
    engine::name_part_problems(name)
        .first()
        .map(|problem| match problem {
            KeyProblem::NameEmpty => "the name part must not be empty",
            KeyProblem::NameTooLong => TOO_LONG,
            _ => BAD_CHARACTERS,
        })
}

/// apimachinery's `IsValidLabelValue`: empty, or at most 63 characters of `[A-Za-z0-9_.-]`
/// starting and ending alphanumeric. The first problem, in policy words.
pub fn label_value_problem(value: &str) -> Option<&'static str> {
    engine::value_problems(value)
        .first()
        .map(|problem| match problem {
            ValueProblem::TooLong => TOO_LONG,
            ValueProblem::Invalid => BAD_CHARACTERS,
        })
}

/// Checks `selector` with the engine and prepares it for matching; the empty selector matches
/// everything.
pub fn compile(selector: &LabelSelector) -> Result<Selector, SelectorError> {
    Selector::from_label_selector(selector).map_err(|error| explain(selector, &error))
}

/// Words the entry the engine refused. Policy reports one problem of an entry, looked at in its
/// own order (key, then values in sorted order, then the operator), where apimachinery looks at
/// the operator first; an entry is refused by both or by neither.
fn explain(selector: &LabelSelector, error: &engine::SelectorError) -> SelectorError {
    let index = match error {
        engine::SelectorError::InvalidOperator { index, .. }
        | engine::SelectorError::InvalidRequirement {
            expression: Some(index),
            ..
        } => *index,
        engine::SelectorError::InvalidRequirement {
            expression: None,
            error,
        } => {
            let key = error.key();
            let value = selector
                .match_labels
                .as_ref()
                .and_then(|labels| labels.get(key))
                .map(String::as_str)
                .unwrap_or_default();
            return pair_problem(key, [value]).unwrap_or_else(|| SelectorError::InvalidKey {
                key: key.to_owned(),
                reason: BAD_CHARACTERS,
            });
        }
        // Only selector strings fail to parse.
        engine::SelectorError::Parse(_) => 0,
    };
    let fallback = LabelSelectorRequirement::default();
    let expression = selector
        .match_expressions
        .as_ref()
        .and_then(|expressions| expressions.get(index))
        .unwrap_or(&fallback);
    explain_expression(index, expression)
}

fn explain_expression(index: usize, expression: &LabelSelectorRequirement) -> SelectorError {
    if expression.key.is_empty() {
        return SelectorError::EmptyKey { index };
    }
    let mut values: Vec<&str> = expression
        .values
        .iter()
        .flatten()
        .map(String::as_str)
        .collect();
    values.sort_unstable();
    values.dedup();
    if let Some(problem) = pair_problem(&expression.key, values.iter().copied()) {
        return problem;
    }
    let operator = expression.operator.clone();
    match operator.as_str() {
        "In" | "NotIn" => SelectorError::MissingValues { index, operator },
        "Exists" | "DoesNotExist" => SelectorError::UnexpectedValues { index, operator },
        _ => SelectorError::UnknownOperator { index, operator },
    }
}

/// The key's problem, else the first value's.
fn pair_problem<'a>(key: &str, values: impl IntoIterator<Item = &'a str>) -> Option<SelectorError> {
    if let Some(reason) = label_key_problem(key) {
        return Some(SelectorError::InvalidKey {
            key: key.to_owned(),
            reason,
        });
    }
    values.into_iter().find_map(|value| {
        label_value_problem(value).map(|reason| SelectorError::InvalidValue {
            key: key.to_owned(),
            value: value.to_owned(),
            reason,
        })
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::api::selector::tests::{expression, labels};

    #[test]
    fn keys_and_values_are_checked_as_apimachinery_does() {
        let bad_key = compile(&LabelSelector {
            match_labels: Some(labels(&[("bad key!", "x")])),
            match_expressions: None,
        });
        assert!(matches!(bad_key, Err(SelectorError::InvalidKey { .. })));
        let bad_value = compile(&LabelSelector {
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
    fn invalid_selectors_are_refused() {
        let check = |expr| {
            compile(&LabelSelector {
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

    #[test]
    fn a_valid_selector_compiles_to_the_engine_selector() {
        let object = LabelSelector {
            match_labels: Some(labels(&[("tier", "gold")])),
            match_expressions: Some(vec![expression("env", "NotIn", &["dev"])]),
        };
        let compiled = compile(&object).unwrap();
        assert_eq!(compiled, Selector::from_label_selector(&object).unwrap());
        assert!(compiled.matches(&labels(&[("tier", "gold")])));
        assert!(!compiled.matches(&labels(&[("tier", "gold"), ("env", "dev")])));
    }

    /// Each message as policy worded it before the engine was shared, including which problem
    /// of an entry it names first.
    #[test]
    fn messages_keep_the_policy_wording_and_order() {
        let refuse = |match_labels: &[(&str, &str)], expressions: Vec<LabelSelectorRequirement>| {
            compile(&LabelSelector {
                match_labels: (!match_labels.is_empty()).then(|| labels(match_labels)),
                match_expressions: (!expressions.is_empty()).then_some(expressions),
            })
            .unwrap_err()
            .to_string()
        };
        // A bad key wins over an unknown operator (apimachinery names the operator first).
        assert_eq!(
            refuse(&[], vec![expression("Bad Key", "Equals", &["x"])]),
            "label key \"Bad Key\" is not valid: must consist of alphanumeric characters, '-', '_' or '.', and start and end alphanumeric"
        );
        // Values are looked at in sorted order.
        assert_eq!(
            refuse(&[], vec![expression("a", "In", &["-z", "-b"])]),
            "label value \"-b\" of key \"a\" is not valid: must consist of alphanumeric characters, '-', '_' or '.', and start and end alphanumeric"
        );
        // matchLabels before matchExpressions, in key order.
        assert_eq!(
            refuse(
                &[("b", "-x"), ("a", &"v".repeat(64))],
                vec![expression("", "Exists", &[])]
            ),
            format!(
                "label value \"{}\" of key \"a\" is not valid: must be no more than 63 characters",
                "v".repeat(64)
            )
        );
        assert_eq!(
            refuse(
                &[],
                vec![
                    expression("ok", "Exists", &[]),
                    expression("x", "DoesNotExist", &["y"])
                ]
            ),
            "matchExpressions[1]: operator DoesNotExist takes no values"
        );
        assert_eq!(
            refuse(&[], vec![expression("x", "NotIn", &[])]),
            "matchExpressions[0]: operator NotIn needs at least one value"
        );
        assert_eq!(
            refuse(&[], vec![expression("", "Near", &[])]),
            "matchExpressions[0]: key is empty"
        );
        assert_eq!(
            refuse(&[("/a", "x")], vec![]),
            "label key \"/a\" is not valid: the prefix must be a DNS-1123 subdomain"
        );
        assert_eq!(
            refuse(&[("a/", "x")], vec![]),
            "label key \"a/\" is not valid: the name part must not be empty"
        );
        // The prefix is what precedes the first `/`; the rest is the name part.
        assert_eq!(
            label_key_problem("A/b/c"),
            Some("the prefix must be a DNS-1123 subdomain")
        );
        assert_eq!(label_key_problem("a/b/c"), Some(BAD_CHARACTERS));
        assert_eq!(
            label_key_problem(&format!("a/{}", "b".repeat(64))),
            Some(TOO_LONG)
        );
    }
}
