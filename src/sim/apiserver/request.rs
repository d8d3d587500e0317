//! Parses a request path and method into Kubernetes request attributes, as kube-apiserver's
//! RequestInfoFactory does. Pure.

/// What a request addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestTarget {
    /// A path outside the resource tree (`/version`, `/apis`, `/healthz`...).
    NonResource(String),
    /// A resource request.
    Resource(ResourceRequest),
}

/// The attributes of a resource request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ResourceRequest {
    /// Kubernetes verb: get, list, watch, create, update, patch, delete, deletecollection.
    pub verb: String,
    /// "" for the legacy core group.
    pub group: String,
    pub version: String,
    /// Empty for cluster-scoped requests.
    pub namespace: String,
    pub resource: String,
    pub subresource: String,
    pub name: String,
}

/// Subresources of namespaces that stay on the namespace itself (`/namespaces/x/status`).
const NAMESPACE_SUBRESOURCES: &[&str] = &["status", "finalize"];

/// Parses `method` + `path` (+ whether `watch=true` was asked) into a target.
pub fn parse(method: &str, path: &str, watch_param: bool) -> RequestTarget {
    let trimmed = path.trim_matches('/');
    let parts: Vec<&str> = trimmed.split('/').filter(|p| !p.is_empty()).collect();
    let (group, version, rest): (&str, &str, &[&str]) = match parts.as_slice() {
        ["api", version, rest @ ..] if !rest.is_empty() => ("", version, rest),
        ["apis", group, version, rest @ ..] if !rest.is_empty() => (group, version, rest),
        _ => return RequestTarget::NonResource(format!("/{trimmed}")),
    };
    let mut rest: Vec<&str> = rest.to_vec();
    let mut watch_prefix = false;
    if rest.first() == Some(&"watch") {
        watch_prefix = true;
        rest.remove(0);
    }
    let mut namespace = String::new();
    if rest.first() == Some(&"namespaces") && rest.len() > 1 {
        namespace = rest[1].to_string();
        if rest.len() > 2 && !NAMESPACE_SUBRESOURCES.contains(&rest[2]) {
            rest.drain(0..2);
        }
    }
    let resource = rest.first().copied().unwrap_or_default().to_string();
    let name = rest.get(1).copied().unwrap_or_default().to_string();
    let subresource = rest.get(2).copied().unwrap_or_default().to_string();
    let verb = match method {
        "GET" | "HEAD" if watch_prefix || watch_param => "watch",
        "GET" | "HEAD" if name.is_empty() => "list",
        "GET" | "HEAD" => "get",
        "POST" => "create",
        "PUT" => "update",
        "PATCH" => "patch",
        "DELETE" if name.is_empty() => "deletecollection",
        "DELETE" => "delete",
        other => return RequestTarget::NonResource(format!("{other} /{trimmed}")),
    };
    RequestTarget::Resource(ResourceRequest {
        verb: verb.to_string(),
        group: group.to_string(),
        version: version.to_string(),
        namespace,
        resource,
        subresource,
        name,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn res(method: &str, path: &str, watch: bool) -> ResourceRequest {
        match parse(method, path, watch) {
            RequestTarget::Resource(r) => r,
            other => panic!("expected resource request, got {other:?}"),
        }
    }

    #[test]
    fn namespaced_custom_resource_paths() {
        let r = res(
            "GET",
            "/apis/oadp.openshift.io/v1alpha1/namespaces/team-a/nonadminbackups/b1",
            false,
        );
        assert_eq!(
            r,
            ResourceRequest {
                verb: "get".into(),
                group: "oadp.openshift.io".into(),
                version: "v1alpha1".into(),
                namespace: "team-a".into(),
                resource: "nonadminbackups".into(),
                subresource: "".into(),
                name: "b1".into()
            }
        );
        let s = res(
            "PUT",
            "/apis/oadp.openshift.io/v1alpha1/namespaces/team-a/nonadminbackups/b1/status",
            false,
        );
        assert_eq!(
            (s.verb.as_str(), s.subresource.as_str()),
            ("update", "status")
        );
        let l = res(
            "GET",
            "/apis/oadp.openshift.io/v1alpha1/nonadminbackups",
            true,
        );
        assert_eq!((l.verb.as_str(), l.namespace.as_str()), ("watch", ""));
    }

    #[test]
    fn namespaces_themselves() {
        let n = res("GET", "/api/v1/namespaces/team-a", false);
        // As kube's RequestInfoFactory: a namespace's own name is also its request namespace.
        assert_eq!(
            (n.resource.as_str(), n.name.as_str(), n.namespace.as_str()),
            ("namespaces", "team-a", "team-a")
        );
        let st = res("PUT", "/api/v1/namespaces/team-a/status", false);
        assert_eq!(
            (st.resource.as_str(), st.subresource.as_str()),
            ("namespaces", "status")
        );
        let list = res("GET", "/api/v1/namespaces", false);
        assert_eq!(list.verb, "list");
        let secrets = res("DELETE", "/api/v1/namespaces/team-a/secrets", false);
        assert_eq!(
            (secrets.verb.as_str(), secrets.namespace.as_str()),
            ("deletecollection", "team-a")
        );
        let token = res(
            "POST",
            "/api/v1/namespaces/ci/serviceaccounts/robot/token",
            false,
        );
        assert_eq!(
            (
                token.resource.as_str(),
                token.name.as_str(),
                token.subresource.as_str()
            ),
            ("serviceaccounts", "robot", "token")
        );
    }

    #[test]
    fn non_resource_paths() {
        assert_eq!(
            parse("GET", "/apis", false),
            RequestTarget::NonResource("/apis".into())
        );
        assert_eq!(
            parse("GET", "/api/v1", false),
            RequestTarget::NonResource("/api/v1".into())
        );
        assert_eq!(
            parse("GET", "/apis/oadp.openshift.io/v1alpha1", false),
            RequestTarget::NonResource("/apis/oadp.openshift.io/v1alpha1".into())
        );
        assert_eq!(
            parse("GET", "/version", false),
            RequestTarget::NonResource("/version".into())
        );
    }
}
