//! Who is calling and what they may do: bearer tokens checked with TokenReview
//! ([`authn::Authenticator`]) and every namespace-scoped action checked with a
//! SubjectAccessReview ([`authz::Authorizer`]), both through the gateway's own identity and both
//! cached under keys that never contain the token. The web console signs in once and then sends
//! a session cookie naming a server-side [`session::Session`] that holds the token (with CSRF
//! tokens for changes), signing in with a pasted token or through OpenShift OAuth ([`oauth`]);
//! both sign their cookies and `state` values with [`jwt`].
//! A request that fans out over namespaces draws its access checks from a per-request
//! [`budget::AccessBudget`]; values handed to clients that must stay opaque (event ids,
//! namespace-listing continue tokens) are sealed with [`seal::Sealer`]. Long-lived streams
//! re-check their token with [`Authenticator::still_valid`].

pub mod authn;
pub mod authz;
pub mod budget;
pub mod cache;
pub mod jwt;
pub mod oauth;
pub mod seal;
pub mod session;
pub mod token;

use std::collections::BTreeMap;
use std::sync::Arc;

pub use authn::{Authenticator, AuthnConfig};
pub use authz::{AccessCheck, Authorized, Authorizer, AuthzConfig};
pub use budget::{AccessBudget, BudgetExhausted, CheckError};
pub use oauth::{OAuthClient, OAuthConfig};
pub use seal::Sealer;
pub use session::{Session, SessionConfig, SessionManager};
pub use token::{BearerToken, TokenHasher, TokenKey};

/// The user a TokenReview vouched for: exactly what a SubjectAccessReview needs.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Identity {
    /// `user.username` (e.g. `alice`, `system:serviceaccount:team-a:ci-bot`).
    pub username: String,
    /// `user.uid`.
    pub uid: String,
    /// `user.groups`.
    pub groups: Vec<String>,
    /// `user.extra` (scopes, credential ids …).
    pub extra: BTreeMap<String, Vec<String>>,
}

/// An authenticated request's caller: the identity, and the token (redacted) for writes made
/// in the caller's name.
#[derive(Clone, Debug)]
pub struct Caller {
    identity: Arc<Identity>,
    token: BearerToken,
    token_key: TokenKey,
}

impl Caller {
    /// A caller with `identity`, holding `token` (whose keyed hash is `token_key`).
    pub fn new(identity: Arc<Identity>, token: BearerToken, token_key: TokenKey) -> Self {
        Caller {
            identity,
            token,
            token_key,
        }
    }

    /// Who the caller is.
    pub fn identity(&self) -> &Arc<Identity> {
        &self.identity
    }

    /// The caller's username.
    pub fn username(&self) -> &str {
        &self.identity.username
    }

    /// The caller's token, for requests made in their name.
    pub fn token(&self) -> &BearerToken {
        &self.token
    }

    /// The keyed hash of the caller's token.
    pub fn token_key(&self) -> TokenKey {
        self.token_key
    }
}
