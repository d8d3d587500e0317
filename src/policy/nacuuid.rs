//! NACUUIDs: the names of the Velero objects NAC creates for a tenant object, also used as the
//! value of the `openshift.io/oadp-*-origin-nacuuid` labels.
//!
//! Same shape and cutting rules as upstream's `GenerateNacObjectUUID`
//! (`migtools/oadp-non-admin`, `internal/common/function/function.go`): `<namespace>-<name>-<uuid>`;
//! when that is longer than 63 characters the name is cut first, and when the namespace alone is
//! longer than 25 characters the name is dropped and the namespace cut to 25 (`<ns[:25]>-<uuid>`).
//! The UUID (36 characters) always stays whole, so the result stays unique.
//!
//! Two improvements keep the result a valid DNS-1123 label (it is a label value and an object
//! name): characters a label cannot hold (the `.` allowed in object names, upper case) become
//! `-`/lower case, and a part cut right after a `-` loses that `-` (upstream could produce `--`).

use uuid::Uuid;

/// Longest DNS-1123 label (and label value).
pub const MAX_NACUUID_LENGTH: usize = crate::api::nonadmin::MAX_VELERO_OBJECT_NAME_LENGTH;
/// Length of a hyphenated UUID.
const UUID_LENGTH: usize = 36;
/// Room left for `<namespace>-<name>-` once the UUID is placed.
const ROOM_BEFORE_UUID: usize = MAX_NACUUID_LENGTH - UUID_LENGTH;
/// Longest namespace kept together with (a piece of) the name: upstream keeps room for the
/// two separators, so a namespace longer than this is cut and the name dropped.
const MAX_NAMESPACE_WITH_NAME: usize = ROOM_BEFORE_UUID - 2;

/// The NACUUID of the tenant object `namespace/name`, with `uuid` as its unique part.
///
/// The caller draws `uuid` (`Uuid::new_v4()`) once and stores the result in the tenant
/// object's status before creating anything, so a retried reconcile reuses it.
pub fn nacuuid(namespace: &str, name: &str, uuid: &Uuid) -> String {
    let uuid = uuid.hyphenated().to_string();
    let namespace = label_safe(namespace);
    let name = label_safe(name);
    let full = join_parts(&namespace, &name, &uuid);
    if full.len() <= MAX_NACUUID_LENGTH {
        return full;
    }
    if namespace.len() > MAX_NAMESPACE_WITH_NAME {
        return join_parts(cut(&namespace, MAX_NAMESPACE_WITH_NAME), "", &uuid);
    }
    let name_room = MAX_NAMESPACE_WITH_NAME - namespace.len();
    join_parts(&namespace, cut(&name, name_room), &uuid)
}

/// `namespace-name-uuid`, leaving out empty parts.
fn join_parts(namespace: &str, name: &str, uuid: &str) -> String {
    [namespace, name, uuid]
        .into_iter()
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join("-")
}

/// The first `max` characters of an ASCII part, without a dangling `-`.
fn cut(part: &str, max: usize) -> &str {
    let end = part
        .char_indices()
        .nth(max)
        .map_or(part.len(), |(index, _)| index);
    part[..end].trim_end_matches('-')
}

/// Lower-cases and replaces every character a DNS-1123 label cannot hold with `-`, and trims
/// leading/trailing `-` so the joined result starts and ends alphanumeric.
fn label_safe(part: &str) -> String {
    let mapped: String = part
        .chars()
        .map(|c| {
            let c = c.to_ascii_lowercase();
            if c.is_ascii_lowercase() || c.is_ascii_digit() {
                c
            } else {
                '-'
            }
        })
        .collect();
    mapped.trim_matches('-').to_owned()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::api::names::is_dns1123_label;

    const FIXED: &str = "0d0b7b2c-ee76-412d-a867-2c23b8aa51ab";

    fn fixed_uuid() -> Uuid {
        Uuid::parse_str(FIXED).unwrap()
    }

    fn assert_valid(result: &str) {
        assert!(is_dns1123_label(result), "not a DNS-1123 label: {result}");
        assert!(result.ends_with(FIXED), "uuid not kept whole: {result}");
        assert!(!result.contains("--"), "double hyphen: {result}");
    }

    #[test]
    fn short_names_are_kept_whole() {
        let result = nacuuid("team-a", "nightly", &fixed_uuid());
        assert_eq!(result, format!("team-a-nightly-{FIXED}"));
        assert_valid(&result);
    }

    #[test]
    fn exactly_63_characters_is_not_cut() {
        // 10 + 1 + 15 + 1 + 36 = 63
        let namespace = "n".repeat(10);
        let name = "b".repeat(15);
        let result = nacuuid(&namespace, &name, &fixed_uuid());
        assert_eq!(result.len(), 63);
        assert_eq!(result, format!("{namespace}-{name}-{FIXED}"));
        assert_valid(&result);
    }

    #[test]
    fn one_character_over_cuts_the_name_first() {
        let namespace = "n".repeat(10);
        let name = "b".repeat(16);
        let result = nacuuid(&namespace, &name, &fixed_uuid());
        assert_eq!(result, format!("{namespace}-{}-{FIXED}", "b".repeat(15)));
        assert_eq!(result.len(), 63);
        assert_valid(&result);
    }

    #[test]
    fn namespace_of_25_leaves_no_room_for_the_name() {
        let namespace = "n".repeat(25);
        let result = nacuuid(&namespace, "backup", &fixed_uuid());
        assert_eq!(result, format!("{namespace}-{FIXED}"));
        assert_valid(&result);
    }

    #[test]
    fn namespace_of_24_keeps_one_character_of_the_name() {
        let namespace = "n".repeat(24);
        let result = nacuuid(&namespace, "backup", &fixed_uuid());
        assert_eq!(result, format!("{namespace}-b-{FIXED}"));
        assert_eq!(result.len(), 63);
        assert_valid(&result);
    }

    #[test]
    fn namespace_over_25_drops_the_name_and_cuts_the_namespace() {
        let namespace = "w".repeat(73);
        let result = nacuuid(&namespace, &"e".repeat(73), &fixed_uuid());
        assert_eq!(result, format!("{}-{FIXED}", "w".repeat(25)));
        assert_eq!(result.len(), 62);
        assert_valid(&result);
    }

    #[test]
    fn namespace_of_26_with_short_name_fits_whole() {
        // 26 + 1 + 1 + 1 + 36 = 65: too long, namespace alone over 25 -> name dropped.
        let namespace = "n".repeat(26);
        let result = nacuuid(&namespace, "b", &fixed_uuid());
        assert_eq!(result, format!("{}-{FIXED}", "n".repeat(25)));
        assert_valid(&result);
    }

    #[test]
    fn a_cut_ending_in_a_hyphen_drops_it() {
        // name room is 27 - 10 - 2 = 15; the 15th character is '-'.
        let namespace = "n".repeat(10);
        let name = format!("{}-rest-of-name", "a".repeat(14));
        let result = nacuuid(&namespace, &name, &fixed_uuid());
        assert_eq!(result, format!("{namespace}-{}-{FIXED}", "a".repeat(14)));
        assert_valid(&result);
    }

    #[test]
    fn namespace_cut_ending_in_a_hyphen_drops_it() {
        let namespace = format!("{}-tail-of-a-long-namespace", "n".repeat(24));
        let result = nacuuid(&namespace, "x", &fixed_uuid());
        assert_eq!(result, format!("{}-{FIXED}", "n".repeat(24)));
        assert_valid(&result);
    }

    #[test]
    fn dots_of_object_names_become_hyphens() {
        let result = nacuuid("team-a", "db.nightly", &fixed_uuid());
        assert_eq!(result, format!("team-a-db-nightly-{FIXED}"));
        assert_valid(&result);
    }

    #[test]
    fn empty_parts_are_left_out() {
        assert_eq!(nacuuid("", "", &fixed_uuid()), FIXED);
        assert_eq!(
            nacuuid("team-a", "", &fixed_uuid()),
            format!("team-a-{FIXED}")
        );
        let long_name = "r".repeat(80);
        let result = nacuuid("", &long_name, &fixed_uuid());
        assert_eq!(result, format!("{}-{FIXED}", "r".repeat(25)));
        assert_valid(&result);
    }

    #[test]
    fn random_uuids_always_give_valid_labels() {
        for (namespace, name) in [
            ("a", "b"),
            ("some", &*"q".repeat(80)),
            (&*"t".repeat(80), ""),
            (&*"x".repeat(25), &*"y".repeat(40)),
        ] {
            let result = nacuuid(namespace, name, &Uuid::new_v4());
            assert!(is_dns1123_label(&result), "{result}");
            assert!(result.len() <= MAX_NACUUID_LENGTH);
            let uuid_part = &result[result.len() - UUID_LENGTH..];
            assert!(Uuid::parse_str(uuid_part).is_ok(), "{result}");
        }
    }
}
