//! Keyset cursors for paging a namespace's operations: the (created_at, id) of the last row
//! seen, as an opaque URL-safe token. The namespace is not in the token: every query takes it
//! separately, so a token can never widen what a caller reads.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use super::HistoryError;
use super::model::OperationCursor;

/// Longest token accepted (an id is at most a few dozen characters).
const MAX_TOKEN_LENGTH: usize = 512;

/// The token of a cursor.
pub fn encode(cursor: &OperationCursor) -> String {
    URL_SAFE_NO_PAD.encode(format!("{}\n{}", cursor.created_at, cursor.id))
}

/// The cursor of a token, or a clear error.
pub fn decode(token: &str) -> Result<OperationCursor, HistoryError> {
    let bad = || HistoryError::InvalidInput("the continue token is not valid".to_string());
    if token.len() > MAX_TOKEN_LENGTH {
        return Err(bad());
    }
    let bytes = URL_SAFE_NO_PAD.decode(token).map_err(|_| bad())?;
    let text = String::from_utf8(bytes).map_err(|_| bad())?;
    let (created_at, id) = text.split_once('\n').ok_or_else(bad)?;
    let created_at = created_at.parse::<i64>().map_err(|_| bad())?;
    if id.is_empty() || id.len() > 128 || id.chars().any(|c| c.is_control()) {
        return Err(bad());
    }
    Ok(OperationCursor {
        created_at,
        id: id.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip() {
        let c = OperationCursor {
            created_at: 1_700_000_000_123,
            id: "6c1c7c2e-0000-4000-8000-000000000001".to_string(),
        };
        assert_eq!(decode(&encode(&c)).ok(), Some(c));
    }

    #[test]
    fn garbage_is_refused_with_a_clear_message() {
        for token in ["", "!!!", "bm8tbmV3bGluZQ", &"A".repeat(600)] {
            let err = decode(token).err().map(|e| e.to_string());
            assert_eq!(
                err.as_deref(),
                Some("the continue token is not valid"),
                "{token}"
            );
        }
        let no_number = URL_SAFE_NO_PAD.encode("abc\nid");
        assert!(decode(&no_number).is_err());
        let control = URL_SAFE_NO_PAD.encode("1\nid\u{7}");
        assert!(decode(&control).is_err());
    }
}
