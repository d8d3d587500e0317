//! Label and field selectors parsed and matched as apimachinery's `labels` and `fields` do.
//!
//! Label selectors follow `labels.Parse`: `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`,
//! `k`, `!k`, and the numeric `k>5` / `k<5`, joined by `,` (AND), whitespace-tolerant, keys and
//! values validated like apimachinery (qualified names, 63-character values). `!=` and `notin`
//! match objects without the label. Errors carry the parser's own messages
//! (`unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt`).
//!
//! Field selectors follow `fields.ParseSelector`: `a=b`, `a==b`, `a!=b`, joined by `,`, with `\,`
//! `\=` `\\` escapes in values and no whitespace trimming. Dotted field paths are looked up in the
//! JSON object and a missing field compares as the empty string; a field the resource does not
//! support fails with `field label not supported: <field>`.
use std::collections::BTreeMap;
use std::fmt;
use std::sync::LazyLock;

use k8s_openapi::apimachinery::pkg::apis::meta::v1 as metav1;
use regex::Regex;
use serde_json::Value;

use super::schema::go_quote;

/// Why a selector was rejected; the text is what kube-apiserver reports.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    /// A label selector the apimachinery parser rejects.
    #[error("{0}")]
    InvalidLabelSelector(String),
    /// A field selector the apimachinery parser rejects.
    #[error("{0}")]
    InvalidFieldSelector(String),
    /// A well-formed field selector on a field the resource does not index.
    #[error("field label not supported: {0}")]
    UnsupportedField(String),
}

// ---------------------------------------------------------------------------------------------
// Label selectors
// ---------------------------------------------------------------------------------------------

/// A label selector operator (`selection.Operator`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LabelOperator {
    Equals,
    DoubleEquals,
    NotEquals,
    In,
    NotIn,
    Exists,
    DoesNotExist,
    GreaterThan,
    LessThan,
}

/// One requirement of a label selector; all of a selector's requirements must hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    key: String,
    operator: LabelOperator,
    values: Vec<String>,
}

impl Requirement {
    pub fn key(&self) -> &str {
        &self.key
    }

    pub fn operator(&self) -> LabelOperator {
        self.operator
    }

    pub fn values(&self) -> &[String] {
        &self.values
    }

    fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let value = labels.get(&self.key);
        match self.operator {
            LabelOperator::Equals | LabelOperator::DoubleEquals | LabelOperator::In => {
                value.is_some_and(|v| self.values.contains(v))
            }
            LabelOperator::NotEquals | LabelOperator::NotIn => {
                value.is_none_or(|v| !self.values.contains(v))
            }
            LabelOperator::Exists => value.is_some(),
            LabelOperator::DoesNotExist => value.is_none(),
            LabelOperator::GreaterThan | LabelOperator::LessThan => {
                let (Some(actual), Some(bound)) = (
                    value.and_then(|v| v.parse::<i64>().ok()),
                    self.values.first().and_then(|v| v.parse::<i64>().ok()),
                ) else {
                    return false;
                };
                if self.operator == LabelOperator::GreaterThan {
                    actual > bound
                } else {
                    actual < bound
                }
            }
        }
    }
}

impl fmt::Display for Requirement {
    /// `Requirement.String()`: values of `in`/`notin` sorted.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.operator == LabelOperator::DoesNotExist {
            f.write_str("!")?;
        }
        f.write_str(&self.key)?;
        let op = match self.operator {
            LabelOperator::Equals => "=",
            LabelOperator::DoubleEquals => "==",
            LabelOperator::NotEquals => "!=",
            LabelOperator::In => " in ",
            LabelOperator::NotIn => " notin ",
            LabelOperator::GreaterThan => ">",
            LabelOperator::LessThan => "<",
            LabelOperator::Exists | LabelOperator::DoesNotExist => return Ok(()),
        };
        f.write_str(op)?;
        let mut values = self.values.clone();
        values.sort();
        match self.operator {
            LabelOperator::In | LabelOperator::NotIn => write!(f, "({})", values.join(",")),
            _ => f.write_str(&values.join(",")),
        }
    }
}

/// A parsed label selector. The empty selector matches everything.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

impl LabelSelector {
    /// Parses the `labelSelector` query syntax exactly as `labels.Parse` does.
    pub fn parse(s: &str) -> Result<Self, SelectorError> {
        let mut requirements = Parser::new(s)
            .parse()
            .map_err(SelectorError::InvalidLabelSelector)?;
        // apimachinery sorts requirements by key for deterministic output.
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(Self { requirements })
    }

    /// Whether every requirement holds for these labels.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }

    /// Whether the selector places no restriction (matches everything).
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }
}

impl fmt::Display for LabelSelector {
    /// `Selector.String()`: the canonical form, requirements joined by `,`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.requirements.iter().map(ToString::to_string).collect();
        f.write_str(&parts.join(","))
    }
}

/// `metav1.LabelSelectorAsSelector`: `matchLabels` become `=` requirements, `matchExpressions`
/// `In`/`NotIn`/`Exists`/`DoesNotExist`; an empty selector matches everything. (A nil selector
/// matches nothing in kube; callers holding an `Option` must handle `None` themselves.)
pub fn label_selector_from_k8s(
    sel: &metav1::LabelSelector,
) -> Result<LabelSelector, SelectorError> {
    let mut requirements = Vec::new();
    for (key, value) in sel.match_labels.iter().flatten() {
        requirements.push(new_requirement(
            key,
            LabelOperator::Equals,
            vec![value.clone()],
        )?);
    }
    for expression in sel.match_expressions.iter().flatten() {
        let operator = match expression.operator.as_str() {
            "In" => LabelOperator::In,
            "NotIn" => LabelOperator::NotIn,
            "Exists" => LabelOperator::Exists,
            "DoesNotExist" => LabelOperator::DoesNotExist,
            other => {
                return Err(SelectorError::InvalidLabelSelector(format!(
                    "{} is not a valid label selector operator",
                    go_quote(other)
                )));
            }
        };
        let values = expression.values.clone().unwrap_or_default();
        requirements.push(new_requirement(&expression.key, operator, values)?);
    }
    requirements.sort_by(|a, b| a.key.cmp(&b.key));
    Ok(LabelSelector { requirements })
}

fn new_requirement(
    key: &str,
    operator: LabelOperator,
    values: Vec<String>,
) -> Result<Requirement, SelectorError> {
    validate_requirement(key, operator, &values, "")
        .map_err(SelectorError::InvalidLabelSelector)?;
    Ok(Requirement {
        key: key.to_string(),
        operator,
        values,
    })
}

/// `labels.NewRequirement`'s checks; `path` is the field path prefix (empty at top level). The
/// error is the aggregate of kube's field errors.
fn validate_requirement(
    key: &str,
    operator: LabelOperator,
    values: &[String],
    path: &str,
) -> Result<(), String> {
    let child = |name: &str| {
        if path.is_empty() {
            name.to_string()
        } else {
            format!("{path}.{name}")
        }
    };
    let mut errors = Vec::new();
    if let Some(problem) = label_key_problem(key) {
        errors.push(format!(
            "{}: Invalid value: {}: {problem}",
            child("key"),
            go_quote(key)
        ));
    }
    let values_path = child("values");
    let values_json = || Value::from(values.to_vec()).to_string();
    match operator {
        LabelOperator::In | LabelOperator::NotIn if values.is_empty() => errors.push(format!(
            "{values_path}: Invalid value: {}: for 'in', 'notin' operators, values set can't be empty",
            values_json()
        )),
        LabelOperator::Equals | LabelOperator::DoubleEquals | LabelOperator::NotEquals if values.len() != 1 => {
            errors.push(format!(
                "{values_path}: Invalid value: {}: exact-match compatibility requires one single value",
                values_json()
            ));
        }
        LabelOperator::Exists | LabelOperator::DoesNotExist if !values.is_empty() => errors.push(format!(
            "{values_path}: Invalid value: {}: values set must be empty for exists and does not exist",
            values_json()
        )),
        LabelOperator::GreaterThan | LabelOperator::LessThan => {
            if values.len() != 1 {
                errors.push(format!(
                    "{values_path}: Invalid value: {}: for 'Gt', 'Lt' operators, exactly one value is required",
                    values_json()
                ));
            }
            for (i, v) in values.iter().enumerate() {
                if v.parse::<i64>().is_err() {
                    errors.push(format!(
                        "{values_path}[{i}]: Invalid value: {}: for 'Gt', 'Lt' operators, the value must be an integer",
                        go_quote(v)
                    ));
                }
            }
        }
        _ => {}
    }
    for (i, v) in values.iter().enumerate() {
        if let Some(problem) = label_value_problem(v) {
            errors.push(format!(
                "{values_path}[{i}][{key}]: Invalid value: {}: {problem}",
                go_quote(v)
            ));
        }
    }
    errors.dedup();
    match errors.len() {
        0 => Ok(()),
        1 => Err(errors.remove(0)),
        _ => Err(format!("[{}]", errors.join(", "))),
    }
}

static QUALIFIED_NAME: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$").ok());
static LABEL_VALUE: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$").ok());
static DNS1123_SUBDOMAIN: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$").ok()
});

fn is_match(re: &LazyLock<Option<Regex>>, s: &str) -> bool {
    re.as_ref().is_some_and(|r| r.is_match(s))
}

const QUALIFIED_NAME_MESSAGE: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and \
     end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is \
     '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

/// `validation.IsQualifiedName`, joined with `; ` as `labels` does; `None` when valid.
fn label_key_problem(key: &str) -> Option<String> {
    let mut problems = Vec::new();
    let parts: Vec<&str> = key.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                problems.push("prefix part must be non-empty".to_string());
            } else {
                if prefix.len() > 253 {
                    problems.push("prefix part must be no more than 253 characters".to_string());
                }
                if !is_match(&DNS1123_SUBDOMAIN, prefix) {
                    problems.push(
                        "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric \
                         characters, '-' or '.', and must start and end with an alphanumeric character (e.g. \
                         'example.com', regex used for validation is \
                         '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
                            .to_string(),
                    );
                }
            }
            *name
        }
        _ => {
            return Some(format!(
                "a qualified name {QUALIFIED_NAME_MESSAGE} with an optional DNS subdomain prefix and '/' (e.g. \
                 'example.com/MyName')"
            ));
        }
    };
    if name.is_empty() {
        problems.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        problems.push("name part must be no more than 63 characters".to_string());
    }
    if !is_match(&QUALIFIED_NAME, name) {
        problems.push(format!("name part {QUALIFIED_NAME_MESSAGE}"));
    }
    (!problems.is_empty()).then(|| problems.join("; "))
}

/// `validation.IsValidLabelValue`, joined with `; `; `None` when valid.
fn label_value_problem(value: &str) -> Option<String> {
    let mut problems = Vec::new();
    if value.len() > 63 {
        problems.push("must be no more than 63 characters".to_string());
    }
    if !is_match(&LABEL_VALUE, value) {
        problems.push(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and \
             must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', \
             regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
                .to_string(),
        );
    }
    (!problems.is_empty()).then(|| problems.join("; "))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    EndOfString,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

fn keyword(s: &str) -> Option<Token> {
    Some(match s {
        ")" => Token::ClosedPar,
        "," => Token::Comma,
        "!" => Token::DoesNotExist,
        "==" => Token::DoubleEquals,
        "=" => Token::Equals,
        ">" => Token::GreaterThan,
        "in" => Token::In,
        "<" => Token::LessThan,
        "!=" => Token::NotEquals,
        "notin" => Token::NotIn,
        "(" => Token::OpenPar,
        _ => return None,
    })
}

fn is_whitespace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special(b: u8) -> bool {
    matches!(b, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

/// apimachinery's label-selector lexer, byte by byte.
fn lex(input: &str) -> Vec<(Token, String)> {
    let bytes = input.as_bytes();
    let mut pos = 0;
    let mut tokens = Vec::new();
    loop {
        while pos < bytes.len() && is_whitespace(bytes[pos]) {
            pos += 1;
        }
        if pos >= bytes.len() {
            tokens.push((Token::EndOfString, String::new()));
            return tokens;
        }
        let start = pos;
        if is_special(bytes[pos]) {
            // Longest run of special symbols that still forms a token.
            let mut best = None;
            let mut end = pos;
            while end < bytes.len() && is_special(bytes[end]) {
                end += 1;
                match keyword(&input[start..end]) {
                    Some(t) => best = Some((t, end)),
                    None if best.is_some() => break,
                    None => {}
                }
            }
            // Every single special symbol is a token, so `best` is always set.
            let (token, stop) = best.unwrap_or((Token::Identifier, end));
            tokens.push((token, input[start..stop].to_string()));
            pos = stop;
        } else {
            while pos < bytes.len() && !is_special(bytes[pos]) && !is_whitespace(bytes[pos]) {
                pos += 1;
            }
            let literal = String::from_utf8_lossy(&bytes[start..pos]).into_owned();
            let token = keyword(&literal).unwrap_or(Token::Identifier);
            tokens.push((token, literal));
        }
    }
}

/// Where the parser is: in a value list, `in`/`notin` are plain identifiers.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    KeyAndOperator,
    Values,
}

struct Parser {
    tokens: Vec<(Token, String)>,
    position: usize,
}

impl Parser {
    fn new(input: &str) -> Self {
        Self {
            tokens: lex(input),
            position: 0,
        }
    }

    fn lookahead(&self, context: Context) -> (Token, String) {
        let (token, literal) = self
            .tokens
            .get(self.position)
            .cloned()
            .unwrap_or((Token::EndOfString, String::new()));
        match token {
            Token::In | Token::NotIn if context == Context::Values => (Token::Identifier, literal),
            _ => (token, literal),
        }
    }

    fn consume(&mut self, context: Context) -> (Token, String) {
        let item = self.lookahead(context);
        self.position = (self.position + 1).min(self.tokens.len());
        item
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, String> {
        let mut requirements = Vec::new();
        loop {
            let (token, literal) = self.lookahead(Context::Values);
            match token {
                Token::Identifier | Token::DoesNotExist => {
                    let requirement = self
                        .parse_requirement()
                        .map_err(|e| format!("unable to parse requirement: {e}"))?;
                    requirements.push(requirement);
                    let (token, literal) = self.consume(Context::Values);
                    match token {
                        Token::EndOfString => return Ok(requirements),
                        Token::Comma => {
                            let (next, next_literal) = self.lookahead(Context::Values);
                            if next != Token::Identifier && next != Token::DoesNotExist {
                                return Err(format!(
                                    "found '{next_literal}', expected: identifier after ','"
                                ));
                            }
                        }
                        _ => {
                            return Err(format!(
                                "found '{literal}', expected: ',' or 'end of string'"
                            ));
                        }
                    }
                }
                Token::EndOfString => return Ok(requirements),
                _ => {
                    return Err(format!(
                        "found '{literal}', expected: !, identifier, or 'end of string'"
                    ));
                }
            }
        }
    }

    fn parse_requirement(&mut self) -> Result<Requirement, String> {
        let (key, inferred) = self.parse_key_and_infer_operator()?;
        if let Some(operator) = inferred {
            validate_requirement(&key, operator, &[], "")?;
            return Ok(Requirement {
                key,
                operator,
                values: Vec::new(),
            });
        }
        let operator = self.parse_operator()?;
        let values = match operator {
            LabelOperator::In | LabelOperator::NotIn => self.parse_values()?,
            _ => self.parse_exact_value()?,
        };
        validate_requirement(&key, operator, &values, "")?;
        Ok(Requirement {
            key,
            operator,
            values,
        })
    }

    /// The key, and `Exists`/`DoesNotExist` when no operator follows.
    fn parse_key_and_infer_operator(&mut self) -> Result<(String, Option<LabelOperator>), String> {
        let (mut token, mut literal) = self.consume(Context::Values);
        let negated = token == Token::DoesNotExist;
        if negated {
            (token, literal) = self.consume(Context::Values);
        }
        if token != Token::Identifier {
            return Err(format!("found '{literal}', expected: identifier"));
        }
        if let Some(problem) = label_key_problem(&literal) {
            // The parser validates with a nil field path, which Go prints as `<nil>`.
            return Err(format!(
                "<nil>: Invalid value: {}: {problem}",
                go_quote(&literal)
            ));
        }
        let (next, _) = self.lookahead(Context::Values);
        let operator = if negated {
            Some(LabelOperator::DoesNotExist)
        } else if matches!(next, Token::EndOfString | Token::Comma) {
            Some(LabelOperator::Exists)
        } else {
            None
        };
        Ok((literal, operator))
    }

    fn parse_operator(&mut self) -> Result<LabelOperator, String> {
        let (token, literal) = self.consume(Context::KeyAndOperator);
        Ok(match token {
            Token::In => LabelOperator::In,
            Token::Equals => LabelOperator::Equals,
            Token::DoubleEquals => LabelOperator::DoubleEquals,
            Token::GreaterThan => LabelOperator::GreaterThan,
            Token::LessThan => LabelOperator::LessThan,
            Token::NotIn => LabelOperator::NotIn,
            Token::NotEquals => LabelOperator::NotEquals,
            _ => {
                return Err(format!(
                    "found '{literal}', expected: in, notin, =, ==, !=, gt, lt"
                ));
            }
        })
    }

    /// `(a,b)` → sorted, de-duplicated values (apimachinery keeps them in a string set).
    fn parse_values(&mut self) -> Result<Vec<String>, String> {
        let (token, literal) = self.consume(Context::Values);
        if token != Token::OpenPar {
            return Err(format!("found '{literal}' expected: '('"));
        }
        let (token, literal) = self.lookahead(Context::Values);
        let mut values = match token {
            Token::Identifier | Token::Comma => {
                let values = self.parse_identifiers_list()?;
                if self.consume(Context::Values).0 != Token::ClosedPar {
                    // kube reports the token that opened the list here, not the offending one.
                    return Err(format!("found '{literal}', expected: ')'"));
                }
                values
            }
            Token::ClosedPar => {
                self.consume(Context::Values);
                vec![String::new()]
            }
            _ => {
                return Err(format!(
                    "found '{literal}', expected: ',', ')' or identifier"
                ));
            }
        };
        values.sort();
        values.dedup();
        Ok(values)
    }

    fn parse_identifiers_list(&mut self) -> Result<Vec<String>, String> {
        let mut values: Vec<String> = Vec::new();
        loop {
            let (token, literal) = self.consume(Context::Values);
            match token {
                Token::Identifier => {
                    values.push(literal);
                    let (next, next_literal) = self.lookahead(Context::Values);
                    match next {
                        Token::Comma => {}
                        Token::ClosedPar => return Ok(values),
                        _ => return Err(format!("found '{next_literal}', expected: ',' or ')'")),
                    }
                }
                Token::Comma => {
                    if values.is_empty() {
                        values.push(String::new()); // "(," holds an empty value
                    }
                    match self.lookahead(Context::Values).0 {
                        Token::ClosedPar => {
                            values.push(String::new()); // ",)" too
                            return Ok(values);
                        }
                        Token::Comma => {
                            self.consume(Context::Values);
                            values.push(String::new()); // and ",,"
                        }
                        _ => {}
                    }
                }
                _ => return Err(format!("found '{literal}', expected: ',', or identifier")),
            }
        }
    }

    fn parse_exact_value(&mut self) -> Result<Vec<String>, String> {
        let (token, _) = self.lookahead(Context::Values);
        if matches!(token, Token::EndOfString | Token::Comma) {
            return Ok(vec![String::new()]);
        }
        let (token, literal) = self.consume(Context::Values);
        if token == Token::Identifier {
            Ok(vec![literal])
        } else {
            Err(format!("found '{literal}', expected: identifier"))
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Field selectors
// ---------------------------------------------------------------------------------------------

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

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;
    use serde_json::json;

    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
            .collect()
    }

    fn label_error(s: &str) -> String {
        LabelSelector::parse(s).expect_err(s).to_string()
    }

    const NAME_PART: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start \
        and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for \
        validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    const LABEL_VALUE_RULE: &str = "a valid label must be an empty string or consist of alphanumeric characters, \
        '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  \
        or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

    #[test]
    fn equality_requirements_are_anded() {
        let s = LabelSelector::parse("app=web,tier==front").unwrap();
        assert!(s.matches(&labels(&[("app", "web"), ("tier", "front"), ("x", "y")])));
        assert!(!s.matches(&labels(&[("app", "web")])));
        assert!(!s.matches(&labels(&[("app", "db"), ("tier", "front")])));
    }

    #[test]
    fn inequality_and_notin_match_objects_without_the_label() {
        let ne = LabelSelector::parse("env!=prod").unwrap();
        assert!(ne.matches(&labels(&[])));
        assert!(ne.matches(&labels(&[("env", "dev")])));
        assert!(!ne.matches(&labels(&[("env", "prod")])));
        let notin = LabelSelector::parse("env notin (prod,staging)").unwrap();
        assert!(notin.matches(&labels(&[])));
        assert!(!notin.matches(&labels(&[("env", "staging")])));
    }

    #[test]
    fn set_based_requirements_tolerate_whitespace() {
        let s = LabelSelector::parse("  env in ( prod , staging ) ,  gpu , !legacy ").unwrap();
        assert!(s.matches(&labels(&[("env", "prod"), ("gpu", "")])));
        assert!(!s.matches(&labels(&[("env", "dev"), ("gpu", "")])));
        assert!(!s.matches(&labels(&[("env", "prod")])));
        assert!(!s.matches(&labels(&[
            ("env", "prod"),
            ("gpu", "1"),
            ("legacy", "true")
        ])));
        assert_eq!(s.to_string(), "env in (prod,staging),gpu,!legacy");
    }

    #[test]
    fn empty_values_and_keywords_as_identifiers() {
        let s = LabelSelector::parse("a in (),b=").unwrap();
        assert!(s.matches(&labels(&[("a", ""), ("b", "")])));
        assert!(!s.matches(&labels(&[("a", "x"), ("b", "")])));
        // `in` and `notin` are plain words where a key or value is expected.
        let s = LabelSelector::parse("in in (in,notin)").unwrap();
        assert!(s.matches(&labels(&[("in", "notin")])));
        assert_eq!(s.requirements()[0].values(), ["in", "notin"]);
    }

    #[test]
    fn numeric_comparisons() {
        let s = LabelSelector::parse("replicas>2,replicas<5").unwrap();
        assert!(s.matches(&labels(&[("replicas", "3")])));
        assert!(!s.matches(&labels(&[("replicas", "5")])));
        assert!(!s.matches(&labels(&[("replicas", "three")])));
        assert!(!s.matches(&labels(&[])));
        assert_eq!(
            label_error("replicas>x"),
            r#"unable to parse requirement: values[0]: Invalid value: "x": for 'Gt', 'Lt' operators, the value must be an integer"#
        );
    }

    #[test]
    fn empty_selector_matches_everything() {
        for s in ["", "   "] {
            let selector = LabelSelector::parse(s).unwrap();
            assert!(selector.is_empty());
            assert!(selector.matches(&labels(&[])));
        }
        assert!(!LabelSelector::parse("a").unwrap().is_empty());
    }

    #[test]
    fn requirements_are_sorted_by_key() {
        let s = LabelSelector::parse("b=2,a in (z,y)").unwrap();
        assert_eq!(s.to_string(), "a in (y,z),b=2");
    }

    #[test]
    fn syntax_errors_use_the_parser_wording() {
        assert_eq!(
            label_error("a b"),
            "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"
        );
        assert_eq!(
            label_error(",a"),
            "found ',', expected: !, identifier, or 'end of string'"
        );
        assert_eq!(
            label_error("a,"),
            "found '', expected: identifier after ','"
        );
        assert_eq!(
            label_error("a=b c"),
            "found 'c', expected: ',' or 'end of string'"
        );
        assert_eq!(
            label_error("x in (a"),
            "unable to parse requirement: found '', expected: ',' or ')'"
        );
        assert_eq!(
            label_error("x in a"),
            "unable to parse requirement: found 'a' expected: '('"
        );
        assert_eq!(
            label_error("x=(y)"),
            "unable to parse requirement: found '(', expected: identifier"
        );
        // The lexer takes the longest operator: `!=` here, not `!`.
        assert_eq!(
            label_error("!=a"),
            "found '!=', expected: !, identifier, or 'end of string'"
        );
        assert_eq!(
            label_error("!!a"),
            "unable to parse requirement: found '!', expected: identifier"
        );
    }

    #[test]
    fn keys_and_values_are_validated_like_apimachinery() {
        assert_eq!(
            label_error("-a=b"),
            format!(r#"unable to parse requirement: <nil>: Invalid value: "-a": {NAME_PART}"#)
        );
        assert_eq!(
            label_error("a=-b"),
            format!(
                r#"unable to parse requirement: values[0][a]: Invalid value: "-b": {LABEL_VALUE_RULE}"#
            )
        );
        let long = "v".repeat(64);
        assert_eq!(
            label_error(&format!("a={long}")),
            format!(
                r#"unable to parse requirement: values[0][a]: Invalid value: "{long}": must be no more than 63 characters"#
            )
        );
        assert!(
            label_error("Example.com/a=b").contains("prefix part a lowercase RFC 1123 subdomain")
        );
        assert!(LabelSelector::parse("example.com/My_Name.1=V-1").is_ok());
        assert!(label_error("a/b/c").contains("a qualified name must consist of"));
    }

    #[test]
    fn metav1_selectors_convert_like_label_selector_as_selector() {
        let selector = metav1::LabelSelector {
            match_labels: Some([("app".to_string(), "web".to_string())].into()),
            match_expressions: Some(vec![
                LabelSelectorRequirement {
                    key: "env".into(),
                    operator: "In".into(),
                    values: Some(vec!["prod".into(), "dev".into()]),
                },
                LabelSelectorRequirement {
                    key: "legacy".into(),
                    operator: "DoesNotExist".into(),
                    values: None,
                },
            ]),
        };
        let s = label_selector_from_k8s(&selector).unwrap();
        assert!(s.matches(&labels(&[("app", "web"), ("env", "dev")])));
        assert!(!s.matches(&labels(&[("app", "web"), ("env", "dev"), ("legacy", "1")])));
        assert!(
            label_selector_from_k8s(&metav1::LabelSelector::default())
                .unwrap()
                .is_empty()
        );

        let bad_op = metav1::LabelSelector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "a".into(),
                operator: "Equals".into(),
                values: None,
            }]),
            ..Default::default()
        };
        assert_eq!(
            label_selector_from_k8s(&bad_op).unwrap_err().to_string(),
            r#""Equals" is not a valid label selector operator"#
        );
        let no_values = metav1::LabelSelector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "a".into(),
                operator: "In".into(),
                values: Some(vec![]),
            }]),
            ..Default::default()
        };
        assert_eq!(
            label_selector_from_k8s(&no_values).unwrap_err().to_string(),
            "values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty"
        );
    }

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
