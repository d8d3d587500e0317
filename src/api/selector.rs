//! The one label-selector engine: apimachinery's `labels.Parse` for selector strings and
//! `metav1.LabelSelectorAsSelector` for `LabelSelector` objects, both giving a [`Selector`] that
//! matches label maps.
//!
//! Strings: `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`, and the numeric
//! `k>5` / `k<5`, joined by `,` (AND), whitespace-tolerant. Objects: `matchLabels` become `=`
//! requirements, `matchExpressions` `In`/`NotIn`/`Exists`/`DoesNotExist`. Keys must be qualified
//! names and values label values (`labels.NewRequirement`'s checks); `!=` and `notin` match
//! objects without the label; the empty selector matches everything.
//!
//! Errors display as kube-apiserver words them (`unable to parse requirement: found 'b',
//! expected: in, notin, =, ==, !=, gt, lt`); they are also structured ([`SelectorError`],
//! [`Problem`], [`KeyProblem`]) so a caller with wording of its own (the gateway, the admin
//! policy) can say the same thing its way.
//!
//! kube-core's `Selector`/`Expression` are not used as the representation: they have no string
//! parser, no key/value validation, no `>`/`<`, and `TryFrom<LabelSelector>` accepts what
//! apimachinery refuses (`In` with no values). Matching agrees with theirs (tested below).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::LazyLock;

use k8s_openapi::apimachinery::pkg::apis::meta::v1 as metav1;
use regex::Regex;
use serde_json::Value;

use crate::api::common::go_quote;

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

/// Why a selector was rejected; the text is what kube-apiserver reports.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    /// A selector string `labels.Parse` rejects (syntax, or a requirement it cannot build).
    #[error("{0}")]
    Parse(String),
    /// `matchExpressions[index]` names an operator other than the four of `LabelSelector`.
    #[error("{} is not a valid label selector operator", go_quote(.operator))]
    InvalidOperator {
        /// Position in `matchExpressions`.
        index: usize,
        /// The operator as written.
        operator: String,
    },
    /// A `matchLabels` entry (`expression: None`) or `matchExpressions[index]` that
    /// `labels.NewRequirement` rejects.
    #[error("{error}")]
    InvalidRequirement {
        /// Position in `matchExpressions`; `None` for a `matchLabels` entry.
        expression: Option<usize>,
        /// What is wrong with it.
        error: RequirementError,
    },
}

/// What `labels.NewRequirement` found wrong with one requirement: every problem, in its order.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", describe(.key, .values, .problems))]
pub struct RequirementError {
    key: String,
    values: Vec<String>,
    problems: Vec<Problem>,
}

impl RequirementError {
    /// The requirement's key as written.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The problems, in apimachinery's order (key, operator arity, then each value).
    pub fn problems(&self) -> &[Problem] {
        &self.problems
    }
}

/// One problem of a requirement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// The key is not a qualified name.
    Key(Vec<KeyProblem>),
    /// `in`/`notin` without values.
    EmptyValueSet,
    /// `=`, `==` or `!=` with other than exactly one value.
    NotOneValue,
    /// `exists`/`does not exist` with values.
    UnexpectedValues,
    /// `>`/`<` with other than exactly one value.
    NotOneBound,
    /// A `>`/`<` value that is not an integer.
    NotInteger {
        /// Position among the values.
        index: usize,
        /// The value.
        value: String,
    },
    /// A value that is not a label value.
    Value {
        /// Position among the values.
        index: usize,
        /// The value.
        value: String,
        /// What is wrong with it.
        problems: Vec<ValueProblem>,
    },
}

/// A problem of a label key (`validation.IsQualifiedName`), worded as the selector parser does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum KeyProblem {
    /// `/name`.
    #[error("prefix part must be non-empty")]
    PrefixEmpty,
    /// A prefix longer than a DNS subdomain may be.
    #[error("prefix part must be no more than 253 characters")]
    PrefixTooLong,
    /// A prefix that is not a DNS-1123 subdomain.
    #[error(
        "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or \
         '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for \
         validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
    )]
    PrefixNotSubdomain,
    /// More than one `/`.
    #[error(
        "a qualified name {QUALIFIED_NAME_MESSAGE} with an optional DNS subdomain prefix and '/' (e.g. \
         'example.com/MyName')"
    )]
    TooManySlashes,
    /// `prefix/` or the empty key.
    #[error("name part must be non-empty")]
    NameEmpty,
    /// A name part longer than 63 characters.
    #[error("name part must be no more than 63 characters")]
    NameTooLong,
    /// A name part with other characters than `[A-Za-z0-9_.-]` or not alphanumeric at its ends.
    #[error("name part {QUALIFIED_NAME_MESSAGE}")]
    NameInvalid,
}

/// A problem of a label value (`validation.IsValidLabelValue`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ValueProblem {
    /// Longer than 63 characters.
    #[error("must be no more than 63 characters")]
    TooLong,
    /// Other characters than `[A-Za-z0-9_.-]`, or not alphanumeric at its ends.
    #[error(
        "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and \
         must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', \
         regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
    )]
    Invalid,
}

const QUALIFIED_NAME_MESSAGE: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and \
     end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is \
     '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

fn joined<T: ToString>(problems: &[T]) -> String {
    problems
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// The aggregate of kube's field errors for one requirement (field path empty, as
/// `NewRequirement` is called with a nil path).
fn describe(key: &str, values: &[String], problems: &[Problem]) -> String {
    let values_json = || Value::from(values.to_vec()).to_string();
    let mut errors: Vec<String> = problems
        .iter()
        .map(|problem| match problem {
            Problem::Key(key_problems) => format!(
                "key: Invalid value: {}: {}",
                go_quote(key),
                joined(key_problems)
            ),
            Problem::EmptyValueSet => format!(
                "values: Invalid value: {}: for 'in', 'notin' operators, values set can't be empty",
                values_json()
            ),
            Problem::NotOneValue => format!(
                "values: Invalid value: {}: exact-match compatibility requires one single value",
                values_json()
            ),
            Problem::UnexpectedValues => format!(
                "values: Invalid value: {}: values set must be empty for exists and does not exist",
                values_json()
            ),
            Problem::NotOneBound => format!(
                "values: Invalid value: {}: for 'Gt', 'Lt' operators, exactly one value is required",
                values_json()
            ),
            Problem::NotInteger { index, value } => format!(
                "values[{index}]: Invalid value: {}: for 'Gt', 'Lt' operators, the value must be an integer",
                go_quote(value)
            ),
            Problem::Value {
                index,
                value,
                problems,
            } => format!(
                "values[{index}][{key}]: Invalid value: {}: {}",
                go_quote(value),
                joined(problems)
            ),
        })
        .collect();
    errors.dedup();
    match errors.len() {
        1 => errors.remove(0),
        _ => format!("[{}]", errors.join(", ")),
    }
}

// ---------------------------------------------------------------------------------------------
// Keys and values
// ---------------------------------------------------------------------------------------------

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

/// The problems of the part before `/` of a qualified name; empty when valid.
pub fn prefix_problems(prefix: &str) -> Vec<KeyProblem> {
    if prefix.is_empty() {
        return vec![KeyProblem::PrefixEmpty];
    }
    let mut problems = Vec::new();
    if prefix.len() > 253 {
        problems.push(KeyProblem::PrefixTooLong);
    }
    if !is_match(&DNS1123_SUBDOMAIN, prefix) {
        problems.push(KeyProblem::PrefixNotSubdomain);
    }
    problems
}

/// The problems of the name part of a qualified name (after any `/`); empty when valid.
pub fn name_part_problems(name: &str) -> Vec<KeyProblem> {
    let mut problems = Vec::new();
    if name.is_empty() {
        problems.push(KeyProblem::NameEmpty);
    } else if name.len() > 63 {
        problems.push(KeyProblem::NameTooLong);
    }
    if !is_match(&QUALIFIED_NAME, name) {
        problems.push(KeyProblem::NameInvalid);
    }
    problems
}

/// `validation.IsQualifiedName` for a label key; empty when valid.
pub fn key_problems(key: &str) -> Vec<KeyProblem> {
    match key.split('/').collect::<Vec<_>>().as_slice() {
        [name] => name_part_problems(name),
        [prefix, name] => {
            let mut problems = prefix_problems(prefix);
            problems.extend(name_part_problems(name));
            problems
        }
        _ => vec![KeyProblem::TooManySlashes],
    }
}

/// `validation.IsValidLabelValue`; empty when valid.
pub fn value_problems(value: &str) -> Vec<ValueProblem> {
    let mut problems = Vec::new();
    if value.len() > 63 {
        problems.push(ValueProblem::TooLong);
    }
    if !is_match(&LABEL_VALUE, value) {
        problems.push(ValueProblem::Invalid);
    }
    problems
}

// ---------------------------------------------------------------------------------------------
// Requirements and selectors
// ---------------------------------------------------------------------------------------------

/// A requirement's operator (`selection.Operator`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operator {
    /// `k=v` (and `matchLabels`).
    Equals,
    /// `k==v`.
    DoubleEquals,
    /// `k!=v`: also matches objects without `k`.
    NotEquals,
    /// `k in (a,b)` / `In`.
    In,
    /// `k notin (a,b)` / `NotIn`: also matches objects without `k`.
    NotIn,
    /// `k` / `Exists`.
    Exists,
    /// `!k` / `DoesNotExist`.
    DoesNotExist,
    /// `k>5`: the label is an integer above the bound.
    GreaterThan,
    /// `k<5`: the label is an integer below the bound.
    LessThan,
}

impl Operator {
    /// The operator of a `matchExpressions` entry; `None` for anything but the four
    /// `LabelSelector` knows.
    pub fn from_match_expression(operator: &str) -> Option<Self> {
        Some(match operator {
            "In" => Self::In,
            "NotIn" => Self::NotIn,
            "Exists" => Self::Exists,
            "DoesNotExist" => Self::DoesNotExist,
            _ => return None,
        })
    }
}

/// One requirement of a selector; all of a selector's requirements must hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    key: String,
    operator: Operator,
    values: Vec<String>,
}

impl Requirement {
    /// `labels.NewRequirement`: the key, the number of values the operator takes, integers for
    /// `>`/`<`, and every value are checked; all problems are reported.
    pub fn new(
        key: &str,
        operator: Operator,
        values: Vec<String>,
    ) -> Result<Self, RequirementError> {
        let mut problems = Vec::new();
        let key_problems = key_problems(key);
        if !key_problems.is_empty() {
            problems.push(Problem::Key(key_problems));
        }
        match operator {
            Operator::In | Operator::NotIn if values.is_empty() => {
                problems.push(Problem::EmptyValueSet);
            }
            Operator::Equals | Operator::DoubleEquals | Operator::NotEquals
                if values.len() != 1 =>
            {
                problems.push(Problem::NotOneValue);
            }
            Operator::Exists | Operator::DoesNotExist if !values.is_empty() => {
                problems.push(Problem::UnexpectedValues);
            }
            Operator::GreaterThan | Operator::LessThan => {
                if values.len() != 1 {
                    problems.push(Problem::NotOneBound);
                }
                for (index, value) in values.iter().enumerate() {
                    if value.parse::<i64>().is_err() {
                        problems.push(Problem::NotInteger {
                            index,
                            value: value.clone(),
                        });
                    }
                }
            }
            _ => {}
        }
        for (index, value) in values.iter().enumerate() {
            let value_problems = value_problems(value);
            if !value_problems.is_empty() {
                problems.push(Problem::Value {
                    index,
                    value: value.clone(),
                    problems: value_problems,
                });
            }
        }
        if !problems.is_empty() {
            return Err(RequirementError {
                key: key.to_string(),
                values,
                problems,
            });
        }
        Ok(Self {
            key: key.to_string(),
            operator,
            values,
        })
    }

    pub fn key(&self) -> &str {
        &self.key
    }

    pub fn operator(&self) -> Operator {
        self.operator
    }

    pub fn values(&self) -> &[String] {
        &self.values
    }

    /// Whether the labels satisfy this requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let value = labels.get(&self.key);
        match self.operator {
            Operator::Equals | Operator::DoubleEquals | Operator::In => {
                value.is_some_and(|v| self.values.contains(v))
            }
            Operator::NotEquals | Operator::NotIn => value.is_none_or(|v| !self.values.contains(v)),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let (Some(actual), Some(bound)) = (
                    value.and_then(|v| v.parse::<i64>().ok()),
                    self.values.first().and_then(|v| v.parse::<i64>().ok()),
                ) else {
                    return false;
                };
                if self.operator == Operator::GreaterThan {
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
        if self.operator == Operator::DoesNotExist {
            f.write_str("!")?;
        }
        f.write_str(&self.key)?;
        let op = match self.operator {
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::In => " in ",
            Operator::NotIn => " notin ",
            Operator::GreaterThan => ">",
            Operator::LessThan => "<",
            Operator::Exists | Operator::DoesNotExist => return Ok(()),
        };
        f.write_str(op)?;
        let mut values = self.values.clone();
        values.sort();
        match self.operator {
            Operator::In | Operator::NotIn => write!(f, "({})", values.join(",")),
            _ => f.write_str(&values.join(",")),
        }
    }
}

/// A label selector: requirements sorted by key, all of which must hold. The empty selector
/// matches everything. (A nil `LabelSelector` matches nothing in kube; callers holding an
/// `Option` decide what `None` means for them.)
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Selector {
    requirements: Vec<Requirement>,
}

impl Selector {
    /// Parses the `labelSelector` query syntax exactly as `labels.Parse` does.
    pub fn parse(s: &str) -> Result<Self, SelectorError> {
        let requirements = Parser::new(s).parse().map_err(SelectorError::Parse)?;
        Ok(Self::sorted(requirements))
    }

    /// `metav1.LabelSelectorAsSelector`: `matchLabels` (in key order) then `matchExpressions`
    /// (in order) become requirements; the first one apimachinery refuses is the error.
    pub fn from_label_selector(selector: &metav1::LabelSelector) -> Result<Self, SelectorError> {
        let mut requirements = Vec::new();
        for (key, value) in selector.match_labels.iter().flatten() {
            let requirement = Requirement::new(key, Operator::Equals, vec![value.clone()])
                .map_err(|error| SelectorError::InvalidRequirement {
                    expression: None,
                    error,
                })?;
            requirements.push(requirement);
        }
        for (index, expression) in selector.match_expressions.iter().flatten().enumerate() {
            let operator =
                Operator::from_match_expression(&expression.operator).ok_or_else(|| {
                    SelectorError::InvalidOperator {
                        index,
                        operator: expression.operator.clone(),
                    }
                })?;
            let values = expression.values.clone().unwrap_or_default();
            let requirement =
                Requirement::new(&expression.key, operator, values).map_err(|error| {
                    SelectorError::InvalidRequirement {
                        expression: Some(index),
                        error,
                    }
                })?;
            requirements.push(requirement);
        }
        Ok(Self::sorted(requirements))
    }

    /// apimachinery sorts requirements by key (stably) for a deterministic string form.
    fn sorted(mut requirements: Vec<Requirement>) -> Self {
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Self { requirements }
    }

    /// Whether every requirement holds for these labels.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }

    /// [`Self::matches`] for an object whose labels may be absent (no labels at all).
    pub fn matches_option(&self, labels: Option<&BTreeMap<String, String>>) -> bool {
        match labels {
            Some(labels) => self.matches(labels),
            None => self.matches(&BTreeMap::new()),
        }
    }

    /// Whether the selector places no restriction (matches everything).
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }
}

impl fmt::Display for Selector {
    /// `Selector.String()`: the canonical form, requirements joined by `,`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.requirements.iter().map(ToString::to_string).collect();
        f.write_str(&parts.join(","))
    }
}

// ---------------------------------------------------------------------------------------------
// The selector-string lexer and parser (apimachinery's, token for token)
// ---------------------------------------------------------------------------------------------

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
        let (operator, values) = match inferred {
            Some(operator) => (operator, Vec::new()),
            None => {
                let operator = self.parse_operator()?;
                let values = match operator {
                    Operator::In | Operator::NotIn => self.parse_values()?,
                    _ => self.parse_exact_value()?,
                };
                (operator, values)
            }
        };
        Requirement::new(&key, operator, values).map_err(|e| e.to_string())
    }

    /// The key, and `Exists`/`DoesNotExist` when no operator follows.
    fn parse_key_and_infer_operator(&mut self) -> Result<(String, Option<Operator>), String> {
        let (mut token, mut literal) = self.consume(Context::Values);
        let negated = token == Token::DoesNotExist;
        if negated {
            (token, literal) = self.consume(Context::Values);
        }
        if token != Token::Identifier {
            return Err(format!("found '{literal}', expected: identifier"));
        }
        let problems = key_problems(&literal);
        if !problems.is_empty() {
            // The parser validates with a nil field path, which Go prints as `<nil>`.
            return Err(format!(
                "<nil>: Invalid value: {}: {}",
                go_quote(&literal),
                joined(&problems)
            ));
        }
        let (next, _) = self.lookahead(Context::Values);
        let operator = if negated {
            Some(Operator::DoesNotExist)
        } else if matches!(next, Token::EndOfString | Token::Comma) {
            Some(Operator::Exists)
        } else {
            None
        };
        Ok((literal, operator))
    }

    fn parse_operator(&mut self) -> Result<Operator, String> {
        let (token, literal) = self.consume(Context::KeyAndOperator);
        Ok(match token {
            Token::In => Operator::In,
            Token::Equals => Operator::Equals,
            Token::DoubleEquals => Operator::DoubleEquals,
            Token::GreaterThan => Operator::GreaterThan,
            Token::LessThan => Operator::LessThan,
            Token::NotIn => Operator::NotIn,
            Token::NotEquals => Operator::NotEquals,
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
// Tests
// ---------------------------------------------------------------------------------------------

/// Also the label and expression builders of other modules' selector tests.
#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
pub(crate) mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    use super::*;

    pub(crate) fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
            .collect()
    }

    fn label_error(s: &str) -> String {
        Selector::parse(s).expect_err(s).to_string()
    }

    const NAME_PART: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start \
        and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for \
        validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    const LABEL_VALUE_RULE: &str = "a valid label must be an empty string or consist of alphanumeric characters, \
        '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  \
        or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

    #[test]
    fn equality_requirements_are_anded() {
        let s = Selector::parse("app=web,tier==front").unwrap();
        assert!(s.matches(&labels(&[("app", "web"), ("tier", "front"), ("x", "y")])));
        assert!(!s.matches(&labels(&[("app", "web")])));
        assert!(!s.matches(&labels(&[("app", "db"), ("tier", "front")])));
    }

    #[test]
    fn inequality_and_notin_match_objects_without_the_label() {
        let ne = Selector::parse("env!=prod").unwrap();
        assert!(ne.matches(&labels(&[])));
        assert!(ne.matches(&labels(&[("env", "dev")])));
        assert!(!ne.matches(&labels(&[("env", "prod")])));
        let notin = Selector::parse("env notin (prod,staging)").unwrap();
        assert!(notin.matches(&labels(&[])));
        assert!(!notin.matches(&labels(&[("env", "staging")])));
    }

    #[test]
    fn set_based_requirements_tolerate_whitespace() {
        let s = Selector::parse("  env in ( prod , staging ) ,  gpu , !legacy ").unwrap();
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
        let s = Selector::parse("a in (),b=").unwrap();
        assert!(s.matches(&labels(&[("a", ""), ("b", "")])));
        assert!(!s.matches(&labels(&[("a", "x"), ("b", "")])));
        // `in` and `notin` are plain words where a key or value is expected.
        let s = Selector::parse("in in (in,notin)").unwrap();
        assert!(s.matches(&labels(&[("in", "notin")])));
        assert_eq!(s.requirements()[0].values(), ["in", "notin"]);
    }

    #[test]
    fn numeric_comparisons() {
        let s = Selector::parse("replicas>2,replicas<5").unwrap();
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
            let selector = Selector::parse(s).unwrap();
            assert!(selector.is_empty());
            assert!(selector.matches(&labels(&[])));
        }
        assert!(!Selector::parse("a").unwrap().is_empty());
    }

    #[test]
    fn requirements_are_sorted_by_key() {
        let s = Selector::parse("b=2,a in (z,y)").unwrap();
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
        assert!(Selector::parse("example.com/My_Name.1=V-1").is_ok());
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
        let s = Selector::from_label_selector(&selector).unwrap();
        assert!(s.matches(&labels(&[("app", "web"), ("env", "dev")])));
        assert!(!s.matches(&labels(&[("app", "web"), ("env", "dev"), ("legacy", "1")])));
        assert!(
            Selector::from_label_selector(&metav1::LabelSelector::default())
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
            Selector::from_label_selector(&bad_op)
                .unwrap_err()
                .to_string(),
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
            Selector::from_label_selector(&no_values)
                .unwrap_err()
                .to_string(),
            "values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty"
        );
    }

    // Moved from the gateway's own parser: its accepted and refused selectors hold here.
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
                Selector::parse(selector).unwrap().matches_option(Some(&l)),
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
                !Selector::parse(selector).unwrap().matches_option(Some(&l)),
                "{selector}"
            );
        }
    }

    #[test]
    fn malformed_selectors_are_refused() {
        for selector in ["a b", "env in (a", "=x", "ключ=v", "a=b=c", "x in a,b)"] {
            assert!(Selector::parse(selector).is_err(), "{selector}");
        }
    }

    #[test]
    fn absent_labels_are_no_labels() {
        let s = Selector::parse("!legacy,env notin (prod)").unwrap();
        assert!(s.matches_option(None));
        assert!(!Selector::parse("app").unwrap().matches_option(None));
    }

    // Moved from the admin policy's matcher (`LabelSelector` objects).

    pub(crate) fn expression(
        key: &str,
        operator: &str,
        values: &[&str],
    ) -> LabelSelectorRequirement {
        LabelSelectorRequirement {
            key: key.into(),
            operator: operator.into(),
            values: (!values.is_empty()).then(|| values.iter().map(|v| (*v).into()).collect()),
        }
    }

    fn object(
        match_labels: &[(&str, &str)],
        expressions: Vec<LabelSelectorRequirement>,
    ) -> metav1::LabelSelector {
        metav1::LabelSelector {
            match_labels: (!match_labels.is_empty()).then(|| labels(match_labels)),
            match_expressions: (!expressions.is_empty()).then_some(expressions),
        }
    }

    fn selector(
        match_labels: &[(&str, &str)],
        expressions: Vec<LabelSelectorRequirement>,
    ) -> Selector {
        Selector::from_label_selector(&object(match_labels, expressions)).unwrap()
    }

    #[test]
    fn empty_label_selector_object_matches_everything() {
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

    // New: what every caller now shares.

    /// Label sets covering present/absent/other values of each key used below.
    fn label_sets() -> Vec<BTreeMap<String, String>> {
        let mut sets = vec![BTreeMap::new()];
        for app in [None, Some("web"), Some("db")] {
            for env in [None, Some("prod"), Some("dev"), Some("")] {
                for legacy in [None, Some("yes")] {
                    let mut set = BTreeMap::new();
                    for (key, value) in [("app", app), ("env", env), ("legacy", legacy)] {
                        if let Some(value) = value {
                            set.insert(key.to_string(), value.to_string());
                        }
                    }
                    sets.push(set);
                }
            }
        }
        sets
    }

    #[test]
    fn a_label_selector_object_and_its_string_form_select_the_same_objects() {
        let cases = [
            (object(&[("app", "web")], vec![]), "app=web"),
            (
                object(
                    &[("app", "web")],
                    vec![
                        expression("env", "In", &["prod", "dev"]),
                        expression("legacy", "DoesNotExist", &[]),
                    ],
                ),
                "app=web,env in (dev,prod),!legacy",
            ),
            (
                object(&[], vec![expression("env", "NotIn", &["prod"])]),
                "env notin (prod)",
            ),
            (
                object(
                    &[],
                    vec![
                        expression("app", "Exists", &[]),
                        expression("env", "In", &["", "prod"]),
                    ],
                ),
                "app,env in (,prod)",
            ),
            (object(&[], vec![]), ""),
        ];
        for (object, text) in cases {
            let from_object = Selector::from_label_selector(&object).unwrap();
            let from_text = Selector::parse(text).unwrap();
            for set in label_sets() {
                assert_eq!(
                    from_object.matches(&set),
                    from_text.matches(&set),
                    "{text} on {set:?}"
                );
            }
            // The object's canonical string form parses back to the same selector.
            let reparsed = Selector::parse(&from_object.to_string()).unwrap();
            assert_eq!(reparsed.to_string(), from_text.to_string(), "{text}");
        }
    }

    #[test]
    fn matching_agrees_with_kube_core() {
        use kube::core::SelectorExt as _;

        let objects = [
            object(
                &[("app", "web")],
                vec![expression("env", "In", &["prod", "dev"])],
            ),
            object(&[], vec![expression("env", "NotIn", &["prod"])]),
            object(
                &[],
                vec![
                    expression("app", "Exists", &[]),
                    expression("legacy", "DoesNotExist", &[]),
                ],
            ),
            object(&[], vec![]),
        ];
        for object in objects {
            let ours = Selector::from_label_selector(&object).unwrap();
            let theirs = kube::core::Selector::try_from(object.clone()).unwrap();
            for set in label_sets() {
                assert_eq!(
                    ours.matches(&set),
                    theirs.matches(&set),
                    "{object:?} on {set:?}"
                );
            }
        }
    }

    #[test]
    fn object_errors_say_which_entry_and_why() {
        let bad_label = object(&[("ok", "x"), ("bad key!", "x")], vec![]);
        let error = Selector::from_label_selector(&bad_label).unwrap_err();
        let SelectorError::InvalidRequirement {
            expression: None,
            error: requirement,
        } = &error
        else {
            panic!("{error:?}");
        };
        assert_eq!(requirement.key(), "bad key!");
        assert_eq!(
            requirement.problems(),
            [Problem::Key(vec![KeyProblem::NameInvalid])]
        );
        assert_eq!(
            error.to_string(),
            format!(r#"key: Invalid value: "bad key!": {NAME_PART}"#)
        );

        let bad_second = object(
            &[],
            vec![
                expression("a", "Exists", &[]),
                expression("b", "Exists", &["x", "-y"]),
            ],
        );
        let error = Selector::from_label_selector(&bad_second).unwrap_err();
        let SelectorError::InvalidRequirement {
            expression: Some(1),
            error: requirement,
        } = &error
        else {
            panic!("{error:?}");
        };
        assert_eq!(
            requirement.problems(),
            [
                Problem::UnexpectedValues,
                Problem::Value {
                    index: 1,
                    value: "-y".into(),
                    problems: vec![ValueProblem::Invalid]
                }
            ]
        );
        assert_eq!(
            error.to_string(),
            format!(
                r#"[values: Invalid value: ["x","-y"]: values set must be empty for exists and does not exist, values[1][b]: Invalid value: "-y": {LABEL_VALUE_RULE}]"#
            )
        );
    }

    #[test]
    fn key_parts_are_checked_separately() {
        assert_eq!(prefix_problems(""), [KeyProblem::PrefixEmpty]);
        assert_eq!(
            prefix_problems(&"a".repeat(254)),
            [KeyProblem::PrefixTooLong]
        );
        assert_eq!(
            prefix_problems("Example.com"),
            [KeyProblem::PrefixNotSubdomain]
        );
        assert_eq!(
            name_part_problems(""),
            [KeyProblem::NameEmpty, KeyProblem::NameInvalid]
        );
        assert_eq!(
            name_part_problems(&"a".repeat(64)),
            [KeyProblem::NameTooLong]
        );
        assert_eq!(key_problems("a/b/c"), [KeyProblem::TooManySlashes]);
        assert!(key_problems("example.com/My_Name.1").is_empty());
        assert_eq!(
            value_problems(&format!("-{}", "a".repeat(63))),
            [ValueProblem::TooLong, ValueProblem::Invalid]
        );
        assert!(value_problems("").is_empty());
    }
}
