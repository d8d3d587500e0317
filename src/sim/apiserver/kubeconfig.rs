//! Kubeconfig files for emulator users, as `kubectl` and kube-rs read them.
use base64::Engine as _;
use serde_json::json;

/// A kubeconfig for `user` with `token` against `server` (trusting `ca_pem` when HTTPS).
pub fn render(
    server: &str,
    ca_pem: Option<&str>,
    user: &str,
    token: &str,
    namespace: &str,
) -> String {
    let mut cluster = json!({"server": server});
    if let Some(ca) = ca_pem {
        cluster["certificate-authority-data"] =
            json!(base64::engine::general_purpose::STANDARD.encode(ca));
    }
    let context = format!("{user}@nac-emulator");
    let doc = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "nac-emulator", "cluster": cluster}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": context, "context": {"cluster": "nac-emulator", "user": user, "namespace": namespace}}],
        "current-context": context,
        "preferences": {},
    });
    serde_yaml::to_string(&doc).unwrap_or_default()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn kube_rs_reads_it() {
        let text = render(
            "https://127.0.0.1:6443",
            Some("-----BEGIN CERTIFICATE-----\n"),
            "alice",
            "tok",
            "team-a",
        );
        let cfg: kube::config::Kubeconfig = serde_yaml::from_str(&text).unwrap();
        assert_eq!(cfg.current_context.as_deref(), Some("alice@nac-emulator"));
        assert_eq!(cfg.auth_infos[0].name, "alice");
    }
}
