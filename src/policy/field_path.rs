//! Field paths inside a spec (`uploaderConfig.parallelFilesUpload`,
//! `config["s3Url"]`), and reading/writing them in a JSON value.
//!
//! Paths are relative to the tenant spec (`spec.backupSpec`, `spec.restoreSpec`,
//! `spec.backupStorageLocationSpec`). Segments are separated by `.`; a segment that itself
//! contains `.` (a map key such as `app.kubernetes.io/name`) is written `["..."]`. Paths only
//! walk objects and maps: list items are compared whole.

use std::fmt;

use serde_json::{Map, Value};

/// A path of object keys inside a spec.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FieldPath(Vec<String>);

/// Why a path could not be parsed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid field path {path:?}: {reason}")]
pub struct FieldPathError {
    /// The text that failed to parse.
    pub path: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl FieldPath {
    /// A path from its segments (at least one).
    pub fn from_segments<I, S>(segments: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self(segments.into_iter().map(Into::into).collect())
    }

    /// Parses `a.b["c.d"].e`.
    pub fn parse(text: &str) -> Result<Self, FieldPathError> {
        let fail = |reason| FieldPathError {
            path: text.to_owned(),
            reason,
        };
        let mut segments = Vec::new();
        let mut rest = text;
        loop {
            if let Some(after_bracket) = rest.strip_prefix("[\"") {
                let end = after_bracket
                    .find("\"]")
                    .ok_or_else(|| fail("a [\" segment is not closed with \"]"))?;
                let segment = &after_bracket[..end];
                if segment.is_empty() {
                    return Err(fail("empty segment"));
                }
                if segment.contains('"') {
                    return Err(fail("a quoted segment cannot contain '\"'"));
                }
                segments.push(segment.to_owned());
                rest = &after_bracket[end + 2..];
            } else {
                let end = rest.find(['.', '[']).unwrap_or(rest.len());
                let segment = &rest[..end];
                if segment.is_empty() {
                    return Err(fail("empty segment"));
                }
                if segment.contains([']', '"']) {
                    return Err(fail("unexpected ']' or '\"'; quote keys as [\"key\"]"));
                }
                segments.push(segment.to_owned());
                rest = &rest[end..];
            }
            if rest.is_empty() {
                return Ok(Self(segments));
            }
            if let Some(after_dot) = rest.strip_prefix('.') {
                if after_dot.is_empty() {
                    return Err(fail("ends with '.'"));
                }
                rest = after_dot;
            } else if !rest.starts_with("[\"") {
                return Err(fail("expected '.' or [\" after a segment"));
            }
        }
    }

    /// The segments.
    pub fn segments(&self) -> &[String] {
        &self.0
    }

    /// The first segment (the spec's top-level field).
    pub fn top_level(&self) -> &str {
        self.0.first().map_or("", String::as_str)
    }

    /// The last segment (the field's own name).
    pub fn leaf(&self) -> &str {
        self.0.last().map_or("", String::as_str)
    }

    /// This path extended by `segment`.
    pub fn child(&self, segment: &str) -> Self {
        let mut segments = self.0.clone();
        segments.push(segment.to_owned());
        Self(segments)
    }

    /// The value at this path, if every step is an object holding the key.
    pub fn get<'a>(&self, root: &'a Value) -> Option<&'a Value> {
        self.0
            .iter()
            .try_fold(root, |value, segment| value.as_object()?.get(segment))
    }

    /// Writes `value` at this path, creating missing (or null) objects on the way.
    ///
    /// Returns false, changing nothing, when a step is a non-object value.
    pub fn set(&self, root: &mut Value, value: Value) -> bool {
        let Some((last, parents)) = self.0.split_last() else {
            return false;
        };
        let mut current = root;
        for segment in parents {
            if current.is_null() {
                *current = Value::Object(Map::new());
            }
            let Some(object) = current.as_object_mut() else {
                return false;
            };
            current = object
                .entry(segment.clone())
                .or_insert_with(|| Value::Object(Map::new()));
        }
        if current.is_null() {
            *current = Value::Object(Map::new());
        }
        match current.as_object_mut() {
            Some(object) => {
                object.insert(last.clone(), value);
                true
            }
            None => false,
        }
    }

    /// Removes the value at this path; true when something was removed.
    pub fn remove(&self, root: &mut Value) -> bool {
        let Some((last, parents)) = self.0.split_last() else {
            return false;
        };
        let mut current = root;
        for segment in parents {
            match current
                .as_object_mut()
                .and_then(|object| object.get_mut(segment))
            {
                Some(next) => current = next,
                None => return false,
            }
        }
        current
            .as_object_mut()
            .is_some_and(|object| object.remove(last).is_some())
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, segment) in self.0.iter().enumerate() {
            let plain = !segment.is_empty() && !segment.contains(['.', '[', ']', '"']);
            match (plain, index) {
                (true, 0) => f.write_str(segment)?,
                (true, _) => write!(f, ".{segment}")?,
                (false, _) => write!(f, "[\"{segment}\"]")?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn parses_plain_and_quoted_segments() {
        let path = FieldPath::parse("uploaderConfig.parallelFilesUpload").unwrap();
        assert_eq!(path.segments(), ["uploaderConfig", "parallelFilesUpload"]);
        assert_eq!(path.top_level(), "uploaderConfig");
        assert_eq!(path.leaf(), "parallelFilesUpload");

        let path =
            FieldPath::parse("labelSelector.matchLabels[\"app.kubernetes.io/name\"]").unwrap();
        assert_eq!(
            path.segments(),
            ["labelSelector", "matchLabels", "app.kubernetes.io/name"]
        );
        let path = FieldPath::parse("[\"a.b\"].c").unwrap();
        assert_eq!(path.segments(), ["a.b", "c"]);
    }

    #[test]
    fn display_round_trips() {
        for text in [
            "ttl",
            "config.s3Url",
            "labelSelector.matchLabels[\"app.kubernetes.io/name\"]",
            "[\"a.b\"].c",
        ] {
            let path = FieldPath::parse(text).unwrap();
            assert_eq!(path.to_string(), text);
            assert_eq!(FieldPath::parse(&path.to_string()).unwrap(), path);
        }
    }

    #[test]
    fn rejects_malformed_paths() {
        for text in [
            "",
            ".ttl",
            "ttl.",
            "a..b",
            "a[\"b",
            "a[\"\"]",
            "a]b",
            "a[\"b\"]c",
        ] {
            assert!(FieldPath::parse(text).is_err(), "{text:?} parsed");
        }
        let error = FieldPath::parse("a..b").unwrap_err();
        assert_eq!(
            error.to_string(),
            "invalid field path \"a..b\": empty segment"
        );
    }

    #[test]
    fn get_set_remove() {
        let mut spec = json!({"ttl": "1h", "uploaderConfig": null, "config": {"a": "b"}});
        let ttl = FieldPath::parse("ttl").unwrap();
        assert_eq!(ttl.get(&spec), Some(&json!("1h")));

        let nested = FieldPath::parse("uploaderConfig.parallelFilesUpload").unwrap();
        assert_eq!(nested.get(&spec), None);
        assert!(nested.set(&mut spec, json!(4)));
        assert_eq!(spec["uploaderConfig"], json!({"parallelFilesUpload": 4}));

        let deep = FieldPath::parse("labelSelector.matchLabels.tier").unwrap();
        assert!(deep.set(&mut spec, json!("db")));
        assert_eq!(spec["labelSelector"]["matchLabels"]["tier"], "db");

        let through_scalar = FieldPath::parse("ttl.inner").unwrap();
        assert!(!through_scalar.set(&mut spec, json!(1)));
        assert_eq!(spec["ttl"], "1h");

        assert!(FieldPath::parse("config.a").unwrap().remove(&mut spec));
        assert!(!FieldPath::parse("config.a").unwrap().remove(&mut spec));
        assert_eq!(spec["config"], json!({}));
    }

    #[test]
    fn child_extends() {
        let path = FieldPath::parse("config").unwrap().child("s3Url");
        assert_eq!(path.to_string(), "config.s3Url");
        assert_eq!(FieldPath::from_segments(["a", "b"]).to_string(), "a.b");
    }
}
