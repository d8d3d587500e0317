//! Mutations: create and delete backups, restores, storage locations and schedules, and change
//! a schedule. Each goes through the service's create/delete/patch, which checks access,
//! validates against the admin policy (INVALID with field errors) and writes with the
//! caller's own token.

use async_graphql::{Context, InputObject, Json, Object};
use serde_json::{Map, Value};

use super::errors::GqlResult;
use super::types::{Backup, Restore, Schedule, StorageLocation};
use super::{caller_of, check_name, check_namespace, service_of};
use crate::api::nonadmin::{
    NonAdminBackup, NonAdminBackupStorageLocation, NonAdminRestore, NonAdminSchedule,
};
use crate::gateway::service::{Creatable, DeleteOutcome};
use crate::gateway::store::Cached;
use std::sync::Arc;

/// A new object: its name (or a prefix to generate one from), labels, annotations and spec
/// (the custom resource's own `spec` JSON; for a backup it may be left out).
#[derive(InputObject, Clone, Debug, Default)]
pub struct NewObjectInput {
    /// Name.
    pub name: Option<String>,
    /// Prefix of a generated name, when `name` is not given.
    pub generate_name: Option<String>,
    /// Labels.
    pub labels: Option<Json<Value>>,
    /// Annotations.
    pub annotations: Option<Json<Value>>,
    /// The spec, as in the custom resource (e.g. `{"backupSpec": {"ttl": "24h0m0s"}}`).
    pub spec: Option<Json<Value>>,
}

/// A new restore: as [`NewObjectInput`], with `backupName` as a shortcut for
/// `spec.restoreSpec.backupName`.
#[derive(InputObject, Clone, Debug, Default)]
pub struct NewRestoreInput {
    /// Name.
    pub name: Option<String>,
    /// Prefix of a generated name, when `name` is not given.
    pub generate_name: Option<String>,
    /// Labels.
    pub labels: Option<Json<Value>>,
    /// Annotations.
    pub annotations: Option<Json<Value>>,
    /// The NonAdminBackup to restore from (when `spec` is not given).
    pub backup_name: Option<String>,
    /// The spec, as in the custom resource (`{"restoreSpec": {...}}`).
    pub spec: Option<Json<Value>>,
}

/// The request body the service takes (the REST short form).
fn body_of(input: NewObjectInput, backup_name: Option<String>) -> Value {
    let mut body = Map::new();
    let mut put = |key: &str, value: Option<Value>| {
        if let Some(value) = value {
            body.insert(key.to_string(), value);
        }
    };
    put("name", input.name.map(Value::String));
    put("generateName", input.generate_name.map(Value::String));
    put("labels", input.labels.map(|j| j.0));
    put("annotations", input.annotations.map(|j| j.0));
    put("spec", input.spec.map(|j| j.0));
    put("backupName", backup_name.map(Value::String));
    Value::Object(body)
}

async fn create<K: Creatable>(
    ctx: &Context<'_>,
    namespace: &str,
    body: Value,
    dry_run: bool,
) -> async_graphql::Result<Arc<K>> {
    check_namespace(namespace).gql()?;
    let created = service_of(ctx)?
        .create::<K>(caller_of(ctx)?, namespace, &body, dry_run)
        .await
        .gql()?;
    Ok(Arc::new(created))
}

async fn delete<K: Cached>(
    ctx: &Context<'_>,
    namespace: &str,
    name: &str,
) -> async_graphql::Result<DeleteOutcome> {
    check_namespace(namespace).gql()?;
    check_name(name).gql()?;
    service_of(ctx)?
        .delete::<K>(caller_of(ctx)?, namespace, name)
        .await
        .gql()
}

/// The root of mutations.
#[derive(Debug, Default)]
pub struct MutationRoot;

#[Object(name = "Mutation")]
impl MutationRoot {
    /// Creates a backup (`dryRun`: validated by the gateway and the API server, not stored).
    async fn create_backup(
        &self,
        ctx: &Context<'_>,
        namespace: String,
        input: NewObjectInput,
        #[graphql(default = false)] dry_run: bool,
    ) -> async_graphql::Result<Backup> {
        let body = body_of(input, None);
        Ok(Backup(
            create::<NonAdminBackup>(ctx, &namespace, body, dry_run).await?,
        ))
    }

    /// Deletes a backup permanently: Velero deletes its data in object storage, then the
    /// NonAdminBackup is removed. This cannot be undone.
    async fn delete_backup(
        &self,
        ctx: &Context<'_>,
        namespace: String,
        name: String,
    ) -> async_graphql::Result<DeleteOutcome> {
        delete::<NonAdminBackup>(ctx, &namespace, &name).await
    }

    /// Creates a restore from one of the namespace's backups.
    async fn create_restore(
        &self,
        ctx: &Context<'_>,
        namespace: String,
        input: NewRestoreInput,
        #[graphql(default = false)] dry_run: bool,
    ) -> async_graphql::Result<Restore> {
        let body = body_of(
            NewObjectInput {
                name: input.name,
                generate_name: input.generate_name,
                labels: input.labels,
                annotations: input.annotations,
                spec: input.spec,
            },
            input.backup_name,
        );
        Ok(Restore(
            create::<NonAdminRestore>(ctx, &namespace, body, dry_run).await?,
        ))
    }

    /// Deletes a restore record (restored objects stay).
    async fn delete_restore(
        &self,
        ctx: &Context<'_>,
        namespace: String,
        name: String,
    ) -> async_graphql::Result<DeleteOutcome> {
        delete::<NonAdminRestore>(ctx, &namespace, &name).await
    }

    /// Creates a storage location (it may wait for the administrator's approval).
    async fn create_storage_location(
        &self,
        ctx: &Context<'_>,
        namespace: String,
        input: NewObjectInput,
        #[graphql(default = false)] dry_run: bool,
    ) -> async_graphql::Result<StorageLocation> {
        let body = body_of(input, None);
        Ok(StorageLocation(
            create::<NonAdminBackupStorageLocation>(ctx, &namespace, body, dry_run).await?,
        ))
    }

    /// Deletes a storage location (backups stored there are not touched).
    async fn delete_storage_location(
        &self,
        ctx: &Context<'_>,
        namespace: String,
        name: String,
    ) -> async_graphql::Result<DeleteOutcome> {
        delete::<NonAdminBackupStorageLocation>(ctx, &namespace, &name).await
    }

    /// Creates a schedule.
    async fn create_schedule(
        &self,
        ctx: &Context<'_>,
        namespace: String,
        input: NewObjectInput,
        #[graphql(default = false)] dry_run: bool,
    ) -> async_graphql::Result<Schedule> {
        let body = body_of(input, None);
        Ok(Schedule(
            create::<NonAdminSchedule>(ctx, &namespace, body, dry_run).await?,
        ))
    }

    /// Changes a schedule with a JSON merge patch of its spec (`paused`, `schedule`,
    /// `skipImmediately`, `template`), validated like a new one.
    async fn update_schedule(
        &self,
        ctx: &Context<'_>,
        namespace: String,
        name: String,
        spec: Json<Value>,
    ) -> async_graphql::Result<Schedule> {
        check_namespace(&namespace).gql()?;
        check_name(&name).gql()?;
        let patched = service_of(ctx)?
            .patch_schedule(caller_of(ctx)?, &namespace, &name, &spec.0)
            .await
            .gql()?;
        Ok(Schedule(Arc::new(patched)))
    }

    /// Deletes a schedule (backups it made are kept).
    async fn delete_schedule(
        &self,
        ctx: &Context<'_>,
        namespace: String,
        name: String,
    ) -> async_graphql::Result<DeleteOutcome> {
        delete::<NonAdminSchedule>(ctx, &namespace, &name).await
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::gateway::service::object_from_body;
    use serde_json::json;

    #[test]
    fn inputs_become_the_service_short_form() {
        let body = body_of(
            NewObjectInput {
                name: Some("nightly".into()),
                labels: Some(Json(json!({"app": "web"}))),
                spec: Some(Json(json!({"backupSpec": {"ttl": "24h0m0s"}}))),
                ..NewObjectInput::default()
            },
            None,
        );
        let backup: NonAdminBackup = object_from_body("team-a", &body).unwrap();
        assert_eq!(backup.metadata.name.as_deref(), Some("nightly"));
        assert_eq!(backup.metadata.namespace.as_deref(), Some("team-a"));
        let restore: NonAdminRestore = object_from_body(
            "team-a",
            &body_of(
                NewObjectInput {
                    name: Some("r".into()),
                    ..NewObjectInput::default()
                },
                Some("nightly".into()),
            ),
        )
        .unwrap();
        assert_eq!(
            restore.spec.restore_spec.backup_name.as_deref(),
            Some("nightly")
        );
    }
}
