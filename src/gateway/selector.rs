//! The gateway's `labelSelector` list filter: the shared engine's syntax and matching
//! ([`crate::api::selector`]), refused with the gateway's own 400 message.

use crate::api::selector::Selector;
use crate::gateway::error::GatewayError;

/// Longest selector text accepted: a bound on the work one request may ask for.
const MAX_SELECTOR_BYTES: usize = 4096;

/// Parses `text`; 400 when it is not a valid selector.
pub fn parse(text: &str) -> Result<Selector, GatewayError> {
    let invalid = || GatewayError::BadRequest("labelSelector is not a valid label selector".into());
    if text.len() > MAX_SELECTOR_BYTES {
        return Err(invalid());
    }
    Selector::parse(text).map_err(|_| invalid())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_a_400_in_the_gateway_words() {
        let long = format!("a in ({})", vec!["v"; 2100].join(","));
        for selector in ["a b", "env in (a", "ключ=v", long.as_str()] {
            match parse(selector) {
                Err(GatewayError::BadRequest(message)) => {
                    assert_eq!(message, "labelSelector is not a valid label selector");
                }
                other => panic!("{selector}: {other:?}"),
            }
        }
    }

    #[test]
    fn selectors_parse_as_the_engine_parses_them() {
        for selector in ["", "app=web,env in (prod,staging)", "!legacy", "replicas>2"] {
            assert_eq!(
                parse(selector).unwrap(),
                Selector::parse(selector).unwrap(),
                "{selector}"
            );
        }
    }
}
