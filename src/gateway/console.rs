//! The web console: the single-page app built into `web/dist` (`cd web && npm ci && npm run
//! build`), embedded in the binary with rust-embed (debug builds read the folder at run time).
//!
//! - `GET /` → `index.html`; `GET /assets/…` → the file, cached for a year (Vite names them by
//!   content hash); other files at the top of `web/dist` (a favicon) → the file, revalidated;
//! - any other GET whose path is not the API's (`/api/`, `/graphql`, `/openapi.json`, `/docs`,
//!   `/healthz`, `/readyz`, `/metrics`) and whose `Accept` names `text/html` → `index.html`
//!   (the app's own routes, such as `/ns/team-a/backups/x`), revalidated;
//! - everything else stays the API's problem+json 404.
//!
//! Every console answer carries a strict Content-Security-Policy (nothing from elsewhere, no
//! framing), `X-Content-Type-Options: nosniff` and `Referrer-Policy: no-referrer`. When the
//! console was not built, `/` answers a small page saying how to build it. Text files (the
//! scripts and styles are about 2 MB) go gzip-compressed to browsers that accept it, each
//! compressed once and kept.

use std::collections::HashMap;
use std::io::Write;
use std::sync::{Arc, LazyLock, Mutex};

use axum::body::Body;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// The console's Content-Security-Policy.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; font-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";
/// Caching of content-hashed assets.
pub const IMMUTABLE: &str = "public, max-age=31536000, immutable";
/// Caching of `index.html` and unhashed files.
pub const REVALIDATE: &str = "no-cache";

/// Paths that belong to the API, never to the console (each with everything under it).
const API_PREFIXES: &[&str] = &[
    "/api",
    "/graphql",
    "/openapi.json",
    "/docs",
    "/healthz",
    "/readyz",
    "/metrics",
];

#[derive(rust_embed::RustEmbed)]
#[folder = "web/dist"]
#[allow_missing = true]
struct Dist;

/// What a request gets from the console.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConsoleAnswer {
    /// `index.html`.
    Index,
    /// The file at this path inside `web/dist`, if it is there (else the API's 404).
    File(String),
    /// Not the console's: the API answers (404 problem+json).
    NotConsole,
}

/// Whether `path` is the API's (`/api`, `/api/…`, `/graphql`, …).
pub fn is_api_path(path: &str) -> bool {
    API_PREFIXES.iter().any(|prefix| {
        path.strip_prefix(prefix)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    })
}

/// Whether an `Accept` header names `text/html` (as browsers' navigations do).
pub fn accepts_html(accept: Option<&str>) -> bool {
    accept.is_some_and(|accept| {
        accept.split(',').any(|item| {
            let mut parts = item.split(';');
            let media = parts.next().unwrap_or_default().trim();
            let refused = parts.any(|p| {
                p.trim()
                    .strip_prefix("q=")
                    .and_then(|q| q.trim().parse::<f32>().ok())
                    .is_some_and(|q| q <= 0.0)
            });
            media.eq_ignore_ascii_case("text/html") && !refused
        })
    })
}

/// What the console answers to `method` on `path` with `accept` (the single-page-app
/// fallback decision).
pub fn decide(method: &Method, path: &str, accept: Option<&str>) -> ConsoleAnswer {
    if method != Method::GET && method != Method::HEAD {
        return ConsoleAnswer::NotConsole;
    }
    if path == "/" || path == "/index.html" {
        return ConsoleAnswer::Index;
    }
    if is_api_path(path) || path.contains("/..") || path.contains('\\') || path.contains("//") {
        return ConsoleAnswer::NotConsole;
    }
    let relative = path.trim_start_matches('/');
    if relative.starts_with("assets/") {
        return ConsoleAnswer::File(relative.to_string());
    }
    // A file at the top of the build (favicon.ico, robots.txt …).
    if !relative.contains('/') && relative.contains('.') {
        return ConsoleAnswer::File(relative.to_string());
    }
    if accepts_html(accept) {
        ConsoleAnswer::Index
    } else {
        ConsoleAnswer::NotConsole
    }
}

/// The `Content-Type` of a console file, by its extension.
pub fn content_type(path: &str) -> &'static str {
    let extension = path
        .rsplit_once('.')
        .map(|(_, ext)| ext.to_ascii_lowercase())
        .unwrap_or_default();
    match extension.as_str() {
        "html" | "htm" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" | "map" => "application/json",
        "webmanifest" => "application/manifest+json",
        "txt" => "text/plain; charset=utf-8",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "avif" => "image/avif",
        "ico" => "image/x-icon",
        "woff" => "font/woff",
        "woff2" => "font/woff2",
        "ttf" => "font/ttf",
        "otf" => "font/otf",
        "eot" => "application/vnd.ms-fontobject",
        "wasm" => "application/wasm",
        _ => "application/octet-stream",
    }
}

/// Whether the console was built (there is a `web/dist/index.html`).
pub fn is_built() -> bool {
    Dist::get("index.html").is_some()
}

/// The page `/` answers when `web/dist` was not built.
pub const NOT_BUILT: &str = r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>NAC console not built</title>
<style>body{font-family:sans-serif;margin:2rem;max-width:46rem;line-height:1.5}code,pre{background:#f4f4f4;padding:.1rem .3rem}pre{padding:.6rem}</style>
</head><body>
<h1>The NAC web console is not built</h1>
<p>This gateway was built without the console's files (<code>web/dist</code>). Build them, then rebuild and restart the gateway:</p>
<pre>cd web &amp;&amp; npm ci &amp;&amp; npm run build</pre>
<p>Release builds embed <code>web/dist</code> when they are compiled; debug builds read it at run time.</p>
<p>The API works without the console: <a href="/docs">REST API documentation</a>, <a href="/graphql">GraphQL</a>.</p>
</body></html>
"#;

fn with_headers(mut response: Response, cache: &'static str) -> Response {
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    response
}

/// Whether an `Accept-Encoding` header accepts gzip (named, or `*`, with a non-zero q).
pub fn accepts_gzip(accept_encoding: Option<&str>) -> bool {
    accept_encoding.is_some_and(|value| {
        value.split(',').any(|item| {
            let mut parts = item.split(';').map(str::trim);
            let coding = parts.next().unwrap_or_default().to_ascii_lowercase();
            let quality_zero = parts.any(|param| {
                param
                    .strip_prefix("q=")
                    .and_then(|q| q.parse::<f32>().ok())
                    .is_some_and(|q| q <= 0.0)
            });
            (coding == "gzip" || coding == "*") && !quality_zero
        })
    })
}

/// Whether a content type is worth compressing (text; fonts and images are compressed already).
pub fn compressible(content_type: &str) -> bool {
    content_type.starts_with("text/")
        || content_type.starts_with("application/json")
        || content_type.starts_with("application/manifest+json")
        || content_type.starts_with("image/svg+xml")
}

/// Gzipped files by the SHA-256 of their content.
type GzipCache = Mutex<HashMap<[u8; 32], Arc<Vec<u8>>>>;

/// Gzipped console files, compressed on first request.
static GZIPPED: LazyLock<GzipCache> = LazyLock::new(|| Mutex::new(HashMap::new()));

fn gzipped(hash: [u8; 32], data: &[u8]) -> Option<Arc<Vec<u8>>> {
    if let Some(done) = GZIPPED.lock().ok()?.get(&hash) {
        return Some(done.clone());
    }
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    encoder.write_all(data).ok()?;
    let compressed = Arc::new(encoder.finish().ok()?);
    GZIPPED.lock().ok()?.insert(hash, compressed.clone());
    Some(compressed)
}

fn file_response(
    file: rust_embed::EmbeddedFile,
    content_type: &'static str,
    cache: &'static str,
    gzip: bool,
) -> Response {
    let compressed = (gzip && compressible(content_type))
        .then(|| gzipped(file.metadata.sha256_hash(), &file.data))
        .flatten();
    let mut response = match &compressed {
        Some(bytes) => Body::from(bytes.as_ref().clone()).into_response(),
        None => Body::from(file.data).into_response(),
    };
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    if compressible(content_type) {
        headers.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    }
    if compressed.is_some() {
        headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    }
    with_headers(response, cache)
}

/// `index.html` (gzipped when `gzip`), or the not-built page.
pub fn index(gzip: bool) -> Response {
    match Dist::get("index.html") {
        Some(file) => file_response(file, "text/html; charset=utf-8", REVALIDATE, gzip),
        None => {
            let mut response = (StatusCode::OK, NOT_BUILT).into_response();
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/html; charset=utf-8"),
            );
            with_headers(response, REVALIDATE)
        }
    }
}

/// The console's answer to `method` on `path` with `accept`, or `None` when it is not the
/// console's (the API then answers 404); gzipped where `accept_encoding` allows.
pub fn serve(
    method: &Method,
    path: &str,
    accept: Option<&str>,
    accept_encoding: Option<&str>,
) -> Option<Response> {
    let gzip = accepts_gzip(accept_encoding);
    match decide(method, path, accept) {
        ConsoleAnswer::Index => Some(index(gzip)),
        ConsoleAnswer::File(path) => {
            let file = Dist::get(&path)?;
            let cache = if path.starts_with("assets/") {
                IMMUTABLE
            } else {
                REVALIDATE
            };
            Some(file_response(file, content_type(&path), cache, gzip))
        }
        ConsoleAnswer::NotConsole => None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    const HTML: Option<&str> = Some("text/html,application/xhtml+xml,*/*;q=0.8");

    #[test]
    fn gzip_is_used_only_when_accepted_and_worth_it() {
        assert!(accepts_gzip(Some("gzip, deflate, br, zstd")));
        assert!(accepts_gzip(Some("br;q=1.0, gzip;q=0.8")));
        assert!(accepts_gzip(Some("*")));
        assert!(!accepts_gzip(Some("gzip;q=0, br")));
        assert!(!accepts_gzip(Some("identity")));
        assert!(!accepts_gzip(Some("x-gzip-ish")));
        assert!(!accepts_gzip(None));
        assert!(compressible(content_type("assets/index-abc.js")));
        assert!(compressible(content_type("assets/index-abc.css")));
        assert!(compressible(content_type("index.html")));
        assert!(compressible(content_type("assets/x.svg")));
        assert!(!compressible(content_type("assets/font.woff2")));
        assert!(!compressible(content_type("assets/logo.png")));
    }

    #[test]
    fn gzipped_files_decompress_to_the_original_and_are_kept() {
        use std::io::Read;
        let data = b"body { color: red; }\n".repeat(500);
        let first = gzipped([7; 32], &data).unwrap();
        assert!(first.len() < data.len() / 10);
        let mut decoded = Vec::new();
        flate2::read::GzDecoder::new(first.as_slice())
            .read_to_end(&mut decoded)
            .unwrap();
        assert_eq!(decoded, data);
        assert!(Arc::ptr_eq(&first, &gzipped([7; 32], b"other").unwrap()));
    }

    #[test]
    fn api_paths_are_never_the_consoles() {
        for path in [
            "/api",
            "/api/v1/nope",
            "/graphql",
            "/openapi.json",
            "/docs",
            "/docs/x",
            "/healthz",
            "/readyz",
            "/metrics",
        ] {
            assert!(is_api_path(path), "{path}");
            assert_eq!(
                decide(&Method::GET, path, HTML),
                ConsoleAnswer::NotConsole,
                "{path}"
            );
        }
        for path in ["/apis-are-fun", "/ns/team-a", "/documentation", "/metricsx"] {
            assert!(!is_api_path(path), "{path}");
        }
    }

    #[test]
    fn spa_routes_get_the_index_only_when_html_is_wanted() {
        assert_eq!(decide(&Method::GET, "/", None), ConsoleAnswer::Index);
        assert_eq!(
            decide(&Method::HEAD, "/ns/team-a/backups/x", HTML),
            ConsoleAnswer::Index
        );
        assert_eq!(
            decide(&Method::GET, "/ns/team-a/backups", Some("application/json")),
            ConsoleAnswer::NotConsole
        );
        assert_eq!(
            decide(&Method::GET, "/ns/team-a/backups", None),
            ConsoleAnswer::NotConsole
        );
        assert_eq!(
            decide(&Method::POST, "/ns/team-a/backups", HTML),
            ConsoleAnswer::NotConsole
        );
        assert_eq!(
            decide(&Method::GET, "/ns/x", Some("text/html;q=0")),
            ConsoleAnswer::NotConsole
        );
    }

    #[test]
    fn files_are_looked_up_only_inside_the_build() {
        assert_eq!(
            decide(&Method::GET, "/assets/index-abc.js", None),
            ConsoleAnswer::File("assets/index-abc.js".into())
        );
        assert_eq!(
            decide(&Method::GET, "/favicon.svg", None),
            ConsoleAnswer::File("favicon.svg".into())
        );
        for path in ["/assets/../../Cargo.toml", "/assets//x", "/assets\\x"] {
            assert_eq!(
                decide(&Method::GET, path, HTML),
                ConsoleAnswer::NotConsole,
                "{path}"
            );
        }
    }

    #[test]
    fn accept_parsing() {
        assert!(accepts_html(Some("text/html")));
        assert!(accepts_html(Some("application/json, TEXT/HTML;q=0.9")));
        assert!(!accepts_html(Some("*/*")));
        assert!(!accepts_html(Some("text/html;q=0.0")));
        assert!(!accepts_html(None));
    }

    #[test]
    fn content_types() {
        assert_eq!(
            content_type("assets/a.JS"),
            "text/javascript; charset=utf-8"
        );
        assert_eq!(content_type("assets/a.css"), "text/css; charset=utf-8");
        assert_eq!(content_type("assets/pf.woff2"), "font/woff2");
        assert_eq!(content_type("assets/logo.svg"), "image/svg+xml");
        assert_eq!(content_type("noext"), "application/octet-stream");
    }

    #[test]
    fn the_index_carries_the_security_headers() {
        let gzipped = index(true);
        if is_built() {
            assert_eq!(gzipped.headers()[header::CONTENT_ENCODING], "gzip");
            assert_eq!(gzipped.headers()[header::VARY], "accept-encoding");
        }
        assert_eq!(
            gzipped.headers()[header::CONTENT_SECURITY_POLICY],
            CONTENT_SECURITY_POLICY
        );
        let response = index(false);
        assert!(response.headers().get(header::CONTENT_ENCODING).is_none());
        assert_eq!(response.status(), StatusCode::OK);
        let headers = response.headers();
        assert_eq!(
            headers[header::CONTENT_SECURITY_POLICY],
            CONTENT_SECURITY_POLICY
        );
        assert_eq!(headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
        assert_eq!(headers[header::REFERRER_POLICY], "no-referrer");
        assert_eq!(headers[header::CACHE_CONTROL], REVALIDATE);
        assert!(
            headers[header::CONTENT_TYPE]
                .to_str()
                .unwrap()
                .starts_with("text/html")
        );
    }

    #[test]
    fn the_not_built_page_says_how_and_loads_nothing() {
        assert!(NOT_BUILT.contains("npm ci &amp;&amp; npm run build"));
        assert!(!NOT_BUILT.contains("<script") && !NOT_BUILT.contains("http"));
    }
}
