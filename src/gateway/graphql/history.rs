//! The operation history in GraphQL (`history`, `operation`, `stats`, `coverage` on `Query`):
//! the views are REST's ([`crate::gateway::operations`]); here are `Operation.timeline` and the
//! connection over the store's keyset pages: every edge's cursor is the history's own continue
//! token after that row, so paging resumes exactly there.

use async_graphql::connection::{Connection, Edge};
use async_graphql::{ComplexObject, Context};

use super::cursor::DEFAULT_PAGE;
use super::errors::{GqlResult, to_graphql};
use super::{caller_of, check_namespace, service_of};
use crate::gateway::error::GatewayError;
use crate::gateway::operations::{
    self, HistoryQuery, MAX_HISTORY_LIMIT, Operation, OperationKindView, check_text,
    parse_continue, parse_phases, parse_time,
};
use crate::history::{OperationFilter, OperationKind, cursor};

/// `Operation.timeline`: read again with the caller's access (the view itself is
/// [`operations::Operation`], shared with REST).
#[ComplexObject]
impl operations::Operation {
    /// Its timeline, oldest fact first (read again with the caller's access).
    #[graphql(complexity = "10 + child_complexity")]
    async fn timeline(
        &self,
        ctx: &Context<'_>,
    ) -> async_graphql::Result<Vec<operations::TimelineEntry>> {
        service_of(ctx)?
            .history_timeline(caller_of(ctx)?, &self.namespace, &self.id)
            .await
            .gql()
    }
}

/// The arguments of `history`.
#[derive(Debug, Default)]
pub struct HistoryArgs {
    /// Only these kinds.
    pub kinds: Option<Vec<OperationKindView>>,
    /// Only these phases.
    pub phases: Option<Vec<String>>,
    /// Created at or after (RFC 3339).
    pub since: Option<String>,
    /// Created before (RFC 3339).
    pub until: Option<String>,
    /// Text filter.
    pub text: Option<String>,
    /// Page size.
    pub first: Option<i32>,
    /// Cursor of the edge to continue after.
    pub after: Option<String>,
}

fn history_query(args: HistoryArgs) -> Result<HistoryQuery, GatewayError> {
    let limit = match args.first {
        None => DEFAULT_PAGE as u32,
        Some(n) if n < 1 => {
            return Err(GatewayError::BadRequest("first must be at least 1".into()));
        }
        Some(n) => u32::try_from(n)
            .unwrap_or(MAX_HISTORY_LIMIT)
            .min(MAX_HISTORY_LIMIT),
    };
    let since = args
        .since
        .as_deref()
        .map(|t| parse_time("since", t))
        .transpose()?;
    let until = args
        .until
        .as_deref()
        .map(|t| parse_time("until", t))
        .transpose()?;
    if let (Some(since), Some(until)) = (since, until)
        && until <= since
    {
        return Err(GatewayError::invalid_field(
            "until",
            "until must be after since",
        ));
    }
    let mut kinds: Vec<OperationKind> = Vec::new();
    for kind in args.kinds.unwrap_or_default() {
        let kind = OperationKind::from(kind);
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    Ok(HistoryQuery {
        filter: OperationFilter {
            kinds,
            phases: parse_phases("phases", &args.phases.unwrap_or_default())?,
            since,
            until,
            text: check_text("text", args.text)?,
        },
        limit,
        after: parse_continue("after", args.after.as_deref())?,
    })
}

/// One connection page of `namespace`'s operations.
pub async fn history_connection(
    ctx: &Context<'_>,
    namespace: &str,
    args: HistoryArgs,
) -> async_graphql::Result<Connection<String, Operation>> {
    check_namespace(namespace).gql()?;
    let query = history_query(args).map_err(|e| to_graphql(&e))?;
    let page = service_of(ctx)?
        .history_records(caller_of(ctx)?, namespace, &query)
        .await
        .gql()?;
    let mut connection = Connection::new(query.after.is_some(), page.next.is_some());
    connection.edges.extend(page.items.iter().map(|record| {
        let position = crate::history::OperationCursor {
            created_at: record.created_at,
            id: record.id.clone(),
        };
        Edge::new(cursor::encode(&position), Operation::from(record))
    }));
    Ok(connection)
}
