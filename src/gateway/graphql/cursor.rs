//! Connection cursors over the service's `limit`/`continue` paging.
//!
//! The service pages forward only and signs its `continue` tokens (bound to the namespace,
//! resource and filters). A GraphQL edge needs a cursor of its own, so a cursor is either
//! - `Next(token)`: the service's token after the last edge of a page (one list call to resume),
//!   or
//! - `At { page, index }`: edge `index` of the page that `page` (a service token, empty for
//!   the first page) started; resuming after it re-lists `index + 1` items from `page` and
//!   continues with the token that list returns.
//!
//! Cursors are opaque (base64url of a small JSON); the service checks the tokens inside, so a
//! forged or replayed cursor is refused exactly like a bad `continue` token.

use async_graphql::connection::CursorType;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};

use crate::gateway::paging::MAX_TOKEN_LENGTH;
use crate::gateway::service::MAX_LIMIT;

/// Page size when `first` is not given.
pub const DEFAULT_PAGE: usize = 20;

/// Where a page resumes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "k")]
pub enum PageCursor {
    /// After the last edge of a page: the service's continue token.
    #[serde(rename = "n")]
    Next {
        /// The service's token.
        #[serde(rename = "t")]
        token: String,
    },
    /// At edge `index` of the page `page` started.
    #[serde(rename = "a")]
    At {
        /// The service's token the page was listed with (empty: the first page).
        #[serde(rename = "p")]
        page: String,
        /// 0-based index of the edge in that page.
        #[serde(rename = "i")]
        index: usize,
    },
}

/// Why a cursor is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the cursor is not valid; use one returned by this API")]
pub struct BadCursor;

impl CursorType for PageCursor {
    type Error = BadCursor;

    fn decode_cursor(text: &str) -> Result<Self, BadCursor> {
        if text.len() > MAX_TOKEN_LENGTH * 2 {
            return Err(BadCursor);
        }
        let bytes = URL_SAFE_NO_PAD.decode(text).map_err(|_| BadCursor)?;
        let cursor: PageCursor = serde_json::from_slice(&bytes).map_err(|_| BadCursor)?;
        match &cursor {
            PageCursor::Next { token } if token.is_empty() || token.len() > MAX_TOKEN_LENGTH => {
                Err(BadCursor)
            }
            PageCursor::At { page, index }
                if page.len() > MAX_TOKEN_LENGTH || *index >= MAX_LIMIT =>
            {
                Err(BadCursor)
            }
            _ => Ok(cursor),
        }
    }

    fn encode_cursor(&self) -> String {
        URL_SAFE_NO_PAD.encode(serde_json::to_vec(self).unwrap_or_default())
    }
}

/// The cursors of a page of `count` items listed from `page` (a service token or none), whose
/// service continue token is `next`: every edge is `At`, except that the last edge of a page
/// with more to come is `Next`.
pub fn edge_cursors(page: Option<&str>, count: usize, next: Option<&str>) -> Vec<PageCursor> {
    (0..count)
        .map(|index| match next {
            Some(token) if index + 1 == count => PageCursor::Next {
                token: token.to_string(),
            },
            _ => PageCursor::At {
                page: page.unwrap_or_default().to_string(),
                index,
            },
        })
        .collect()
}

/// Page size of a connection from `first`: default `default`, between 1 and `MAX_LIMIT`.
pub fn page_size(first: Option<i32>, default: usize) -> Result<usize, BadCursor> {
    match first {
        None => Ok(default),
        Some(n) if n < 1 => Err(BadCursor),
        Some(n) => Ok(usize::try_from(n).unwrap_or(MAX_LIMIT).min(MAX_LIMIT)),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_are_opaque() {
        for cursor in [
            PageCursor::Next {
                token: "abc.def".into(),
            },
            PageCursor::At {
                page: String::new(),
                index: 3,
            },
            PageCursor::At {
                page: "tok".into(),
                index: 0,
            },
        ] {
            let text = cursor.encode_cursor();
            assert!(!text.contains('{') && !text.contains('"'), "{text}");
            assert_eq!(PageCursor::decode_cursor(&text).unwrap(), cursor);
        }
    }

    #[test]
    fn garbage_and_out_of_range_cursors_are_refused() {
        let encode = |value: serde_json::Value| URL_SAFE_NO_PAD.encode(value.to_string());
        for bad in [
            "".to_string(),
            "not base64!".to_string(),
            URL_SAFE_NO_PAD.encode("not json"),
            encode(serde_json::json!({"k": "x"})),
            encode(serde_json::json!({"k": "n", "t": ""})),
            encode(serde_json::json!({"k": "a", "p": "", "i": MAX_LIMIT})),
            encode(serde_json::json!({"k": "a", "p": "", "i": -1})),
            "A".repeat(MAX_TOKEN_LENGTH * 3),
        ] {
            assert_eq!(PageCursor::decode_cursor(&bad), Err(BadCursor), "{bad}");
        }
    }

    #[test]
    fn the_last_edge_of_a_continuing_page_carries_the_service_token() {
        let cursors = edge_cursors(Some("p1"), 3, Some("p2"));
        assert_eq!(
            cursors,
            vec![
                PageCursor::At {
                    page: "p1".into(),
                    index: 0
                },
                PageCursor::At {
                    page: "p1".into(),
                    index: 1
                },
                PageCursor::Next { token: "p2".into() },
            ]
        );
        let last_page = edge_cursors(None, 2, None);
        assert_eq!(
            last_page[1],
            PageCursor::At {
                page: String::new(),
                index: 1
            }
        );
        assert!(edge_cursors(None, 0, Some("x")).is_empty());
    }

    #[test]
    fn page_sizes_are_bounded() {
        assert_eq!(page_size(None, 20), Ok(20));
        assert_eq!(page_size(Some(5), 20), Ok(5));
        assert_eq!(page_size(Some(100_000), 20), Ok(MAX_LIMIT));
        assert_eq!(page_size(Some(0), 20), Err(BadCursor));
        assert_eq!(page_size(Some(-3), 20), Err(BadCursor));
    }
}
