//! Kubernetes label selector strings (`app=web,tier!=db,env in (a,b),!legacy`) parsed and
//! matched against labels, for the `labelSelector` list filter.

use std::collections::BTreeMap;

use crate::gateway::error::GatewayError;

/// One requirement of a selector.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    DoesNotExist(String),
}

/// A parsed label selector; the empty selector matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

fn valid_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= 317
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
}

fn valid_value(value: &str) -> bool {
    value.len() <= 63
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Splits at commas that are not inside parentheses.
fn split_top_level(text: &str) -> Result<Vec<&str>, ()> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (index, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth < 0 {
                    return Err(());
                }
            }
            ',' if depth == 0 => {
                parts.push(&text[start..index]);
                start = index + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(());
    }
    parts.push(&text[start..]);
    Ok(parts)
}

impl LabelSelector {
    /// Parses `text`; 400 when it is not a valid selector.
    pub fn parse(text: &str) -> Result<Self, GatewayError> {
        let invalid =
            || GatewayError::BadRequest("labelSelector is not a valid label selector".into());
        if text.len() > 4096 {
            return Err(invalid());
        }
        let mut requirements = Vec::new();
        if text.trim().is_empty() {
            return Ok(LabelSelector { requirements });
        }
        for part in split_top_level(text).map_err(|_| invalid())? {
            let part = part.trim();
            let requirement = if let Some(key) = part.strip_prefix('!') {
                let key = key.trim();
                valid_key(key).then(|| Requirement::DoesNotExist(key.to_string()))
            } else if let Some((key, rest)) = part.split_once(" notin ") {
                Self::set(key, rest).map(|(k, v)| Requirement::NotIn(k, v))
            } else if let Some((key, rest)) = part.split_once(" in ") {
                Self::set(key, rest).map(|(k, v)| Requirement::In(k, v))
            } else if let Some((key, value)) = part.split_once("!=") {
                Self::pair(key, value).map(|(k, v)| Requirement::NotEquals(k, v))
            } else if let Some((key, value)) = part.split_once("==") {
                Self::pair(key, value).map(|(k, v)| Requirement::Equals(k, v))
            } else if let Some((key, value)) = part.split_once('=') {
                Self::pair(key, value).map(|(k, v)| Requirement::Equals(k, v))
            } else {
                valid_key(part).then(|| Requirement::Exists(part.to_string()))
            };
            requirements.push(requirement.ok_or_else(invalid)?);
        }
        Ok(LabelSelector { requirements })
    }

    fn pair(key: &str, value: &str) -> Option<(String, String)> {
        let (key, value) = (key.trim(), value.trim());
        (valid_key(key) && valid_value(value)).then(|| (key.to_string(), value.to_string()))
    }

    fn set(key: &str, rest: &str) -> Option<(String, Vec<String>)> {
        let key = key.trim();
        let inner = rest.trim().strip_prefix('(')?.strip_suffix(')')?;
        let values: Vec<String> = inner.split(',').map(|v| v.trim().to_string()).collect();
        (valid_key(key) && values.iter().all(|v| valid_value(v))).then(|| (key.to_string(), values))
    }

    /// Whether `labels` satisfy every requirement.
    pub fn matches(&self, labels: Option<&BTreeMap<String, String>>) -> bool {
        let empty = BTreeMap::new();
        let labels = labels.unwrap_or(&empty);
        self.requirements
            .iter()
            .all(|requirement| match requirement {
                Requirement::Equals(k, v) => labels.get(k) == Some(v),
                Requirement::NotEquals(k, v) => labels.get(k) != Some(v),
                Requirement::In(k, values) => labels.get(k).is_some_and(|v| values.contains(v)),
                Requirement::NotIn(k, values) => labels.get(k).is_none_or(|v| !values.contains(v)),
                Requirement::Exists(k) => labels.contains_key(k),
                Requirement::DoesNotExist(k) => !labels.contains_key(k),
            })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn every_operator_matches_as_kubernetes_does() {
        let l = labels(&[("app", "web"), ("env", "prod")]);
        let yes = [
            "",
            "app=web",
            "app==web",
            "app!=db",
            "env in (prod,staging)",
            "env notin (dev)",
            "app",
            "!legacy",
            "app=web,env=prod",
        ];
        for selector in yes {
            assert!(
                LabelSelector::parse(selector).unwrap().matches(Some(&l)),
                "{selector}"
            );
        }
        let no = [
            "app=db",
            "env in (dev)",
            "legacy",
            "!app",
            "app=web,env=dev",
        ];
        for selector in no {
            assert!(
                !LabelSelector::parse(selector).unwrap().matches(Some(&l)),
                "{selector}"
            );
        }
    }

    #[test]
    fn malformed_selectors_are_refused() {
        for selector in ["a b", "env in (a", "=x", "ключ=v", "a=b=c", "x in a,b)"] {
            assert!(LabelSelector::parse(selector).is_err(), "{selector}");
        }
    }
}
