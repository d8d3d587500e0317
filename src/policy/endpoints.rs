//! Storage endpoints of tenant storage locations: which URLs a NonAdminBackupStorageLocation may
//! name, and which addresses NAC may connect to when it downloads what Velero signed for one.
//!
//! Velero signs download URLs (logs, results, backup tarballs) with the location's own endpoint
//! (`publicUrl`, else `s3Url`, for AWS), and NAC's gateway, manifest builder and deletion-action
//! executor fetch them from inside the cluster and hand the body on. A tenant who controls a
//! location's `config` therefore controls where NAC connects: the cloud metadata service,
//! loopback, cluster services. This module is the rule, applied twice:
//!
//! 1. **When a location is accepted** ([`StorageEndpoints::check_url`], called by
//!    `validate_bsl_spec` for every URL in the location's `config`, see [`config_urls`]);
//! 2. **When NAC connects** ([`FetchScope`]): only URLs at the location's own origins
//!    ([`fetch_scope`]), and only to addresses [`StorageEndpoints::check_address`] permits, for
//!    every address the host resolves to (the fetcher connects to exactly the checked addresses,
//!    so DNS cannot change the answer in between).
//!
//! # The administrator's allow-list (`nac-policy`, `policy.yaml`)
//!
//! ```yaml
//! storageEndpoints:
//!   allow:                                 # quote entries starting with "*" (YAML aliases)
//!     - https://minio.example.com          # an origin: scheme, host, port (default 443/80)
//!     - http://minio.velero.svc:9000       # in-cluster storage is fine once listed
//!     - "*.s3.amazonaws.com"               # any subdomain, https on port 443
//!     - https://*.storage.example:8443     # any subdomain, this scheme and port
//!     - 10.40.0.0/16                       # IP-address hosts in this range (http/https, any
//!                                          # port), and addresses names resolve to
//!   clusterNetworks: [10.96.0.0/12, 10.128.0.0/14]   # service and pod networks
//! ```
//!
//! - **No `allow` list** (or an empty one): a tenant URL must be `http`/`https`, carry no user
//!   name or password, name an IPv4 address in plain dotted-decimal form (never `2130706433`,
//!   `0177.0.0.1`, `0x7f.1`, `127.1`), and neither its host nor any address it resolves to may
//!   be loopback, link-local or a cloud metadata endpoint (169.254.169.254, fd00:ec2::254, ...),
//!   private (10/8, 172.16/12, 192.168/16, fc00::/7), shared CGNAT space (100.64/10),
//!   unspecified, multicast, broadcast or reserved — IPv4-mapped, -compatible, NAT64 and 6to4
//!   IPv6 forms included — nor in `clusterNetworks`; names `localhost`, `*.localhost`,
//!   single-label names (the cluster's DNS search path makes them cluster services), `*.svc`,
//!   `*.cluster.local`, `*.internal`, `*.local`, `*.localdomain` and `*.home.arpa` are refused.
//! - **With an `allow` list**, a tenant URL must match an entry (it is then accepted whatever
//!   its host). Addresses a listed *name* resolves to may be private, CGNAT or in the cluster
//!   networks (the administrator vouched for the name), but never loopback, link-local,
//!   metadata, unspecified, multicast or reserved unless a listed network contains them; a
//!   listed *address* (an origin with an IP host, or a network) is always reachable.
//! - Locations of the administrator (the default location, the shared pool's) are not tenant
//!   locations: their downloads are [`FetchScope::Trusted`].
//!
//! # URL-valued `config` keys
//!
//! From the providers' own sources (`ValidateObjectStoreConfigKeys` in each plugin's
//! `object_store.go`):
//! - AWS (`velero-plugin-for-aws`): `s3Url` (the S3 endpoint) and `publicUrl` (used instead of
//!   `s3Url` to presign download URLs); without them the AWS endpoints of `region`;
//! - Azure (`velero-plugin-for-microsoft-azure`): `storageAccountURI` (the blob service URL
//!   SAS download URLs are made from) and `activeDirectoryAuthorityURI` (the AAD authority);
//!   without `storageAccountURI`, `https://<storageAccount>.blob.<cloud suffix>`;
//! - GCP (`velero-plugin-for-gcp`): `storeEndpoint` (the storage API endpoint) and
//!   `universeDomain` (a domain: the API is at `storage.<universeDomain>`); signed URLs are
//!   made by `storage.SignedURL` without a host, so they are at `https://storage.googleapis.com`;
//! - any provider: every other value that looks like a URL (`scheme://...`) is checked too.
//!
//! For a provider NAC does not know (the simulator's, a third-party plugin's) the download URL
//! must be at an origin named in the location's config or listed exactly in `allow`.

use std::collections::BTreeMap;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::api::nonadmin::labels;
use crate::api::velero::{BackupStorageLocation, BackupStorageLocationSpec};

/// AWS keys holding URLs (`s3URLKey`, `publicURLKey` in `velero-plugin-for-aws`).
pub const AWS_URL_KEYS: &[&str] = &["s3Url", "publicUrl"];
/// Azure keys holding URLs (`storageAccountURIConfigKey`,
/// `activeDirectoryAuthorityURIConfigKey` in `velero-plugin-for-microsoft-azure`).
pub const AZURE_URL_KEYS: &[&str] = &["storageAccountURI", "activeDirectoryAuthorityURI"];
/// GCP keys holding URLs (`storeEndpointConfigKey` in `velero-plugin-for-gcp`).
pub const GCP_URL_KEYS: &[&str] = &["storeEndpoint"];
/// GCP key holding a domain (`universeDomainKey`): the storage API is `storage.<domain>`.
pub const GCP_UNIVERSE_DOMAIN_KEY: &str = "universeDomain";

/// `http` or `https`: the only schemes a tenant URL may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// Plain HTTP.
    Http,
    /// HTTP over TLS.
    Https,
}

impl Scheme {
    /// The port used when a URL names none.
    pub fn default_port(self) -> u16 {
        match self {
            Self::Http => 80,
            Self::Https => 443,
        }
    }

    /// `http` or `https`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Http => "http",
            Self::Https => "https",
        }
    }

    fn parse(text: &str) -> Option<Self> {
        if text.eq_ignore_ascii_case("http") {
            Some(Self::Http)
        } else if text.eq_ignore_ascii_case("https") {
            Some(Self::Https)
        } else {
            None
        }
    }
}

/// A URL's host: a DNS name (lower case, without a trailing dot) or an IP address.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Host {
    /// A DNS name.
    Name(String),
    /// An IP address literal.
    Ip(IpAddr),
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Name(name) => f.write_str(name),
            Self::Ip(IpAddr::V4(ip)) => write!(f, "{ip}"),
            Self::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]"),
        }
    }
}

/// What the rules look at in a URL: scheme, host and port (path and query never matter).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Endpoint {
    /// `http` or `https`.
    pub scheme: Scheme,
    /// The host.
    pub host: Host,
    /// The port, the scheme's default when the URL names none.
    pub port: u16,
}

/// Why a text is not a URL a tenant location may use, before any allow-list is consulted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UrlProblem {
    /// Not an absolute `scheme://host` URL, or malformed.
    NotAUrl,
    /// A scheme other than `http` or `https`.
    Scheme(String),
    /// A user name or password in the URL.
    UserInfo,
    /// An IP address in a notation other than dotted decimal (or bracketed IPv6), or a
    /// percent-encoded host: resolvers disagree on what these mean.
    OddAddress(String),
}

impl fmt::Display for UrlProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotAUrl => f.write_str("it is not an http or https URL"),
            Self::Scheme(scheme) => write!(
                f,
                "it uses the scheme {scheme:?}; only http and https are allowed"
            ),
            Self::UserInfo => f.write_str("a URL may not carry a user name or password"),
            Self::OddAddress(host) => write!(
                f,
                "the host {host:?} is an IP address in an unusual notation (write IPv4 addresses as four decimal numbers)"
            ),
        }
    }
}

impl Endpoint {
    /// Parses `text` strictly: `http`/`https` (any case), `://`, no user information, an
    /// optional port, and a host that is a DNS name, a dotted-decimal IPv4 address or a
    /// bracketed IPv6 address. Whitespace, control characters, backslashes and `%` in the host
    /// are refused rather than interpreted.
    pub fn parse(text: &str) -> Result<Self, UrlProblem> {
        if text.is_empty() || text.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(UrlProblem::NotAUrl);
        }
        let (scheme_text, rest) = text.split_once("://").ok_or(UrlProblem::NotAUrl)?;
        let looks_like_scheme = scheme_text
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic())
            && scheme_text
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
        if !looks_like_scheme {
            return Err(UrlProblem::NotAUrl);
        }
        let scheme = Scheme::parse(scheme_text)
            .ok_or_else(|| UrlProblem::Scheme(scheme_text.to_ascii_lowercase()))?;
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let authority = &rest[..end];
        if authority.contains('\\') {
            return Err(UrlProblem::NotAUrl);
        }
        if authority.contains('@') {
            return Err(UrlProblem::UserInfo);
        }
        let (host, port) = split_host_port(authority)?;
        let port = match port {
            None => scheme.default_port(),
            Some(text) if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) => {
                match text.parse::<u16>() {
                    Ok(port) if port != 0 => port,
                    _ => return Err(UrlProblem::NotAUrl),
                }
            }
            Some(_) => return Err(UrlProblem::NotAUrl),
        };
        Ok(Endpoint { scheme, host, port })
    }

    /// `scheme://host:port`.
    pub fn origin(&self) -> String {
        format!("{}://{}:{}", self.scheme.as_str(), self.host, self.port)
    }
}

/// The host and the port text of an authority (`host`, `host:port`, `[v6]`, `[v6]:port`).
fn split_host_port(authority: &str) -> Result<(Host, Option<&str>), UrlProblem> {
    if let Some(inner) = authority.strip_prefix('[') {
        let (address, after) = inner.split_once(']').ok_or(UrlProblem::NotAUrl)?;
        if address.contains('%') {
            // Zone identifiers (`fe80::1%25eth0`) name an interface of this machine.
            return Err(UrlProblem::OddAddress(address.to_owned()));
        }
        let ip: Ipv6Addr = address.parse().map_err(|_| UrlProblem::NotAUrl)?;
        let port = match after {
            "" => None,
            port => Some(port.strip_prefix(':').ok_or(UrlProblem::NotAUrl)?),
        };
        return Ok((Host::Ip(IpAddr::V6(ip)), port));
    }
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (authority, None),
    };
    Ok((parse_host(host)?, port))
}

/// A host that is not bracketed: a dotted-decimal IPv4 address or a DNS name.
fn parse_host(text: &str) -> Result<Host, UrlProblem> {
    if text.contains('%') {
        return Err(UrlProblem::OddAddress(text.to_owned()));
    }
    let lowered = text.to_ascii_lowercase();
    let name = lowered.strip_suffix('.').unwrap_or(&lowered);
    if name.is_empty() {
        return Err(UrlProblem::NotAUrl);
    }
    if let Ok(ip) = name.parse::<Ipv4Addr>() {
        // Rust's parser takes exactly four decimal octets without leading zeros; say so anyway.
        if ip.to_string() == name {
            return Ok(Host::Ip(IpAddr::V4(ip)));
        }
        return Err(UrlProblem::OddAddress(text.to_owned()));
    }
    // A name whose last label is a number is an IPv4 address to WHATWG parsers and to
    // inet_aton (`2130706433`, `0x7f.1`, `0177.0.0.1`, `127.1`): refused, never guessed.
    let last = name.rsplit('.').next().unwrap_or_default();
    let hex = last
        .strip_prefix("0x")
        .is_some_and(|digits| digits.bytes().all(|b| b.is_ascii_hexdigit()));
    if hex || last.bytes().all(|b| b.is_ascii_digit()) {
        return Err(UrlProblem::OddAddress(text.to_owned()));
    }
    let valid_label = |label: &str| {
        !label.is_empty()
            && label.len() <= 63
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    };
    if name.len() > 253 || !name.split('.').all(valid_label) {
        return Err(UrlProblem::NotAUrl);
    }
    Ok(Host::Name(name.to_owned()))
}

/// Why an address may not be connected to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AddressClass {
    /// `0.0.0.0/8`, `::`.
    Unspecified,
    /// `127.0.0.0/8`, `::1`.
    Loopback,
    /// A cloud instance-metadata endpoint (169.254.169.254, fd00:ec2::254, ...).
    CloudMetadata,
    /// `169.254.0.0/16`, `fe80::/10`.
    LinkLocal,
    /// `10/8`, `172.16/12`, `192.168/16`, `fc00::/7`, `fec0::/10`, `64:ff9b:1::/48`.
    Private,
    /// `100.64.0.0/10` (carrier-grade NAT).
    SharedAddressSpace,
    /// `224.0.0.0/4`, `ff00::/8`.
    Multicast,
    /// `255.255.255.255`.
    Broadcast,
    /// Other special-purpose ranges (documentation, benchmarking, `240/4`, Teredo, ...).
    Reserved,
    /// The cluster's service or pod network (`storageEndpoints.clusterNetworks`).
    ClusterNetwork,
}

impl AddressClass {
    /// How the class is named in messages ("169.254.169.254 is {description}").
    pub fn description(self) -> &'static str {
        match self {
            Self::Unspecified => "an unspecified address",
            Self::Loopback => "a loopback address",
            Self::CloudMetadata => "a cloud metadata endpoint",
            Self::LinkLocal => "a link-local address",
            Self::Private => "a private-network address",
            Self::SharedAddressSpace => "a shared (carrier-grade NAT) address",
            Self::Multicast => "a multicast address",
            Self::Broadcast => "the broadcast address",
            Self::Reserved => "a reserved address",
            Self::ClusterNetwork => "in the cluster's service or pod network",
        }
    }

    /// Whether an address of this class is acceptable behind a host name the administrator
    /// listed (storage inside the organisation's or the cluster's networks).
    fn reachable_when_listed(self) -> bool {
        matches!(
            self,
            Self::Private | Self::SharedAddressSpace | Self::ClusterNetwork
        )
    }
}

impl fmt::Display for AddressClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.description())
    }
}

/// Metadata endpoints of the clouds (AWS/GCP/Azure/OpenStack IMDS, ECS task metadata, EKS
/// pod identity, Alibaba, Azure WireServer, Oracle's legacy endpoint).
const METADATA_V4: &[Ipv4Addr] = &[
    Ipv4Addr::new(169, 254, 169, 254),
    Ipv4Addr::new(169, 254, 170, 2),
    Ipv4Addr::new(169, 254, 170, 23),
    Ipv4Addr::new(100, 100, 100, 200),
    Ipv4Addr::new(168, 63, 129, 16),
    Ipv4Addr::new(192, 0, 0, 192),
];

/// IPv6 metadata endpoints (AWS IMDS and EKS pod identity, GCP).
const METADATA_V6: &[Ipv6Addr] = &[
    Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254),
    Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x23),
    Ipv6Addr::new(0xfd20, 0xce, 0, 0, 0, 0, 0, 0x254),
];

/// IPv4-mapped IPv6 addresses (`::ffff:a.b.c.d`) as the IPv4 address they are.
pub fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    }
}

fn within_v4(ip: Ipv4Addr, network: [u8; 4], prefix: u32) -> bool {
    let mask = u32::MAX.checked_shl(32 - prefix).unwrap_or(0);
    u32::from(ip) & mask == u32::from(Ipv4Addr::from(network)) & mask
}

fn within_v6(ip: Ipv6Addr, network: Ipv6Addr, prefix: u32) -> bool {
    let mask = u128::MAX.checked_shl(128 - prefix).unwrap_or(0);
    u128::from(ip) & mask == u128::from(network) & mask
}

fn classify_v4(ip: Ipv4Addr) -> Option<AddressClass> {
    use AddressClass::*;
    if METADATA_V4.contains(&ip) {
        return Some(CloudMetadata);
    }
    let class = if within_v4(ip, [0, 0, 0, 0], 8) {
        Unspecified
    } else if within_v4(ip, [127, 0, 0, 0], 8) {
        Loopback
    } else if within_v4(ip, [169, 254, 0, 0], 16) {
        LinkLocal
    } else if within_v4(ip, [10, 0, 0, 0], 8)
        || within_v4(ip, [172, 16, 0, 0], 12)
        || within_v4(ip, [192, 168, 0, 0], 16)
    {
        Private
    } else if within_v4(ip, [100, 64, 0, 0], 10) {
        SharedAddressSpace
    } else if ip == Ipv4Addr::BROADCAST {
        Broadcast
    } else if within_v4(ip, [224, 0, 0, 0], 4) {
        Multicast
    } else if within_v4(ip, [240, 0, 0, 0], 4)
        || within_v4(ip, [192, 0, 0, 0], 24)
        || within_v4(ip, [192, 0, 2, 0], 24)
        || within_v4(ip, [192, 88, 99, 0], 24)
        || within_v4(ip, [198, 18, 0, 0], 15)
        || within_v4(ip, [198, 51, 100, 0], 24)
        || within_v4(ip, [203, 0, 113, 0], 24)
    {
        Reserved
    } else {
        return None;
    };
    Some(class)
}

fn classify_v6(ip: Ipv6Addr) -> Option<AddressClass> {
    use AddressClass::*;
    if METADATA_V6.contains(&ip) {
        return Some(CloudMetadata);
    }
    if ip.is_unspecified() {
        return Some(Unspecified);
    }
    if ip.is_loopback() {
        return Some(Loopback);
    }
    let bits = u128::from(ip);
    let v6 = |text: &str| text.parse::<Ipv6Addr>().unwrap_or(Ipv6Addr::UNSPECIFIED);
    let low_v4 = Ipv4Addr::from((bits & 0xffff_ffff) as u32);
    // Forms carrying an IPv4 address are judged by it: IPv4-compatible (`::a.b.c.d`,
    // deprecated, so refused even when public), IPv4-translated (`::ffff:0:a.b.c.d`), NAT64
    // (`64:ff9b::/96`) and 6to4 (`2002:AABB:CCDD::/48`).
    if bits >> 32 == 0 {
        return classify_v4(low_v4).or(Some(Reserved));
    }
    if bits >> 32 == 0xffff_0000 || within_v6(ip, v6("64:ff9b::"), 96) {
        return classify_v4(low_v4);
    }
    if within_v6(ip, v6("2002::"), 16) {
        return classify_v4(Ipv4Addr::from(((bits >> 80) & 0xffff_ffff) as u32));
    }
    let class = if within_v6(ip, v6("fe80::"), 10) {
        LinkLocal
    } else if within_v6(ip, v6("fc00::"), 7)
        || within_v6(ip, v6("fec0::"), 10)
        || within_v6(ip, v6("64:ff9b:1::"), 48)
    {
        Private
    } else if within_v6(ip, v6("ff00::"), 8) {
        Multicast
    } else if within_v6(ip, v6("2001::"), 32)
        || within_v6(ip, v6("2001:db8::"), 32)
        || within_v6(ip, v6("100::"), 64)
    {
        // Teredo (an IPv4 address, obfuscated), documentation, discard-only.
        Reserved
    } else {
        return None;
    };
    Some(class)
}

/// The class of `ip` that keeps NAC from connecting to it by default, if any
/// (`cluster_networks` are the administrator's service and pod networks).
pub fn classify(ip: IpAddr, cluster_networks: &[Cidr]) -> Option<AddressClass> {
    let ip = canonical(ip);
    let builtin = match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    };
    builtin.or_else(|| {
        cluster_networks
            .iter()
            .any(|network| network.contains(ip))
            .then_some(AddressClass::ClusterNetwork)
    })
}

/// An IP network (`10.0.0.0/8`, `fd00::/8`); IPv4-mapped IPv6 networks are stored as IPv4.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Cidr {
    network: IpAddr,
    prefix: u8,
}

impl Cidr {
    /// `address/prefix`, or a single address (`/32`, `/128`).
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let (address, prefix) = match text.split_once('/') {
            Some((address, prefix)) => (address, Some(prefix)),
            None => (text, None),
        };
        let address = address
            .strip_prefix('[')
            .and_then(|inner| inner.strip_suffix(']'))
            .unwrap_or(address);
        let ip: IpAddr = address
            .parse()
            .map_err(|_| format!("{address:?} is not an IP address"))?;
        let width: u8 = if ip.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => width,
            Some(prefix) => prefix
                .parse::<u8>()
                .ok()
                .filter(|prefix| *prefix <= width)
                .ok_or_else(|| format!("{prefix:?} is not a prefix length of 0 to {width}"))?,
        };
        Ok(Self::new(ip, prefix))
    }

    /// The network of `ip` with `prefix` bits (clamped to the address width).
    pub fn new(ip: IpAddr, prefix: u8) -> Self {
        match ip {
            IpAddr::V6(v6) if prefix >= 96 && v6.to_ipv4_mapped().is_some() => Self {
                network: canonical(ip),
                prefix: prefix - 96,
            },
            IpAddr::V4(_) => Self {
                network: ip,
                prefix: prefix.min(32),
            },
            IpAddr::V6(_) => Self {
                network: ip,
                prefix: prefix.min(128),
            },
        }
    }

    /// Whether `ip` (IPv4-mapped forms as IPv4) is in this network.
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.network, canonical(ip)) {
            (IpAddr::V4(network), IpAddr::V4(ip)) => {
                within_v4(ip, network.octets(), u32::from(self.prefix))
            }
            (IpAddr::V6(network), IpAddr::V6(ip)) => within_v6(ip, network, u32::from(self.prefix)),
            _ => false,
        }
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix)
    }
}

/// A host pattern of an allowed origin.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum HostPattern {
    /// Exactly this host.
    Exact(Host),
    /// Any name ending in this suffix, which starts with a dot (`*.example.com` is
    /// `.example.com`: `a.example.com` and `a.b.example.com`, not `example.com`).
    Suffix(String),
}

impl HostPattern {
    /// Whether `host` matches.
    pub fn matches(&self, host: &Host) -> bool {
        match (self, host) {
            (Self::Exact(Host::Ip(a)), Host::Ip(b)) => canonical(*a) == canonical(*b),
            (Self::Exact(exact), host) => exact == host,
            (Self::Suffix(suffix), Host::Name(name)) => {
                name.len() > suffix.len() && name.ends_with(suffix.as_str())
            }
            (Self::Suffix(_), Host::Ip(_)) => false,
        }
    }
}

impl fmt::Display for HostPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Exact(host) => write!(f, "{host}"),
            Self::Suffix(suffix) => write!(f, "*{suffix}"),
        }
    }
}

/// One entry of `storageEndpoints.allow`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum AllowEntry {
    /// URLs with this scheme, host (pattern) and port.
    Origin {
        /// The scheme.
        scheme: Scheme,
        /// The host or host suffix.
        host: HostPattern,
        /// The port.
        port: u16,
    },
    /// URLs whose host is an IP address in this network (any http/https port), and the
    /// addresses names resolve to.
    Network(Cidr),
}

impl AllowEntry {
    /// An entry as written in `policy.yaml`: `scheme://host[:port]` (host may be `*.suffix`),
    /// a bare host or `*.suffix` (https on 443), `address/prefix`, or a bare IP address.
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if text.contains("://") {
            let (scheme, rest) = text.split_once("://").unwrap_or_default();
            let Some(scheme) = Scheme::parse(scheme) else {
                return Err("only http and https origins can be allowed".to_owned());
            };
            let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
            if !matches!(&rest[end..], "" | "/") {
                return Err(
                    "names a path, query or fragment; an entry is an origin (scheme://host[:port])"
                        .to_owned(),
                );
            }
            return origin_entry(scheme, &rest[..end]);
        }
        if text.contains('/') {
            return Cidr::parse(text).map(Self::Network);
        }
        if let Ok(cidr) = Cidr::parse(text) {
            return Ok(Self::Network(cidr));
        }
        if text.contains(':') {
            return Err(
                "a host with a port needs its scheme (https://host:port or http://host:port)"
                    .to_owned(),
            );
        }
        origin_entry(Scheme::Https, text)
    }

    /// Whether `endpoint` matches, and how it is then vouched for.
    fn vouch(&self, endpoint: &Endpoint) -> Option<Vouching> {
        let listed = match self {
            Self::Origin { scheme, host, port } => {
                *scheme == endpoint.scheme && *port == endpoint.port && host.matches(&endpoint.host)
            }
            Self::Network(network) => {
                matches!(endpoint.host, Host::Ip(ip) if network.contains(ip))
            }
        };
        listed.then(|| match endpoint.host {
            Host::Ip(ip) => Vouching::ListedAddress(canonical(ip)),
            Host::Name(_) => Vouching::ListedName,
        })
    }
}

impl fmt::Display for AllowEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Origin { scheme, host, port } => {
                write!(f, "{}://{host}:{port}", scheme.as_str())
            }
            Self::Network(network) => write!(f, "{network}"),
        }
    }
}

/// `authority` (host or `*.suffix`, optional port) of an allowed origin.
fn origin_entry(scheme: Scheme, authority: &str) -> Result<AllowEntry, String> {
    let wildcard = authority.strip_prefix("*.");
    // A wildcard host is checked as a name with one more label in front.
    let probe = match wildcard {
        Some(rest) => format!("{}://wildcard.{rest}", scheme.as_str()),
        None => format!("{}://{authority}", scheme.as_str()),
    };
    let endpoint = Endpoint::parse(&probe).map_err(|problem| problem.to_string())?;
    let host = match (wildcard, endpoint.host) {
        (None, host) => HostPattern::Exact(host),
        (Some(_), Host::Name(name)) => HostPattern::Suffix(
            name.strip_prefix("wildcard")
                .unwrap_or(name.as_str())
                .to_owned(),
        ),
        (Some(_), Host::Ip(_)) => {
            return Err(
                "a wildcard stands for names; write a network (10.0.0.0/8) for addresses"
                    .to_owned(),
            );
        }
    };
    Ok(AllowEntry::Origin {
        scheme,
        host,
        port: endpoint.port,
    })
}

/// How a tenant URL is vouched for, which decides the addresses NAC may reach it at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Vouching {
    /// No allow-list matched (there is none, or it is a provider's public endpoint): only
    /// addresses of no special class.
    Unlisted,
    /// A listed name: private, CGNAT and cluster addresses are fine too.
    ListedName,
    /// A listed IP address host: that address.
    ListedAddress(IpAddr),
}

/// Why a tenant location may not use a URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EndpointRefusal {
    /// Not a usable URL at all.
    Url(UrlProblem),
    /// The host name is loopback or cluster-internal (no allow-list).
    Name {
        /// The host.
        host: String,
        /// What kind of name it is.
        why: &'static str,
    },
    /// The host is an address of a refused class (no allow-list).
    Address {
        /// The address.
        ip: IpAddr,
        /// Its class.
        class: AddressClass,
    },
    /// An allow-list exists and the URL matches no entry.
    NotListed,
}

impl EndpointRefusal {
    /// Whether listing the endpoint in `storageEndpoints.allow` would make it acceptable.
    pub fn admin_can_allow(&self) -> bool {
        !matches!(self, Self::Url(_))
    }
}

impl fmt::Display for EndpointRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Url(problem) => write!(f, "{problem}"),
            Self::Name { host, why } => write!(f, "{host} is {why}"),
            Self::Address { ip, class } => write!(f, "{ip} is {class}"),
            Self::NotListed => {
                f.write_str("it is not one of the storage endpoints the administrator allows")
            }
        }
    }
}

/// Why a name is refused by default, if it is.
fn refused_name(name: &str) -> Option<&'static str> {
    let under = |suffix: &str| {
        name == suffix
            || name
                .strip_suffix(suffix)
                .is_some_and(|head| head.ends_with('.'))
    };
    if under("localhost") {
        return Some("a loopback name");
    }
    if !name.contains('.') {
        return Some(
            "a single-label name, which the cluster's DNS search path resolves to cluster services",
        );
    }
    if under("svc") || under("cluster.local") {
        return Some("a cluster-internal name");
    }
    if ["internal", "local", "localdomain", "home.arpa"]
        .iter()
        .any(|suffix| under(suffix))
    {
        return Some("a private-network name");
    }
    None
}

/// The administrator's rule for tenant storage endpoints (`storageEndpoints` of
/// `policy.yaml`); the default has no allow-list and no cluster networks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StorageEndpoints {
    allow: Vec<AllowEntry>,
    cluster_networks: Vec<Cidr>,
}

impl StorageEndpoints {
    /// A rule from parsed entries.
    pub fn new(allow: Vec<AllowEntry>, cluster_networks: Vec<Cidr>) -> Self {
        Self {
            allow,
            cluster_networks,
        }
    }

    /// A rule from `policy.yaml` text entries; an error names the list and index.
    pub fn parse(allow: &[String], cluster_networks: &[String]) -> Result<Self, String> {
        let allow = allow
            .iter()
            .enumerate()
            .map(|(index, entry)| {
                AllowEntry::parse(entry)
                    .map_err(|reason| format!("allow[{index}] ({entry:?}): {reason}"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let cluster_networks = cluster_networks
            .iter()
            .enumerate()
            .map(|(index, entry)| {
                Cidr::parse(entry)
                    .map_err(|reason| format!("clusterNetworks[{index}] ({entry:?}): {reason}"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self::new(allow, cluster_networks))
    }

    /// The allow-list (empty: the default rule applies).
    pub fn allow(&self) -> &[AllowEntry] {
        &self.allow
    }

    /// The cluster's service and pod networks.
    pub fn cluster_networks(&self) -> &[Cidr] {
        &self.cluster_networks
    }

    /// Whether a tenant location may name `url`, and how it is vouched for.
    pub fn check_url(&self, url: &str) -> Result<Vouching, EndpointRefusal> {
        let endpoint = Endpoint::parse(url).map_err(EndpointRefusal::Url)?;
        self.check_endpoint(&endpoint)
    }

    /// [`Self::check_url`] for a parsed URL.
    pub fn check_endpoint(&self, endpoint: &Endpoint) -> Result<Vouching, EndpointRefusal> {
        if !self.allow.is_empty() {
            return self
                .allow
                .iter()
                .find_map(|entry| entry.vouch(endpoint))
                .ok_or(EndpointRefusal::NotListed);
        }
        match &endpoint.host {
            Host::Name(name) => match refused_name(name) {
                Some(why) => Err(EndpointRefusal::Name {
                    host: name.clone(),
                    why,
                }),
                None => Ok(Vouching::Unlisted),
            },
            Host::Ip(ip) => match classify(*ip, &self.cluster_networks) {
                Some(class) => Err(EndpointRefusal::Address {
                    ip: canonical(*ip),
                    class,
                }),
                None => Ok(Vouching::Unlisted),
            },
        }
    }

    /// Whether NAC may connect to `ip` for an endpoint vouched for as `vouching`.
    pub fn check_address(&self, ip: IpAddr, vouching: Vouching) -> Result<(), AddressClass> {
        let ip = canonical(ip);
        let in_listed_network = self
            .allow
            .iter()
            .any(|entry| matches!(entry, AllowEntry::Network(network) if network.contains(ip)));
        if in_listed_network {
            return Ok(());
        }
        let Some(class) = classify(ip, &self.cluster_networks) else {
            return Ok(());
        };
        match vouching {
            Vouching::ListedAddress(listed) if listed == ip => Ok(()),
            Vouching::ListedName if class.reachable_when_listed() => Ok(()),
            _ => Err(class),
        }
    }
}

/// A URL found in a location's `config`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigUrl {
    /// The config key.
    pub key: String,
    /// The URL the plugin will use (for `universeDomain`, `https://storage.<domain>`).
    pub url: String,
}

/// `provider` without Velero's `velero.io/` and in lower case: `aws`, `azure`, `gcp`, ...
fn provider_name(provider: &str) -> String {
    let provider = provider.trim().to_ascii_lowercase();
    provider
        .strip_prefix("velero.io/")
        .map(str::to_owned)
        .unwrap_or(provider)
}

/// Every URL a location's `config` names for `provider` (see the module documentation):
/// the provider's URL keys (non-empty values, URL or not), GCP's `universeDomain`, and any
/// other value containing `://`.
pub fn config_urls(provider: &str, config: &BTreeMap<String, String>) -> Vec<ConfigUrl> {
    let provider = provider_name(provider);
    let url_keys: &[&str] = match provider.as_str() {
        "aws" => AWS_URL_KEYS,
        "azure" => AZURE_URL_KEYS,
        "gcp" => GCP_URL_KEYS,
        _ => &[],
    };
    config
        .iter()
        .filter(|(_, value)| !value.is_empty())
        .filter_map(|(key, value)| {
            let url = if url_keys.contains(&key.as_str()) || value.contains("://") {
                value.clone()
            } else if provider == "gcp" && key == GCP_UNIVERSE_DOMAIN_KEY {
                format!("https://storage.{value}")
            } else {
                return None;
            };
            Some(ConfigUrl {
                key: key.clone(),
                url,
            })
        })
        .collect()
}

/// An origin a tenant location's download URLs may be at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TenantOrigin {
    /// The scheme.
    pub scheme: Scheme,
    /// The host (pattern).
    pub host: HostPattern,
    /// The port.
    pub port: u16,
    /// How it is vouched for (decides the addresses it may resolve to).
    pub vouching: Vouching,
}

impl TenantOrigin {
    fn https(host: HostPattern) -> Self {
        Self {
            scheme: Scheme::Https,
            host,
            port: 443,
            vouching: Vouching::Unlisted,
        }
    }

    fn matches(&self, endpoint: &Endpoint) -> bool {
        self.scheme == endpoint.scheme
            && self.port == endpoint.port
            && self.host.matches(&endpoint.host)
    }
}

/// Which downloads a fetch may make.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FetchScope {
    /// An administrator's location (the default one, the shared pool's): any URL Velero
    /// signed for it.
    Trusted,
    /// A location made from a tenant's NonAdminBackupStorageLocation (or one NAC cannot
    /// identify): only its own origins, only at permitted addresses, never a redirect.
    TenantLocation(TenantFetchScope),
}

/// The origins and address rule of a tenant location.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TenantFetchScope {
    origins: Vec<TenantOrigin>,
    rules: StorageEndpoints,
}

/// Why a tenant-scope download was refused before connecting. Never carries the URL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FetchRefusal {
    /// The URL is not a plain http(s) URL.
    Malformed,
    /// The URL is not at one of the location's own origins.
    OutsideLocation,
    /// The URL's IP address host may not be connected to.
    Address(AddressClass),
}

/// A URL a tenant scope admits: where it points and how it is vouched for (the fetcher
/// checks every address the host resolves to with [`TenantFetchScope::check_address`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Admitted {
    /// The URL's endpoint.
    pub endpoint: Endpoint,
    /// How its origin is vouched for.
    pub vouching: Vouching,
}

impl TenantFetchScope {
    /// A scope of `origins` under `rules`.
    pub fn new(origins: Vec<TenantOrigin>, rules: StorageEndpoints) -> Self {
        Self { origins, rules }
    }

    /// The origins download URLs may be at.
    pub fn origins(&self) -> &[TenantOrigin] {
        &self.origins
    }

    /// Whether `url` may be fetched: at one of the origins, and, for an IP address host, at a
    /// permitted address.
    pub fn admit(&self, url: &str) -> Result<Admitted, FetchRefusal> {
        let endpoint = Endpoint::parse(url).map_err(|_| FetchRefusal::Malformed)?;
        let origin = self
            .origins
            .iter()
            .find(|origin| origin.matches(&endpoint))
            .ok_or(FetchRefusal::OutsideLocation)?;
        let vouching = origin.vouching;
        if let Host::Ip(ip) = endpoint.host {
            self.check_address(ip, vouching)
                .map_err(FetchRefusal::Address)?;
        }
        Ok(Admitted { endpoint, vouching })
    }

    /// Whether an address the admitted host resolved to may be connected to.
    pub fn check_address(&self, ip: IpAddr, vouching: Vouching) -> Result<(), AddressClass> {
        self.rules.check_address(ip, vouching)
    }
}

/// Whether a Velero BackupStorageLocation was made by NAC from a tenant's
/// NonAdminBackupStorageLocation (its NACUUID label or origin annotations; tenants cannot
/// write Velero objects, so these cannot be forged by them).
pub fn is_tenant_location(location: &BackupStorageLocation) -> bool {
    let labelled = location
        .metadata
        .labels
        .as_ref()
        .is_some_and(|labels| labels.contains_key(labels::NABSL_ORIGIN_NACUUID));
    let annotated = location
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|annotations| {
            annotations.contains_key(labels::NABSL_ORIGIN_NAMESPACE_ANNOTATION)
                || annotations.contains_key(labels::NABSL_ORIGIN_NAME_ANNOTATION)
        });
    labelled || annotated
}

/// The scope of downloads signed for `location`: [`FetchScope::Trusted`] for an
/// administrator's location, the location's own origins otherwise. `None` (the location named
/// by a backup no longer exists) is a tenant scope without origins: nothing is fetched.
pub fn fetch_scope(
    location: Option<&BackupStorageLocation>,
    rules: &StorageEndpoints,
) -> FetchScope {
    match location {
        Some(location) if !is_tenant_location(location) => FetchScope::Trusted,
        Some(location) => FetchScope::TenantLocation(TenantFetchScope::new(
            tenant_origins(&location.spec, rules),
            rules.clone(),
        )),
        None => FetchScope::TenantLocation(TenantFetchScope::new(Vec::new(), rules.clone())),
    }
}

/// The origins a tenant location's download URLs may be at (see the module documentation).
/// URLs of its config that `rules` refuse contribute nothing.
pub fn tenant_origins(
    spec: &BackupStorageLocationSpec,
    rules: &StorageEndpoints,
) -> Vec<TenantOrigin> {
    let provider = provider_name(&spec.provider);
    let config = spec.config.clone().unwrap_or_default();
    let value = |key: &str| config_value(&config, key).to_owned();
    let bucket = spec
        .object_storage
        .bucket
        .trim_matches('/')
        .to_ascii_lowercase();
    let mut origins = Vec::new();
    match provider.as_str() {
        "aws" => {
            let custom = [value("s3Url"), value("publicUrl")];
            for url in custom.iter().filter(|url| !url.is_empty()) {
                add_config_origin(&mut origins, rules, url, Some(&bucket));
            }
            if custom.iter().all(String::is_empty) {
                origins.extend(aws_origins(&value("region"), &bucket));
            }
        }
        "azure" => match value("storageAccountURI").as_str() {
            "" => origins.extend(azure_origins(&value("storageAccount").to_ascii_lowercase())),
            uri => add_config_origin(&mut origins, rules, uri, None),
        },
        "gcp" => {
            origins.push(TenantOrigin::https(HostPattern::Exact(Host::Name(
                "storage.googleapis.com".to_owned(),
            ))));
            let endpoint = value("storeEndpoint");
            if !endpoint.is_empty() {
                add_config_origin(&mut origins, rules, &endpoint, None);
            }
        }
        _ => {
            for url in config.values().filter(|value| value.contains("://")) {
                add_config_origin(&mut origins, rules, url, None);
            }
            // The administrator's exact origins: where such a provider serves downloads.
            for entry in &rules.allow {
                if let AllowEntry::Origin {
                    scheme,
                    host: HostPattern::Exact(host),
                    port,
                } = entry
                {
                    origins.push(TenantOrigin {
                        scheme: *scheme,
                        host: HostPattern::Exact(host.clone()),
                        port: *port,
                        vouching: match host {
                            Host::Ip(ip) => Vouching::ListedAddress(canonical(*ip)),
                            Host::Name(_) => Vouching::ListedName,
                        },
                    });
                }
            }
        }
    }
    origins
}

fn config_value<'a>(config: &'a BTreeMap<String, String>, key: &str) -> &'a str {
    config.get(key).map(String::as_str).unwrap_or_default()
}

/// The origin of a config URL (when `rules` accept it), and for S3 (`bucket` given) its
/// virtual-hosted form, which puts the bucket in front of the host.
fn add_config_origin(
    origins: &mut Vec<TenantOrigin>,
    rules: &StorageEndpoints,
    url: &str,
    bucket: Option<&str>,
) {
    let Ok(endpoint) = Endpoint::parse(url) else {
        return;
    };
    let Ok(vouching) = rules.check_endpoint(&endpoint) else {
        return;
    };
    if let (Some(bucket), Host::Name(name)) = (bucket.filter(|b| !b.is_empty()), &endpoint.host) {
        origins.push(TenantOrigin {
            scheme: endpoint.scheme,
            host: HostPattern::Exact(Host::Name(format!("{bucket}.{name}"))),
            port: endpoint.port,
            vouching,
        });
    }
    origins.push(TenantOrigin {
        scheme: endpoint.scheme,
        host: HostPattern::Exact(endpoint.host),
        port: endpoint.port,
        vouching,
    });
}

/// S3's own endpoints for `region` (virtual-hosted and path style), or any AWS host when the
/// region is not set (Velero looks it up).
fn aws_origins(region: &str, bucket: &str) -> Vec<TenantOrigin> {
    let domains: &[&str] = if region.starts_with("cn-") {
        &["amazonaws.com.cn"]
    } else {
        &["amazonaws.com"]
    };
    let valid_region = !region.is_empty()
        && region
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-');
    if !valid_region {
        return [".amazonaws.com", ".amazonaws.com.cn"]
            .iter()
            .map(|suffix| TenantOrigin::https(HostPattern::Suffix((*suffix).to_owned())))
            .collect();
    }
    let region = region.to_ascii_lowercase();
    let mut hosts = Vec::new();
    for domain in domains {
        hosts.push(format!("s3.{region}.{domain}"));
        hosts.push(format!("s3.{domain}"));
        if !bucket.is_empty() {
            hosts.push(format!("{bucket}.s3.{region}.{domain}"));
            hosts.push(format!("{bucket}.s3.{domain}"));
        }
    }
    hosts
        .into_iter()
        .map(|host| TenantOrigin::https(HostPattern::Exact(Host::Name(host))))
        .collect()
}

/// The blob endpoints of an Azure storage account in the public, US government and China
/// clouds, and the DNS-zone endpoints (`<account>.zNN.blob.storage.azure.net`).
fn azure_origins(account: &str) -> Vec<TenantOrigin> {
    const SUFFIXES: &[&str] = &[
        "blob.core.windows.net",
        "blob.core.usgovcloudapi.net",
        "blob.core.chinacloudapi.cn",
    ];
    let mut origins: Vec<TenantOrigin> = SUFFIXES
        .iter()
        .map(|suffix| {
            TenantOrigin::https(if account.is_empty() {
                HostPattern::Suffix(format!(".{suffix}"))
            } else {
                HostPattern::Exact(Host::Name(format!("{account}.{suffix}")))
            })
        })
        .collect();
    origins.push(TenantOrigin::https(HostPattern::Suffix(
        ".blob.storage.azure.net".to_owned(),
    )));
    origins
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn open() -> StorageEndpoints {
        StorageEndpoints::default()
    }

    fn rules(allow: &[&str], cluster: &[&str]) -> StorageEndpoints {
        let owned = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        StorageEndpoints::parse(&owned(allow), &owned(cluster)).unwrap()
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    fn refused_class(url: &str) -> AddressClass {
        match open().check_url(url) {
            Err(EndpointRefusal::Address { class, .. }) => class,
            other => panic!("{url}: {other:?}"),
        }
    }

    #[test]
    fn public_urls_pass_without_an_allow_list() {
        for url in [
            "https://s3.eu-central-1.amazonaws.com",
            "https://minio.example.com:9000/path?x=1",
            "HTTP://Storage.Example.COM.",
            "https://8.8.8.8",
            "https://[2a00:1450:4001:80b::200e]:443/",
        ] {
            assert_eq!(open().check_url(url), Ok(Vouching::Unlisted), "{url}");
        }
    }

    #[test]
    fn every_forbidden_ipv4_range_is_refused() {
        use AddressClass::*;
        for (url, class) in [
            ("http://169.254.169.254/latest/meta-data", CloudMetadata),
            ("http://169.254.170.2/v2/credentials", CloudMetadata),
            ("http://100.100.100.200/", CloudMetadata),
            ("http://168.63.129.16/", CloudMetadata),
            ("http://169.254.1.1", LinkLocal),
            ("http://127.0.0.1:6443", Loopback),
            ("http://127.255.255.254", Loopback),
            ("http://0.0.0.0:8080", Unspecified),
            ("http://0.1.2.3", Unspecified),
            ("http://10.0.0.1", Private),
            ("http://172.16.0.1", Private),
            ("http://172.31.255.255", Private),
            ("http://192.168.1.1", Private),
            ("http://100.64.0.1", SharedAddressSpace),
            ("http://100.127.255.255", SharedAddressSpace),
            ("http://224.0.0.1", Multicast),
            ("http://239.255.255.250", Multicast),
            ("http://255.255.255.255", Broadcast),
            ("http://240.0.0.1", Reserved),
            ("http://192.0.2.1", Reserved),
            ("http://198.18.0.1", Reserved),
        ] {
            assert_eq!(refused_class(url), class, "{url}");
        }
        // Just outside the ranges.
        for url in ["http://172.32.0.1", "http://100.128.0.1", "http://11.0.0.1"] {
            assert_eq!(open().check_url(url), Ok(Vouching::Unlisted), "{url}");
        }
    }

    #[test]
    fn every_forbidden_ipv6_range_and_embedded_ipv4_form_is_refused() {
        use AddressClass::*;
        for (url, class) in [
            ("http://[::1]", Loopback),
            ("http://[::]:80", Unspecified),
            ("http://[fd00:ec2::254]", CloudMetadata),
            ("http://[fd20:ce::254]", CloudMetadata),
            ("http://[fe80::1]", LinkLocal),
            ("http://[fc00::1]", Private),
            ("http://[fd12:3456::1]", Private),
            ("http://[fec0::1]", Private),
            ("http://[ff02::1]", Multicast),
            ("http://[2001:db8::1]", Reserved),
            ("http://[2001:0:4136:e378::1]", Reserved),
            // IPv4-mapped, both notations.
            ("http://[::ffff:127.0.0.1]", Loopback),
            ("http://[::ffff:7f00:1]", Loopback),
            ("http://[::ffff:169.254.169.254]", CloudMetadata),
            ("http://[::ffff:a9fe:a9fe]", CloudMetadata),
            ("http://[::ffff:10.1.2.3]", Private),
            ("http://[::ffff:192.168.0.1]", Private),
            ("http://[::ffff:100.64.0.1]", SharedAddressSpace),
            ("http://[::ffff:0.0.0.0]", Unspecified),
            ("http://[::ffff:224.0.0.1]", Multicast),
            ("http://[::ffff:255.255.255.255]", Broadcast),
            // IPv4-compatible (deprecated: refused even when public), translated, NAT64, 6to4.
            ("http://[::127.0.0.1]", Loopback),
            ("http://[::8.8.8.8]", Reserved),
            ("http://[::ffff:0:169.254.169.254]", CloudMetadata),
            ("http://[64:ff9b::169.254.169.254]", CloudMetadata),
            ("http://[64:ff9b::7f00:1]", Loopback),
            ("http://[64:ff9b:1::1]", Private),
            ("http://[2002:a9fe:a9fe::1]", CloudMetadata),
            ("http://[2002:c0a8:0101::1]", Private),
        ] {
            assert_eq!(refused_class(url), class, "{url}");
        }
        assert_eq!(
            open().check_url("http://[64:ff9b::808:808]"),
            Ok(Vouching::Unlisted),
            "NAT64 of a public address"
        );
    }

    #[test]
    fn odd_encodings_of_addresses_are_refused() {
        for url in [
            "http://2130706433/",
            "http://0x7f000001/",
            "http://0x7f.0.0.1/",
            "http://0177.0.0.1/",
            "http://127.1/",
            "http://127.0.1/",
            "http://127.000.000.001/",
            "http://017700000001/",
            "http://169.254.43518/",
            "http://0xa9fea9fe/",
            "http://127.0.0.%31/",
            "http://[fe80::1%25eth0]/",
            "http://1.2.3.4.5/",
        ] {
            assert!(
                matches!(
                    open().check_url(url),
                    Err(EndpointRefusal::Url(UrlProblem::OddAddress(_)))
                ),
                "{url}: {:?}",
                open().check_url(url)
            );
        }
    }

    #[test]
    fn odd_schemes_user_information_and_garbage_are_refused() {
        for (url, scheme) in [
            ("file:///etc/passwd", "file"),
            ("gopher://127.0.0.1:6379/_INFO", "gopher"),
            ("ftp://storage.example.com", "ftp"),
            ("ws://storage.example.com", "ws"),
            ("dict://127.0.0.1:11211/", "dict"),
            ("s3://bucket", "s3"),
            ("HTTPS+unix://x", "https+unix"),
        ] {
            assert_eq!(
                open().check_url(url),
                Err(EndpointRefusal::Url(UrlProblem::Scheme(scheme.to_owned()))),
                "{url}"
            );
        }
        for url in [
            "https://user:pass@storage.example.com",
            "https://storage.example.com@169.254.169.254/",
            "http://a@b",
        ] {
            assert_eq!(
                open().check_url(url),
                Err(EndpointRefusal::Url(UrlProblem::UserInfo)),
                "{url}"
            );
        }
        for url in [
            "",
            "minio:9000",
            "//storage.example.com",
            "javascript:alert(1)",
            "http://",
            "http://:80",
            "http://storage.example.com:",
            "http://storage.example.com:0",
            "http://storage.example.com:65536",
            "http://storage.example.com:80x",
            " http://storage.example.com",
            "http://storage example.com",
            "http://storage.example.com\\@evil.com",
            "http://stor\u{e4}ge.example.com",
            "http://::1/",
            "http://[::1",
        ] {
            assert_eq!(
                open().check_url(url),
                Err(EndpointRefusal::Url(UrlProblem::NotAUrl)),
                "{url:?}"
            );
        }
    }

    #[test]
    fn internal_names_are_refused_without_an_allow_list() {
        for host in [
            "localhost",
            "LOCALHOST.",
            "api.localhost",
            "minio",
            "kubernetes",
            "minio.velero.svc",
            "minio.velero.svc.cluster.local",
            "kubernetes.default.svc.cluster.local.",
            "cluster.local",
            "metadata.google.internal",
            "printer.local",
            "nas.home.arpa",
            "box.localdomain",
        ] {
            let url = format!("http://{host}:9000/");
            assert!(
                matches!(open().check_url(&url), Err(EndpointRefusal::Name { .. })),
                "{url}"
            );
        }
        for host in ["svc.example.com", "mylocalhost.com", "internal.example.org"] {
            assert_eq!(
                open().check_url(&format!("https://{host}")),
                Ok(Vouching::Unlisted),
                "{host}"
            );
        }
    }

    #[test]
    fn cluster_networks_are_refused() {
        let rules = rules(&[], &["34.118.224.0/20", "2600:1900::/44"]);
        assert!(matches!(
            rules.check_url("http://34.118.230.1"),
            Err(EndpointRefusal::Address {
                class: AddressClass::ClusterNetwork,
                ..
            })
        ));
        assert_eq!(
            rules.check_address(ip("2600:1900::5"), Vouching::Unlisted),
            Err(AddressClass::ClusterNetwork)
        );
        assert_eq!(
            rules.check_address(ip("34.118.240.1"), Vouching::Unlisted),
            Ok(())
        );
    }

    #[test]
    fn allow_list_entries_parse_and_match() {
        let rules = rules(
            &[
                "https://minio.example.com",
                "http://minio.velero.svc:9000/",
                "*.s3.amazonaws.com",
                "https://*.storage.example:8443",
                "10.40.0.0/16",
                "http://127.0.0.1:8085",
                "fd00:1::/64",
            ],
            &[],
        );
        let ok = [
            (
                "https://minio.example.com/bucket/key?sig=1",
                Vouching::ListedName,
            ),
            ("https://minio.example.com:443", Vouching::ListedName),
            ("http://minio.velero.svc:9000", Vouching::ListedName),
            ("https://bucket.s3.amazonaws.com", Vouching::ListedName),
            ("https://a.b.storage.example:8443", Vouching::ListedName),
            (
                "http://10.40.3.4:9000",
                Vouching::ListedAddress(ip("10.40.3.4")),
            ),
            (
                "https://10.40.3.4",
                Vouching::ListedAddress(ip("10.40.3.4")),
            ),
            (
                "http://127.0.0.1:8085/download",
                Vouching::ListedAddress(ip("127.0.0.1")),
            ),
            (
                "http://[fd00:1::9]",
                Vouching::ListedAddress(ip("fd00:1::9")),
            ),
        ];
        for (url, vouching) in ok {
            assert_eq!(rules.check_url(url), Ok(vouching), "{url}");
        }
        for url in [
            "http://minio.example.com",
            "https://minio.example.com:9000",
            "http://minio.velero.svc:9001",
            "https://s3.amazonaws.com",
            "http://bucket.s3.amazonaws.com",
            "https://storage.example:8443",
            "http://127.0.0.1:8086",
            "https://aws.amazon.com",
            "http://169.254.169.254",
        ] {
            assert_eq!(
                rules.check_url(url),
                Err(EndpointRefusal::NotListed),
                "{url}"
            );
        }
        // Syntax is checked before the list: a listed host with a password is still refused.
        assert_eq!(
            rules.check_url("https://u:p@minio.example.com"),
            Err(EndpointRefusal::Url(UrlProblem::UserInfo))
        );
    }

    #[test]
    fn bad_allow_list_entries_are_configuration_errors() {
        let parse = |entry: &str| StorageEndpoints::parse(&[entry.to_owned()], &[]).unwrap_err();
        assert!(parse("ftp://x.example.com").contains("only http and https"));
        assert!(parse("https://x.example.com/path").contains("path"));
        assert!(parse("minio.example.com:9000").contains("needs its scheme"));
        assert!(parse("10.0.0.0/33").contains("prefix length"));
        assert!(parse("https://*.10.0.0.1").contains("unusual notation"));
        assert!(parse("https://u@x.example.com").contains("user name"));
        let error =
            StorageEndpoints::parse(&[], &["10.96.0.0/12".into(), "nope".into()]).unwrap_err();
        assert!(
            error.starts_with("clusterNetworks[1] (\"nope\")"),
            "{error}"
        );
    }

    #[test]
    fn listed_names_may_resolve_to_private_but_never_to_loopback_or_metadata() {
        let rules = rules(
            &["http://minio.velero.svc:9000", "10.40.0.0/16"],
            &["10.96.0.0/12"],
        );
        let name = Vouching::ListedName;
        assert_eq!(rules.check_address(ip("10.96.0.15"), name), Ok(()));
        assert_eq!(rules.check_address(ip("192.168.7.7"), name), Ok(()));
        assert_eq!(rules.check_address(ip("100.64.1.1"), name), Ok(()));
        assert_eq!(
            rules.check_address(ip("127.0.0.1"), name),
            Err(AddressClass::Loopback)
        );
        assert_eq!(
            rules.check_address(ip("::ffff:169.254.169.254"), name),
            Err(AddressClass::CloudMetadata)
        );
        assert_eq!(
            rules.check_address(ip("0.0.0.0"), name),
            Err(AddressClass::Unspecified)
        );
        // Unlisted (a provider's public endpoint): nothing special at all.
        assert_eq!(
            rules.check_address(ip("10.96.0.15"), Vouching::Unlisted),
            Err(AddressClass::Private)
        );
        // A listed network is reachable whatever the vouching.
        assert_eq!(
            rules.check_address(ip("10.40.9.9"), Vouching::Unlisted),
            Ok(())
        );
        // A listed address is that address only.
        let listed = Vouching::ListedAddress(ip("127.0.0.1"));
        assert_eq!(rules.check_address(ip("127.0.0.1"), listed), Ok(()));
        assert_eq!(
            rules.check_address(ip("127.0.0.2"), listed),
            Err(AddressClass::Loopback)
        );
    }

    #[test]
    fn config_urls_cover_every_provider_key_and_url_like_values() {
        let config = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        };
        let keys = |provider: &str, pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            config_urls(provider, &config(pairs))
                .into_iter()
                .map(|url| (url.key, url.url))
                .collect()
        };
        assert_eq!(
            keys(
                "velero.io/aws",
                &[
                    ("s3Url", "minio:9000"),
                    ("publicUrl", ""),
                    ("region", "x"),
                    ("kmsKeyId", "arn:aws:kms:x")
                ]
            ),
            [("s3Url".into(), "minio:9000".into())]
        );
        assert_eq!(
            keys(
                "azure",
                &[
                    ("storageAccountURI", "https://sa.blob.core.windows.net"),
                    (
                        "activeDirectoryAuthorityURI",
                        "https://login.microsoftonline.com/"
                    ),
                    ("storageAccount", "sa")
                ]
            )
            .len(),
            2
        );
        assert_eq!(
            keys(
                "gcp",
                &[
                    ("storeEndpoint", "http://10.0.0.1"),
                    ("universeDomain", "example.com")
                ]
            ),
            [
                ("storeEndpoint".into(), "http://10.0.0.1".into()),
                (
                    "universeDomain".into(),
                    "https://storage.example.com".into()
                )
            ]
        );
        assert_eq!(
            keys(
                "example.com/custom",
                &[("endpoint", "gopher://x"), ("mode", "fast")]
            ),
            [("endpoint".into(), "gopher://x".into())]
        );
    }

    fn location(
        provider: &str,
        bucket: &str,
        config: &[(&str, &str)],
        tenant: bool,
    ) -> BackupStorageLocation {
        let config: serde_json::Map<String, serde_json::Value> = config
            .iter()
            .map(|(k, v)| ((*k).to_owned(), json!(v)))
            .collect();
        let mut location: BackupStorageLocation = serde_json::from_value(json!({
            "apiVersion": "velero.io/v1", "kind": "BackupStorageLocation",
            "metadata": {"name": "x", "namespace": "openshift-adp"},
            "spec": {"provider": provider, "objectStorage": {"bucket": bucket}, "config": config}
        }))
        .unwrap();
        if tenant {
            location.metadata.labels = Some(BTreeMap::from([(
                labels::NABSL_ORIGIN_NACUUID.to_owned(),
                "team-a-loc-1234".to_owned(),
            )]));
        }
        location
    }

    fn tenant(scope: FetchScope) -> TenantFetchScope {
        match scope {
            FetchScope::TenantLocation(scope) => scope,
            FetchScope::Trusted => panic!("expected a tenant scope"),
        }
    }

    #[test]
    fn admin_locations_are_trusted_and_tenant_locations_are_not() {
        let admin = location("aws", "velero", &[("region", "us-east-1")], false);
        assert_eq!(fetch_scope(Some(&admin), &open()), FetchScope::Trusted);
        let mine = location("aws", "velero", &[("region", "us-east-1")], true);
        assert!(matches!(
            fetch_scope(Some(&mine), &open()),
            FetchScope::TenantLocation(_)
        ));
        let mut annotated = location("aws", "velero", &[], false);
        annotated.metadata.annotations = Some(BTreeMap::from([(
            labels::NABSL_ORIGIN_NAMESPACE_ANNOTATION.to_owned(),
            "team-a".to_owned(),
        )]));
        assert!(is_tenant_location(&annotated));
        let gone = tenant(fetch_scope(None, &open()));
        assert!(gone.origins().is_empty());
        assert_eq!(
            gone.admit("https://s3.amazonaws.com/x"),
            Err(FetchRefusal::OutsideLocation)
        );
    }

    #[test]
    fn aws_tenant_scope_admits_only_its_own_endpoint() {
        let minio = location(
            "aws",
            "team-a",
            &[
                ("s3Url", "https://minio.example.com:9000"),
                ("publicUrl", "https://public.example.com"),
            ],
            true,
        );
        let scope = tenant(fetch_scope(Some(&minio), &open()));
        for url in [
            "https://minio.example.com:9000/team-a/k?X-Amz-Signature=1",
            "https://team-a.minio.example.com:9000/k",
            "https://public.example.com/team-a/k",
            "https://team-a.public.example.com/k",
        ] {
            assert!(scope.admit(url).is_ok(), "{url}");
        }
        for url in [
            "http://minio.example.com:9000/k",
            "https://minio.example.com/k",
            "https://other.example.com/k",
            "https://169.254.169.254/k",
            "https://team-b.minio.example.com:9000/k",
        ] {
            assert_eq!(
                scope.admit(url),
                Err(FetchRefusal::OutsideLocation),
                "{url}"
            );
        }
        let aws = tenant(fetch_scope(
            Some(&location("aws", "team-a", &[("region", "eu-west-1")], true)),
            &open(),
        ));
        assert!(
            aws.admit("https://team-a.s3.eu-west-1.amazonaws.com/k")
                .is_ok()
        );
        assert!(
            aws.admit("https://s3.eu-west-1.amazonaws.com/team-a/k")
                .is_ok()
        );
        assert!(aws.admit("https://ec2.eu-west-1.amazonaws.com/").is_err());
        let china = tenant(fetch_scope(
            Some(&location("aws", "b", &[("region", "cn-north-1")], true)),
            &open(),
        ));
        assert!(
            china
                .admit("https://b.s3.cn-north-1.amazonaws.com.cn/k")
                .is_ok()
        );
        let unknown_region = tenant(fetch_scope(Some(&location("aws", "b", &[], true)), &open()));
        assert!(
            unknown_region
                .admit("https://b.s3.us-east-2.amazonaws.com/k")
                .is_ok()
        );
    }

    #[test]
    fn a_refused_config_url_gives_no_origin() {
        let attack = location("aws", "b", &[("publicUrl", "http://169.254.169.254")], true);
        let scope = tenant(fetch_scope(Some(&attack), &open()));
        assert!(scope.origins().is_empty());
        assert_eq!(
            scope.admit("http://169.254.169.254/latest/meta-data/"),
            Err(FetchRefusal::OutsideLocation)
        );
    }

    #[test]
    fn azure_and_gcp_origins() {
        let azure = tenant(fetch_scope(
            Some(&location(
                "velero.io/azure",
                "c",
                &[("storageAccount", "SaOne")],
                true,
            )),
            &open(),
        ));
        assert!(
            azure
                .admit("https://saone.blob.core.windows.net/c/k?sv=1")
                .is_ok()
        );
        assert!(
            azure
                .admit("https://saone.z12.blob.storage.azure.net/c/k")
                .is_ok()
        );
        assert!(
            azure
                .admit("https://other.blob.core.windows.net/c/k")
                .is_err()
        );
        let custom = tenant(fetch_scope(
            Some(&location(
                "azure",
                "c",
                &[
                    ("storageAccount", "sa"),
                    ("storageAccountURI", "https://blob.corp.example"),
                ],
                true,
            )),
            &open(),
        ));
        assert!(custom.admit("https://blob.corp.example/c/k").is_ok());
        assert!(
            custom
                .admit("https://sa.blob.core.windows.net/c/k")
                .is_err()
        );
        let gcp = tenant(fetch_scope(Some(&location("gcp", "b", &[], true)), &open()));
        assert!(
            gcp.admit("https://storage.googleapis.com/b/k?X-Goog-Signature=1")
                .is_ok()
        );
        assert!(gcp.admit("https://metadata.google.internal/").is_err());
    }

    #[test]
    fn unknown_providers_use_the_administrators_exact_origins() {
        let local = location("nac.openshift.io/local", "b", &[], true);
        let none = tenant(fetch_scope(Some(&local), &open()));
        assert!(none.admit("http://127.0.0.1:8085/download/b/k").is_err());
        let listed = rules(&["http://127.0.0.1:8085", "*.example.com"], &[]);
        let scope = tenant(fetch_scope(Some(&local), &listed));
        assert_eq!(
            scope
                .admit("http://127.0.0.1:8085/download/b/k")
                .map(|a| a.vouching),
            Ok(Vouching::ListedAddress(ip("127.0.0.1")))
        );
        assert_eq!(
            scope.admit("http://127.0.0.1:8086/download/b/k"),
            Err(FetchRefusal::OutsideLocation)
        );
    }

    #[test]
    fn an_ip_origin_is_checked_at_admission() {
        // A location accepted while the allow-list named 10.1.2.3 keeps that as an origin only
        // while the list does.
        let located = location("aws", "b", &[("s3Url", "http://10.1.2.3:9000")], true);
        let listed = rules(&["http://10.1.2.3:9000"], &[]);
        let scope = tenant(fetch_scope(Some(&located), &listed));
        assert!(scope.admit("http://10.1.2.3:9000/b/k").is_ok());
        let scope = tenant(fetch_scope(Some(&located), &open()));
        assert_eq!(
            scope.admit("http://10.1.2.3:9000/b/k"),
            Err(FetchRefusal::OutsideLocation)
        );
    }

    #[test]
    fn refusals_read_well() {
        assert_eq!(
            open()
                .check_url("http://169.254.169.254")
                .unwrap_err()
                .to_string(),
            "169.254.169.254 is a cloud metadata endpoint"
        );
        assert_eq!(
            open()
                .check_url("http://minio.velero.svc:9000")
                .unwrap_err()
                .to_string(),
            "minio.velero.svc is a cluster-internal name"
        );
        assert_eq!(
            open().check_url("gopher://x").unwrap_err().to_string(),
            "it uses the scheme \"gopher\"; only http and https are allowed"
        );
        assert_eq!(
            open()
                .check_url("http://2130706433")
                .unwrap_err()
                .to_string(),
            "the host \"2130706433\" is an IP address in an unusual notation (write IPv4 addresses as four decimal numbers)"
        );
        assert!(!EndpointRefusal::Url(UrlProblem::NotAUrl).admin_can_allow());
        assert!(EndpointRefusal::NotListed.admin_can_allow());
    }
}
