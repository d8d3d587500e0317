//! Field selectors parsed and matched as apimachinery's `fields.ParseSelector` does: `a=b`,
//! `a==b`, `a!=b`, joined by `,`, with `\,` `\=` `\\` escapes in values and no whitespace
//! trimming. Dotted field paths are looked up in the JSON object and a missing field compares as
//! the empty string; a field the resource does not support fails with
//! `field label not supported: <field>`.
//!
//! Label selectors are the shared engine's ([`crate::api::selector`]); the emulator reports its
//! errors as they are, in kube-apiserver's words. [`object_matches`] applies both to an object
//! (lists, watches, projects).
use std::fmt;

use serde_json::Value;

use crate::api::selector::Selector;

/// Why a field selector was rejected; the text is what kube-apiserver reports.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    /// A field selector the apimachinery parser rejects.
    #[error("{0}")]
    InvalidFieldSelector(String),
    /// A well-formed field selector on a field the resource does not index.
    #[error("field label not supported: {0}")]
    UnsupportedField(String),
}

/// One `field=value` / `field!=value` term.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldRequirement {
    pub field: String,
    pub value: String,
    /// `!=` rather than `=`/`==`.
    pub negated: bool,
}

/// A parsed field selector. The empty selector matches everything.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FieldSelector {
    requirements: Vec<FieldRequirement>,
}

impl FieldSelector {
    /// Parses the `fieldSelector` query syntax as `fields.ParseSelector` does, then rejects
    /// fields outside `supported_fields` (`metadata.name` and `metadata.namespace` are always
    /// supported) with `field label not supported: <field>`.
    pub fn parse(s: &str, supported_fields: &[&str]) -> Result<Self, SelectorError> {
        let mut terms = split_terms(s);
        // apimachinery sorts the raw terms before parsing them.
        terms.sort();
        let mut requirements = Vec::new();
        for term in terms.iter().filter(|t| !t.is_empty()) {
            let Some((field, operator, raw_value)) = split_term(term) else {
                return Err(SelectorError::InvalidFieldSelector(format!(
                    "invalid selector: '{s}'; can't understand '{term}'"
                )));
            };
            let value = unescape_value(raw_value).map_err(SelectorError::InvalidFieldSelector)?;
            requirements.push(FieldRequirement {
                field: field.to_string(),
                value,
                negated: operator == "!=",
            });
        }
        // Support is checked after the whole selector parsed (kube's Transform step).
        for r in &requirements {
            let supported = matches!(r.field.as_str(), "metadata.name" | "metadata.namespace")
                || supported_fields.contains(&r.field.as_str());
            if !supported {
                return Err(SelectorError::UnsupportedField(r.field.clone()));
            }
        }
        Ok(Self { requirements })
    }

    /// Whether every term holds for the object; a missing field has the value `""`.
    pub fn matches(&self, object: &Value) -> bool {
        self.requirements
            .iter()
            .all(|r| (field_value(object, &r.field) == r.value) != r.negated)
    }

    /// Whether the selector places no restriction (matches everything).
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    pub fn requirements(&self) -> &[FieldRequirement] {
        &self.requirements
    }

    /// The value an exact `field=value` term requires, if any (`RequiresExactMatch`).
    pub fn exact_match(&self, field: &str) -> Option<&str> {
        self.requirements
            .iter()
            .find(|r| r.field == field && !r.negated)
            .map(|r| r.value.as_str())
    }
}

impl fmt::Display for FieldSelector {
    /// `Selector.String()`: terms joined by `,`, values escaped.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .requirements
            .iter()
            .map(|r| {
                format!(
                    "{}{}{}",
                    r.field,
                    if r.negated { "!=" } else { "=" },
                    escape_value(&r.value)
                )
            })
            .collect();
        f.write_str(&parts.join(","))
    }
}

/// `fields.EscapeValue`.
fn escape_value(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace(',', "\\,")
        .replace('=', "\\=")
}

/// Splits on commas not escaped by a backslash; escapes stay in the terms.
fn split_terms(selector: &str) -> Vec<String> {
    if selector.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::new();
    let mut current = String::new();
    let mut escaped = false;
    for c in selector.chars() {
        if escaped {
            escaped = false;
            current.push(c);
        } else if c == '\\' {
            escaped = true;
            current.push(c);
        } else if c == ',' {
            terms.push(std::mem::take(&mut current));
        } else {
            current.push(c);
        }
    }
    terms.push(current);
    terms
}

/// The first `!=`, `==` or `=` splits field from value; fields cannot be escaped.
fn split_term(term: &str) -> Option<(&str, &'static str, &str)> {
    for (i, _) in term.char_indices() {
        let rest = &term[i..];
        for op in ["!=", "==", "="] {
            if let Some(value) = rest.strip_prefix(op) {
                return Some((&term[..i], op, value));
            }
        }
    }
    None
}

/// `fields.UnescapeValue`, with its error messages (a rune prints as its code point in Go).
fn unescape_value(s: &str) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut escaped = false;
    for c in s.chars() {
        if escaped {
            if !matches!(c, '\\' | ',' | '=') {
                return Err(format!(
                    "invalid field selector: invalid escape sequence: \\{c}"
                ));
            }
            out.push(c);
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            ',' | '=' => {
                return Err(format!(
                    "invalid field selector: unescaped character in value: {}",
                    c as u32
                ));
            }
            c => out.push(c),
        }
    }
    if escaped {
        return Err("invalid field selector: invalid escape sequence: \\".to_string());
    }
    Ok(out)
}

/// The value of a dotted field path as a field set holds it: strings as is, numbers and booleans
/// printed, anything missing (or not a scalar) as `""`.
fn field_value(object: &Value, path: &str) -> String {
    let mut current = object;
    for part in path.split('.') {
        match current.get(part) {
            Some(next) => current = next,
            None => return String::new(),
        }
    }
    match current {
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::Null | Value::Array(_) | Value::Object(_) => String::new(),
    }
}

/// Whether an object passes both selectors.
pub fn object_matches(object: &Value, label: &Selector, field: &FieldSelector) -> bool {
    let labels: std::collections::BTreeMap<String, String> = object
        .pointer("/metadata/labels")
        .and_then(|l| serde_json::from_value(l.clone()).ok())
        .unwrap_or_default();
    label.matches(&labels) && field.matches(object)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use serde_json::json;

    use super::*;

    const POD_FIELDS: &[&str] = &["status.phase", "spec.nodeName", "spec.hostNetwork"];

    fn pod(phase: &str) -> Value {
        json!({"metadata": {"name": "p1", "namespace": "ns"}, "spec": {"hostNetwork": false}, "status": {"phase": phase}})
    }

    #[test]
    fn field_selectors_match_dotted_paths() {
        let s = FieldSelector::parse("metadata.name=p1,status.phase!=Failed", POD_FIELDS).unwrap();
        assert!(s.matches(&pod("Running")));
        assert!(!s.matches(&pod("Failed")));
        let s = FieldSelector::parse("metadata.namespace==ns,spec.hostNetwork=false", POD_FIELDS)
            .unwrap();
        assert!(s.matches(&pod("Running")));
        assert_eq!(s.exact_match("metadata.namespace"), Some("ns"));
    }

    #[test]
    fn a_missing_field_compares_as_the_empty_string() {
        let unscheduled = FieldSelector::parse("spec.nodeName=", POD_FIELDS).unwrap();
        assert!(unscheduled.matches(&pod("Pending")));
        let scheduled = FieldSelector::parse("spec.nodeName!=", POD_FIELDS).unwrap();
        assert!(!scheduled.matches(&pod("Pending")));
    }

    #[test]
    fn unsupported_fields_are_rejected_after_parsing() {
        let err = FieldSelector::parse("spec.foo=bar", POD_FIELDS).unwrap_err();
        assert_eq!(err, SelectorError::UnsupportedField("spec.foo".into()));
        assert_eq!(err.to_string(), "field label not supported: spec.foo");
        // Syntax errors anywhere win over unsupported fields.
        assert_eq!(
            FieldSelector::parse("spec.foo=bar,nonsense", POD_FIELDS)
                .unwrap_err()
                .to_string(),
            "invalid selector: 'spec.foo=bar,nonsense'; can't understand 'nonsense'"
        );
        // No whitespace trimming: the field is `metadata.name `.
        assert_eq!(
            FieldSelector::parse("metadata.name = p1", &[])
                .unwrap_err()
                .to_string(),
            "field label not supported: metadata.name "
        );
    }

    #[test]
    fn field_selector_values_honour_escapes() {
        let s = FieldSelector::parse(r"metadata.name=a\,b\=c\\d", &[]).unwrap();
        assert!(s.matches(&json!({"metadata": {"name": r"a,b=c\d"}})));
        assert_eq!(s.to_string(), r"metadata.name=a\,b\=c\\d");
        assert_eq!(
            FieldSelector::parse("metadata.name=a=b", &[])
                .unwrap_err()
                .to_string(),
            "invalid field selector: unescaped character in value: 61"
        );
        assert_eq!(
            FieldSelector::parse(r"metadata.name=a\x", &[])
                .unwrap_err()
                .to_string(),
            r"invalid field selector: invalid escape sequence: \x"
        );
    }

    #[test]
    fn empty_field_selector_matches_everything() {
        let s = FieldSelector::parse("", &[]).unwrap();
        assert!(s.is_empty());
        assert!(s.matches(&json!({})));
        assert!(FieldSelector::parse(",", &[]).unwrap().is_empty());
    }

    #[test]
    fn field_selectors_compare_involved_object_paths() {
        let event = json!({"involvedObject": {"kind": "Backup", "name": "b1"}});
        let s = FieldSelector::parse(
            "involvedObject.kind=Backup,involvedObject.name=b1",
            &["involvedObject.kind", "involvedObject.name"],
        )
        .unwrap();
        assert!(s.matches(&event));
        assert_eq!(
            s.to_string(),
            "involvedObject.kind=Backup,involvedObject.name=b1"
        );
    }
}
