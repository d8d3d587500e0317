//! Building blocks shared by the Velero and NAC resource types: unknown-field preservation,
//! open (forward-compatible) string enums, Go-style durations and quoting, CRD schema helpers.

use std::collections::BTreeMap;
use std::fmt;
use std::fmt::Write as _;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// Fields of an object that this version of NAC does not know about (for example fields a
/// newer Velero added). They are kept verbatim so a read-modify-write loses nothing.
pub type UnknownFields = BTreeMap<String, Value>;

/// Declares a string enum that keeps values it does not know.
///
/// Known values become unit variants; any other string deserializes into `Other(String)` and
/// serializes back unchanged, so a phase introduced by a newer Velero survives a round trip.
/// The JSON schema is `type: string`, listing the known values as `enum` unless the enum is
/// declared `unconstrained` (for fields whose upstream CRD puts no `enum` on them).
macro_rules! open_string_enum {
    (@constrained) => { true };
    (@constrained unconstrained) => { false };
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident $( ( $unconstrained:ident ) )? {
            $( $(#[$vmeta:meta])* $variant:ident = $value:literal ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash)]
        $vis enum $name {
            $( $(#[$vmeta])* $variant, )+
            /// A value this version of NAC does not know, kept verbatim.
            Other(String),
        }

        impl $name {
            /// Every value this version of NAC knows, in declaration order.
            pub const KNOWN_VALUES: &'static [&'static str] = &[$($value),+];

            /// The wire value.
            pub fn as_str(&self) -> &str {
                match self {
                    $( Self::$variant => $value, )+
                    Self::Other(value) => value,
                }
            }

            /// False for values kept in `Other`.
            pub fn is_known(&self) -> bool {
                !matches!(self, Self::Other(_))
            }
        }

        /// The first listed value, so structs with a required field of this type can derive
        /// `Default`.
        impl Default for $name {
            fn default() -> Self {
                Self::from(Self::KNOWN_VALUES[0])
            }
        }

        impl From<&str> for $name {
            fn from(value: &str) -> Self {
                match value {
                    $( $value => Self::$variant, )+
                    other => Self::Other(other.to_owned()),
                }
            }
        }

        impl From<String> for $name {
            fn from(value: String) -> Self {
                match value.as_str() {
                    $( $value => Self::$variant, )+
                    _ => Self::Other(value),
                }
            }
        }

        impl std::str::FromStr for $name {
            type Err = std::convert::Infallible;

            fn from_str(value: &str) -> Result<Self, Self::Err> {
                Ok(Self::from(value))
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                String::deserialize(deserializer).map(Self::from)
            }
        }

        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn json_schema(_generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
                $crate::api::common::open_enum_schema(
                    Self::KNOWN_VALUES,
                    $crate::api::common::open_string_enum!(@constrained $($unconstrained)?),
                )
            }
        }

        // The gateway's views carry these types, so its OpenAPI document says what the CRDs say.
        impl utoipa::PartialSchema for $name {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                $crate::api::common::open_enum_openapi_schema(Self::KNOWN_VALUES)
            }
        }

        impl utoipa::ToSchema for $name {
            fn name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }
        }
    };
}
pub(crate) use open_string_enum;

/// Schema of an open string enum: a string, with the known values as `enum` when constrained.
pub fn open_enum_schema(known_values: &[&str], constrained: bool) -> Schema {
    if constrained {
        json_schema!({ "type": "string", "enum": known_values })
    } else {
        json_schema!({ "type": "string" })
    }
}

/// An open string enum in an OpenAPI document, which describes answers rather than what the API
/// server admits: one of the known values, or a value of a newer Velero (kept verbatim in
/// `Other`), so generated clients do not fail on the day Velero adds a phase.
pub fn open_enum_openapi_schema(
    known_values: &[&str],
) -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
    use utoipa::openapi::schema::{AnyOfBuilder, ObjectBuilder, Schema, SchemaType, Type};
    let string = || ObjectBuilder::new().schema_type(SchemaType::Type(Type::String));
    let any_of = AnyOfBuilder::new()
        .item(string().enum_values(Some(known_values.iter().copied())))
        .item(string().description(Some("A value a newer version reports.")));
    utoipa::openapi::RefOr::T(Schema::AnyOf(any_of.build()))
}

/// A Kubernetes `metav1.Duration`: a Go `time.Duration` string such as `"720h0m0s"`.
///
/// The original text is kept as written (`"24h"` stays `"24h"`), so round trips are exact;
/// [`GoDuration::parse`] interprets it and [`GoDuration::from_std`] formats like Go does.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct GoDuration(pub String);

/// A duration string Go's `time.ParseDuration` would reject, or a negative one.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid duration {input:?}: {reason}")]
pub struct DurationError {
    /// The text that failed to parse.
    pub input: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

const NANOS_PER_UNIT: &[(&str, u128)] = &[
    ("ns", 1),
    ("us", 1_000),
    ("\u{b5}s", 1_000),
    ("\u{3bc}s", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
    ("h", 3_600_000_000_000),
];

impl GoDuration {
    /// Wraps a duration string without checking it.
    pub fn new(text: impl Into<String>) -> Self {
        Self(text.into())
    }

    /// The duration text as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Formats a duration exactly as Go's `time.Duration.String()` does (`"1h0m0s"`, `"1.5s"`).
    pub fn from_std(duration: std::time::Duration) -> Self {
        Self(format_go_duration(duration))
    }

    /// Parses the text with the rules of Go's `time.ParseDuration`. Negative durations are
    /// rejected because no Velero duration field means anything when negative.
    pub fn parse(&self) -> Result<std::time::Duration, DurationError> {
        parse_go_duration(&self.0)
    }
}

impl fmt::Display for GoDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<std::time::Duration> for GoDuration {
    fn from(duration: std::time::Duration) -> Self {
        Self::from_std(duration)
    }
}

impl Serialize for GoDuration {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for GoDuration {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Self)
    }
}

impl JsonSchema for GoDuration {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Duration".into()
    }

    fn json_schema(_generator: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": "string" })
    }
}

fn parse_go_duration(input: &str) -> Result<std::time::Duration, DurationError> {
    let fail = |reason| DurationError {
        input: input.to_owned(),
        reason,
    };
    let (negative, mut rest) = match input.as_bytes().first() {
        Some(b'-') => (true, &input[1..]),
        Some(b'+') => (false, &input[1..]),
        _ => (false, input),
    };
    if rest == "0" {
        return Ok(std::time::Duration::ZERO);
    }
    if rest.is_empty() {
        return Err(fail("empty duration"));
    }
    let mut total_nanos: u128 = 0;
    while !rest.is_empty() {
        let integer_len = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let (integer, after_integer) = rest.split_at(integer_len);
        let (fraction, after_number) = match after_integer.strip_prefix('.') {
            Some(after_dot) => {
                let fraction_len = after_dot
                    .find(|c: char| !c.is_ascii_digit())
                    .unwrap_or(after_dot.len());
                after_dot.split_at(fraction_len)
            }
            None => ("", after_integer),
        };
        if integer.is_empty() && fraction.is_empty() {
            return Err(fail("expected a number"));
        }
        let unit_len = after_number
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(after_number.len());
        let (unit, after_unit) = after_number.split_at(unit_len);
        if unit.is_empty() {
            return Err(fail("missing unit"));
        }
        let unit_nanos = NANOS_PER_UNIT
            .iter()
            .find(|(name, _)| *name == unit)
            .map(|(_, nanos)| *nanos)
            .ok_or_else(|| fail("unknown unit"))?;
        let whole: u128 = if integer.is_empty() {
            0
        } else {
            integer.parse().map_err(|_| fail("number too large"))?
        };
        let mut part = whole
            .checked_mul(unit_nanos)
            .ok_or_else(|| fail("number too large"))?;
        // Fractions are truncated to whole nanoseconds, as Go does.
        let mut scale = unit_nanos;
        for digit in fraction.bytes() {
            scale /= 10;
            if scale == 0 {
                break;
            }
            part += u128::from(digit - b'0') * scale;
        }
        total_nanos = total_nanos
            .checked_add(part)
            .ok_or_else(|| fail("number too large"))?;
        rest = after_unit;
    }
    if negative && total_nanos != 0 {
        return Err(fail("negative durations are not allowed"));
    }
    // Go durations are int64 nanoseconds.
    if total_nanos > i64::MAX as u128 {
        return Err(fail("duration overflows int64 nanoseconds"));
    }
    let seconds =
        u64::try_from(total_nanos / 1_000_000_000).map_err(|_| fail("number too large"))?;
    let nanos = u32::try_from(total_nanos % 1_000_000_000).map_err(|_| fail("number too large"))?;
    Ok(std::time::Duration::new(seconds, nanos))
}

fn format_go_duration(duration: std::time::Duration) -> String {
    let total_nanos = duration.as_nanos();
    if total_nanos == 0 {
        return "0s".to_owned();
    }
    if total_nanos < 1_000_000_000 {
        // Below one second Go picks the largest unit that keeps the integer part non-zero.
        let (unit, unit_nanos) = if total_nanos < 1_000 {
            ("ns", 1)
        } else if total_nanos < 1_000_000 {
            ("\u{b5}s", 1_000)
        } else {
            ("ms", 1_000_000)
        };
        return format!(
            "{}{}{}",
            total_nanos / unit_nanos,
            fraction_digits(total_nanos % unit_nanos, unit_nanos),
            unit
        );
    }
    let seconds = duration.as_secs();
    let hours = seconds / 3600;
    let minutes = (seconds % 3600) / 60;
    let secs = seconds % 60;
    let fraction = fraction_digits(u128::from(duration.subsec_nanos()), 1_000_000_000);
    if hours > 0 {
        format!("{hours}h{minutes}m{secs}{fraction}s")
    } else if minutes > 0 {
        format!("{minutes}m{secs}{fraction}s")
    } else {
        format!("{secs}{fraction}s")
    }
}

/// `.ddd` for `remainder / unit`, trailing zeros dropped; empty when the remainder is zero.
fn fraction_digits(remainder: u128, unit: u128) -> String {
    if remainder == 0 {
        return String::new();
    }
    let width = unit.to_string().len() - 1;
    let digits = format!("{remainder:0width$}");
    format!(".{}", digits.trim_end_matches('0'))
}

/// Schema for an array of arbitrary objects whose contents the API server must keep as is
/// (Velero's restore `initContainers`, a list of raw container specs).
pub fn preserved_object_list_schema(_generator: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "array",
        "nullable": true,
        "items": { "type": "object", "x-kubernetes-preserve-unknown-fields": true },
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

/// Schema for a controller-written copy of a Velero object's spec or status inside a NAC
/// object's status: the Velero schema, without `enum` constraints and keeping unknown fields
/// at every level, so a status copied from a newer Velero (new phase, new field) is stored
/// whole instead of being rejected or pruned by the API server.
pub fn tolerant_copy_schema<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    let mut schema = generator.subschema_for::<T>();
    relax_schema(&mut schema);
    schema
}

fn relax_schema(schema: &mut Schema) {
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    object.remove("enum");
    let is_object_node = object.contains_key("properties")
        || object
            .get("type")
            .is_some_and(|kind| type_includes(kind, "object"));
    if is_object_node && !object.contains_key("additionalProperties") {
        object.insert(
            "x-kubernetes-preserve-unknown-fields".to_owned(),
            Value::Bool(true),
        );
    }
    for key in ["properties", "patternProperties"] {
        if let Some(Value::Object(properties)) = object.get_mut(key) {
            for property in properties.values_mut() {
                relax_value(property);
            }
        }
    }
    for key in ["items", "additionalProperties", "not"] {
        if let Some(child) = object.get_mut(key) {
            relax_value(child);
        }
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(children)) = object.get_mut(key) {
            for child in children {
                relax_value(child);
            }
        }
    }
}

fn relax_value(value: &mut Value) {
    if let Ok(mut schema) = Schema::try_from(value.clone()) {
        relax_schema(&mut schema);
        *value = schema.to_value();
    }
}

fn type_includes(kind: &Value, wanted: &str) -> bool {
    match kind {
        Value::String(name) => name == wanted,
        Value::Array(names) => names.iter().any(|name| name == wanted),
        _ => false,
    }
}

/// Lets `skip_serializing_if` drop zero counters.
pub fn is_zero(value: &i64) -> bool {
    *value == 0
}

/// Go's `strconv.Quote`: double-quoted with Go escapes, printable Unicode kept.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use std::time::Duration;

    open_string_enum! {
        /// Test enum.
        enum Colour {
            Red = "Red",
            Green = "Green",
        }
    }

    open_string_enum! {
        /// Test enum without schema constraint.
        enum Mode(unconstrained) {
            Fast = "fast",
        }
    }

    #[test]
    fn open_enum_parses_known_and_keeps_unknown_values() {
        assert_eq!(Colour::from("Red"), Colour::Red);
        assert_eq!(Colour::from("Blue"), Colour::Other("Blue".into()));
        assert!(!Colour::from("Blue").is_known());
        assert_eq!(Colour::Other("Blue".into()).as_str(), "Blue");
        let parsed: Colour = serde_json::from_str("\"Blue\"").unwrap();
        assert_eq!(serde_json::to_string(&parsed).unwrap(), "\"Blue\"");
        let parsed: Colour = serde_json::from_str("\"Green\"").unwrap();
        assert_eq!(parsed, Colour::Green);
        assert_eq!(Colour::Green.to_string(), "Green");
        assert_eq!(Colour::KNOWN_VALUES, &["Red", "Green"]);
    }

    #[test]
    fn open_enum_schema_lists_known_values_unless_unconstrained() {
        let colour = schemars::schema_for!(Colour);
        assert_eq!(
            colour.get("enum").unwrap(),
            &serde_json::json!(["Red", "Green"])
        );
        assert_eq!(Mode::from("fast"), Mode::Fast);
        assert!(Mode::Fast.is_known());
        let mode = schemars::schema_for!(Mode);
        assert!(mode.get("enum").is_none());
        assert_eq!(mode.get("type").unwrap(), "string");
    }

    #[test]
    fn parses_go_durations() {
        let cases = [
            ("0", Duration::ZERO),
            ("0s", Duration::ZERO),
            ("720h0m0s", Duration::from_secs(720 * 3600)),
            ("720h", Duration::from_secs(720 * 3600)),
            ("1h30m", Duration::from_secs(5400)),
            ("1.5h", Duration::from_secs(5400)),
            ("10m", Duration::from_secs(600)),
            ("300ms", Duration::from_millis(300)),
            ("1m0.5s", Duration::from_millis(60_500)),
            ("2us", Duration::from_micros(2)),
            ("2\u{b5}s", Duration::from_micros(2)),
            ("7ns", Duration::from_nanos(7)),
            ("+5s", Duration::from_secs(5)),
            (".5s", Duration::from_millis(500)),
        ];
        for (text, expected) in cases {
            assert_eq!(GoDuration::new(text).parse().unwrap(), expected, "{text}");
        }
    }

    #[test]
    fn rejects_invalid_go_durations() {
        for text in ["", "5", "h", "1x", "-1s", "1.s.", "9999999999h"] {
            assert!(GoDuration::new(text).parse().is_err(), "{text}");
        }
    }

    #[test]
    fn formats_like_go() {
        let cases = [
            (Duration::ZERO, "0s"),
            (Duration::from_secs(720 * 3600), "720h0m0s"),
            (Duration::from_secs(3600), "1h0m0s"),
            (Duration::from_secs(90), "1m30s"),
            (Duration::from_millis(1500), "1.5s"),
            (Duration::from_millis(300), "300ms"),
            (Duration::from_micros(1500), "1.5ms"),
            (Duration::from_nanos(1500), "1.5\u{b5}s"),
            (Duration::from_nanos(7), "7ns"),
            (Duration::from_millis(3_600_250), "1h0m0.25s"),
        ];
        for (duration, expected) in cases {
            assert_eq!(GoDuration::from_std(duration).as_str(), expected);
            assert_eq!(GoDuration::new(expected).parse().unwrap(), duration);
        }
    }

    #[test]
    fn duration_round_trips_its_text_verbatim() {
        let parsed: GoDuration = serde_json::from_str("\"24h\"").unwrap();
        assert_eq!(serde_json::to_string(&parsed).unwrap(), "\"24h\"");
    }

    #[test]
    fn tolerant_schema_drops_enums_and_keeps_unknown_fields() {
        #[derive(JsonSchema)]
        #[allow(dead_code)]
        struct Inner {
            colour: Option<Colour>,
        }
        #[derive(JsonSchema)]
        #[allow(dead_code)]
        struct Outer {
            inner: Inner,
            list: Vec<Inner>,
        }
        let mut generator = schemars::generate::SchemaSettings::openapi3()
            .with(|settings| settings.inline_subschemas = true)
            .into_generator();
        let schema = tolerant_copy_schema::<Outer>(&mut generator).to_value();
        let text = schema.to_string();
        assert!(!text.contains("\"enum\""), "{text}");
        assert_eq!(schema["x-kubernetes-preserve-unknown-fields"], true);
        assert_eq!(
            schema["properties"]["inner"]["x-kubernetes-preserve-unknown-fields"],
            true
        );
        assert_eq!(
            schema["properties"]["list"]["items"]["x-kubernetes-preserve-unknown-fields"],
            true
        );
    }
}
