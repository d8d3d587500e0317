//! The REST routes, declared once: each handler's `#[utoipa::path]` gives its method and path
//! to both the axum router ([`super::router`]) and the OpenAPI document ([`super::openapi`]).
//! Handlers of one path are registered together; the order here is the document's order of
//! paths.

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::{handlers, history, manifests, session};
use crate::gateway::Gateway;

/// The documented routes and their part of the OpenAPI document (paths and the schemas they
/// name).
pub fn api() -> OpenApiRouter<Gateway> {
    OpenApiRouter::default()
        .routes(routes!(handlers::list_namespaces))
        .routes(routes!(handlers::list_backups, handlers::create_backup))
        .routes(routes!(handlers::get_backup, handlers::delete_backup))
        .routes(routes!(handlers::describe_backup))
        .routes(routes!(handlers::backup_logs))
        .routes(routes!(manifests::backup_manifest))
        .routes(routes!(manifests::backup_contents))
        .routes(routes!(manifests::backup_graph))
        .routes(routes!(manifests::backup_diff))
        .routes(routes!(manifests::backup_overlaps))
        .routes(routes!(manifests::restore_overlaps))
        .routes(routes!(handlers::list_restores, handlers::create_restore))
        .routes(routes!(handlers::get_restore, handlers::delete_restore))
        .routes(routes!(handlers::describe_restore))
        .routes(routes!(handlers::restore_logs))
        .routes(routes!(
            handlers::list_storage_locations,
            handlers::create_storage_location
        ))
        .routes(routes!(
            handlers::get_storage_location,
            handlers::delete_storage_location
        ))
        .routes(routes!(handlers::list_schedules, handlers::create_schedule))
        .routes(routes!(
            handlers::get_schedule,
            handlers::patch_schedule,
            handlers::delete_schedule
        ))
        .routes(routes!(handlers::namespace_queue))
        .routes(routes!(handlers::cluster_queue))
        .routes(routes!(handlers::namespace_policy))
        .routes(routes!(handlers::shared_storage))
        .routes(routes!(history::namespace_history))
        .routes(routes!(history::history_operation))
        .routes(routes!(history::namespace_stats))
        .routes(routes!(history::namespace_coverage))
        .routes(routes!(handlers::namespace_events))
        .routes(routes!(handlers::all_events))
        .routes(routes!(
            session::create_session,
            session::get_session,
            session::delete_session
        ))
        .routes(routes!(session::session_config))
        .routes(routes!(session::oauth_start))
        .routes(routes!(session::oauth_callback))
        .routes(routes!(handlers::healthz))
        .routes(routes!(handlers::readyz))
        .routes(routes!(handlers::metrics))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use std::borrow::Cow;
    use std::sync::Arc;

    use axum::http::{HeaderMap, StatusCode};
    use serde_json::Value;
    use utoipa::ToSchema;

    use super::super::answer::ApiJson;
    use super::super::problem::Problem;
    use super::*;
    use crate::manifest::export::ManifestDocument;

    /// The schema a typed answer serializes.
    trait TypedAnswer {
        fn body() -> Cow<'static, str>;
    }

    impl<T: ToSchema> TypedAnswer for ApiJson<T> {
        fn body() -> Cow<'static, str> {
            T::name()
        }
    }

    impl<A: TypedAnswer> TypedAnswer for (StatusCode, A) {
        fn body() -> Cow<'static, str> {
            A::body()
        }
    }

    impl<A: TypedAnswer> TypedAnswer for (HeaderMap, A) {
        fn body() -> Cow<'static, str> {
            A::body()
        }
    }

    impl<A: TypedAnswer> TypedAnswer for Result<A, Problem> {
        fn body() -> Cow<'static, str> {
            A::body()
        }
    }

    /// A handler's answer type (`Args`: its arguments, inferred).
    trait Handler<Args> {
        type Answer;
    }

    macro_rules! handler_of_arity {
        ($($arg:ident),*) => {
            impl<F, Fut, $($arg),*> Handler<($($arg,)*)> for F
            where
                F: FnOnce($($arg),*) -> Fut,
                Fut: Future,
            {
                type Answer = Fut::Output;
            }
        };
    }
    handler_of_arity!(A);
    handler_of_arity!(A, B);
    handler_of_arity!(A, B, C);
    handler_of_arity!(A, B, C, D);

    fn body_of<H: Handler<Args>, Args>(_: &H) -> Cow<'static, str>
    where
        H::Answer: TypedAnswer,
    {
        H::Answer::body()
    }

    /// A manifest is shared (`Arc`), which has no schema of its own: its answer type is
    /// checked to be the document's.
    fn manifest_body<H, Args>(_: &H) -> Cow<'static, str>
    where
        H: Handler<Args, Answer = Result<(HeaderMap, ApiJson<Arc<ManifestDocument>>), Problem>>,
    {
        ManifestDocument::name()
    }

    /// The typed handlers' names (their operation ids) with the schema they serialize.
    macro_rules! typed {
        ($($handler:path),* $(,)?) => {
            vec![$((
                stringify!($handler).rsplit(':').next().unwrap().trim(),
                body_of(&$handler),
            )),*]
        };
    }

    /// What a typed handler sends is what the document says it sends: every JSON success answer
    /// of its operation names the type it serializes.
    #[test]
    fn typed_answers_are_the_documented_schemas() {
        let document = serde_json::to_value(crate::gateway::rest::openapi::document()).unwrap();
        let operations: Vec<&Value> = document["paths"]
            .as_object()
            .unwrap()
            .values()
            .flat_map(|item| item.as_object().unwrap().values())
            .collect();
        let mut typed = typed![
            handlers::list_namespaces,
            handlers::delete_backup,
            handlers::delete_restore,
            handlers::delete_storage_location,
            handlers::delete_schedule,
            handlers::describe_backup,
            handlers::describe_restore,
            handlers::namespace_queue,
            handlers::cluster_queue,
            handlers::namespace_policy,
            handlers::shared_storage,
            history::namespace_history,
            history::history_operation,
            history::namespace_stats,
            history::namespace_coverage,
            manifests::backup_contents,
            manifests::backup_graph,
            manifests::backup_diff,
            manifests::backup_overlaps,
            manifests::restore_overlaps,
            session::session_config,
        ];
        typed.push((
            "backup_manifest",
            manifest_body(&manifests::backup_manifest),
        ));
        for (operation_id, body) in typed {
            let operation = operations
                .iter()
                .find(|operation| operation["operationId"] == operation_id)
                .unwrap_or_else(|| panic!("{operation_id} is not in the document"));
            let schemas: Vec<&Value> = operation["responses"]
                .as_object()
                .unwrap()
                .iter()
                .filter(|(status, _)| status.starts_with('2'))
                .filter_map(|(_, answer)| answer.pointer("/content/application~1json/schema"))
                .collect();
            assert!(
                !schemas.is_empty(),
                "{operation_id} documents no JSON answer"
            );
            for schema in schemas {
                assert_eq!(
                    schema["$ref"],
                    format!("#/components/schemas/{body}"),
                    "{operation_id}"
                );
            }
        }
    }
}
