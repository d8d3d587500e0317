//! Kubernetes' name rules, as apimachinery's validation decides them: DNS-1123 labels
//! (namespaces, label values) and subdomains (object names).

/// Longest DNS-1123 label.
pub const MAX_DNS1123_LABEL_LENGTH: usize = 63;

/// Whether `value` is a DNS-1123 label: 1-63 of `[a-z0-9-]`, starting and ending alphanumeric.
pub fn is_dns1123_label(value: &str) -> bool {
    !value.is_empty()
        && value.len() <= MAX_DNS1123_LABEL_LENGTH
        && value
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !value.starts_with('-')
        && !value.ends_with('-')
}

/// Whether `value` is a DNS-1123 subdomain (an object name), as apimachinery's
/// `IsDNS1123Subdomain` decides: at most 253 characters of dot-separated parts of `[a-z0-9-]`,
/// each starting and ending alphanumeric. Unlike a DNS label, a part has no length limit of its
/// own (`nightly.` followed by 245 characters is a valid name).
pub fn is_dns1123_subdomain(value: &str) -> bool {
    value.len() <= 253
        && value.split('.').all(|part| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !part.starts_with('-')
                && !part.ends_with('-')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_label_and_subdomain_checks() {
        assert!(is_dns1123_label("team-a"));
        assert!(!is_dns1123_label("-team"));
        assert!(!is_dns1123_label("team-"));
        assert!(!is_dns1123_label("Team"));
        assert!(!is_dns1123_label(""));
        assert!(!is_dns1123_label(&"a".repeat(64)));
        assert!(is_dns1123_subdomain("db.nightly"));
        assert!(!is_dns1123_subdomain("db..nightly"));
        assert!(!is_dns1123_subdomain("../etc"));
    }

    #[test]
    fn subdomains_follow_apimachinery() {
        let long_part = format!("nightly.{}", "b".repeat(245));
        assert_eq!(long_part.len(), 253);
        assert!(is_dns1123_subdomain(&long_part));
        assert!(!is_dns1123_subdomain(&format!("{long_part}b")));
        for bad in ["", ".a", "a.", "a..b", "-a", "a-", "a.-b", "A", "a_b", "ü"] {
            assert!(!is_dns1123_subdomain(bad), "{bad:?}");
        }
        for good in ["a", "a.b", "a-b.c-d", "0.1", "x--y"] {
            assert!(is_dns1123_subdomain(good), "{good:?}");
        }
    }
}
