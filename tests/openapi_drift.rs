//! Fails when `openapi/openapi.json` differs from the gateway's generated OpenAPI document. With
//! `NAC_UPDATE_GENERATED=1` it rewrites the file instead.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

#[test]
fn openapi_document_is_checked_in() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("openapi/openapi.json");
    let generated = nac::gateway::rest::openapi::openapi_json();
    if std::env::var("NAC_UPDATE_GENERATED").is_ok_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &generated).unwrap();
        return;
    }
    let present = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        present == generated,
        "openapi/openapi.json is out of date; run: NAC_UPDATE_GENERATED=1 cargo test --test openapi_drift"
    );
    // The document is valid JSON describing every REST path of the gateway.
    let document: serde_json::Value = serde_json::from_str(&present).unwrap();
    for path in [
        "/api/v1/namespaces",
        "/api/v1/namespaces/{namespace}/backups",
        "/api/v1/namespaces/{namespace}/backups/{name}",
        "/api/v1/namespaces/{namespace}/backups/{name}/describe",
        "/api/v1/namespaces/{namespace}/backups/{name}/logs",
        "/api/v1/namespaces/{namespace}/restores",
        "/api/v1/namespaces/{namespace}/storage-locations",
        "/api/v1/namespaces/{namespace}/schedules/{name}",
        "/api/v1/namespaces/{namespace}/queue",
        "/api/v1/namespaces/{namespace}/policy",
        "/api/v1/namespaces/{namespace}/events",
        "/api/v1/namespaces/{namespace}/history",
        "/api/v1/namespaces/{namespace}/history/{operationId}",
        "/api/v1/namespaces/{namespace}/stats",
        "/api/v1/namespaces/{namespace}/coverage",
        "/api/v1/events",
        "/api/v1/queue",
        "/api/v1/session",
        "/api/v1/session/config",
        "/api/v1/session/oauth/start",
        "/api/v1/session/oauth/callback",
    ] {
        assert!(document["paths"].get(path).is_some(), "{path} missing");
    }
    assert!(document["components"]["schemas"]["NonAdminBackup"]["properties"]["spec"].is_object());
}
