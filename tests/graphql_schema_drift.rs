//! Fails when `schema/schema.graphql` differs from the gateway's GraphQL schema (what
//! `nac graphql-schema` prints). With `NAC_UPDATE_GENERATED=1` it rewrites the file instead.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

#[test]
fn graphql_schema_is_checked_in() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/schema.graphql");
    let generated = nac::gateway::graphql::sdl();
    if std::env::var("NAC_UPDATE_GENERATED").is_ok_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &generated).unwrap();
        return;
    }
    let present = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        present == generated,
        "schema/schema.graphql is out of date; run: NAC_UPDATE_GENERATED=1 cargo test --test graphql_schema_drift"
    );
    // The checked-in SDL describes every operation the issue asks for.
    for needle in [
        "type Query {",
        "namespaces(first: Int, after: String): [Namespace!]!",
        "backups(namespace: String!",
        "restores(namespace: String!",
        "storageLocations(namespace: String!",
        "schedules(namespace: String!",
        "queue(namespace: String)",
        "describeBackup(",
        "describeRestore(",
        "policy(namespace: String!)",
        "phaseCounts(",
        "type Mutation {",
        "createBackup(",
        "deleteBackup(",
        "createRestore(",
        "deleteRestore(",
        "createStorageLocation(",
        "deleteStorageLocation(",
        "createSchedule(",
        "deleteSchedule(",
        "type Subscription {",
        "changes(",
        "type BackupConnection",
        "type PageInfo",
        "scalar JSON",
    ] {
        assert!(present.contains(needle), "{needle} missing from the SDL");
    }
}
