//! Request metrics in the Prometheus text format: a latency histogram per (method, matched
//! route template, status class) — all label values come from a fixed set, never from the
//! request (an unknown path is counted under the route `unmatched`).

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::time::Duration;

/// Upper bounds of the latency buckets, in seconds.
pub const BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

#[derive(Clone, Debug, Default)]
struct Histogram {
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

impl Histogram {
    fn observe(&mut self, seconds: f64) {
        if self.counts.is_empty() {
            self.counts = vec![0; BUCKETS.len()];
        }
        for (index, bound) in BUCKETS.iter().enumerate() {
            if seconds <= *bound
                && let Some(count) = self.counts.get_mut(index)
            {
                *count += 1;
            }
        }
        self.sum += seconds;
        self.count += 1;
    }
}

/// The status class label of a status code.
pub fn status_class(status: u16) -> &'static str {
    match status {
        100..=199 => "1xx",
        200..=299 => "2xx",
        300..=399 => "3xx",
        400..=499 => "4xx",
        _ => "5xx",
    }
}

/// A method label from a fixed set.
pub fn method_label(method: &http::Method) -> &'static str {
    match *method {
        http::Method::GET => "GET",
        http::Method::POST => "POST",
        http::Method::PUT => "PUT",
        http::Method::PATCH => "PATCH",
        http::Method::DELETE => "DELETE",
        http::Method::HEAD => "HEAD",
        http::Method::OPTIONS => "OPTIONS",
        _ => "OTHER",
    }
}

type SeriesKey = (&'static str, String, &'static str);

/// Request latency histograms.
#[derive(Debug, Default)]
pub struct RequestMetrics {
    series: Mutex<BTreeMap<SeriesKey, Histogram>>,
}

impl RequestMetrics {
    /// Records one request. `route` must be a route template of the router or `unmatched`.
    pub fn observe(&self, method: &'static str, route: &str, status: u16, elapsed: Duration) {
        if let Ok(mut series) = self.series.lock() {
            series
                .entry((method, route.to_string(), status_class(status)))
                .or_default()
                .observe(elapsed.as_secs_f64());
        }
    }

    /// Appends the histograms in the Prometheus text format.
    pub fn render(&self, out: &mut String) {
        let Ok(series) = self.series.lock() else {
            return;
        };
        out.push_str(
            "# HELP nac_gateway_request_duration_seconds Gateway request latency by method, route template and status class.\n",
        );
        out.push_str("# TYPE nac_gateway_request_duration_seconds histogram\n");
        for ((method, route, class), histogram) in series.iter() {
            let labels = format!("method=\"{method}\",route=\"{route}\",status=\"{class}\"");
            for (bound, count) in BUCKETS.iter().zip(&histogram.counts) {
                let _ = writeln!(
                    out,
                    "nac_gateway_request_duration_seconds_bucket{{{labels},le=\"{bound}\"}} {count}"
                );
            }
            let _ = writeln!(
                out,
                "nac_gateway_request_duration_seconds_bucket{{{labels},le=\"+Inf\"}} {}",
                histogram.count
            );
            let _ = writeln!(
                out,
                "nac_gateway_request_duration_seconds_sum{{{labels}}} {}",
                histogram.sum
            );
            let _ = writeln!(
                out,
                "nac_gateway_request_duration_seconds_count{{{labels}}} {}",
                histogram.count
            );
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_are_cumulative() {
        let metrics = RequestMetrics::default();
        metrics.observe("GET", "/api/v1/namespaces", 200, Duration::from_millis(3));
        metrics.observe("GET", "/api/v1/namespaces", 204, Duration::from_millis(30));
        metrics.observe("GET", "/api/v1/namespaces", 404, Duration::from_millis(1));
        let mut out = String::new();
        metrics.render(&mut out);
        assert!(out.contains(
            "nac_gateway_request_duration_seconds_bucket{method=\"GET\",route=\"/api/v1/namespaces\",status=\"2xx\",le=\"0.005\"} 1"
        ));
        assert!(out.contains(
            "nac_gateway_request_duration_seconds_bucket{method=\"GET\",route=\"/api/v1/namespaces\",status=\"2xx\",le=\"0.05\"} 2"
        ));
        assert!(out.contains(
            "nac_gateway_request_duration_seconds_count{method=\"GET\",route=\"/api/v1/namespaces\",status=\"4xx\"} 1"
        ));
    }

    #[test]
    fn classes_and_methods_are_bounded() {
        assert_eq!(status_class(201), "2xx");
        assert_eq!(status_class(503), "5xx");
        assert_eq!(status_class(999), "5xx");
        assert_eq!(
            method_label(&http::Method::from_bytes(b"BREW").unwrap()),
            "OTHER"
        );
    }
}
