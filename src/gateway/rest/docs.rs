//! The API documentation page, rendered by the gateway from its own OpenAPI document: plain
//! HTML and a little CSS, no script, no CDN, nothing downloaded at build or run time.

use std::fmt::Write;

use serde_json::Value;

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn text<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn schema_label(schema: &Value) -> String {
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
        let name = reference.rsplit('/').next().unwrap_or(reference);
        return format!("<a href=\"#schema-{0}\">{0}</a>", escape(name));
    }
    match schema.get("type") {
        Some(Value::String(t)) if t == "array" => {
            format!(
                "array of {}",
                schema.get("items").map(schema_label).unwrap_or_default()
            )
        }
        Some(Value::String(t)) => escape(t),
        Some(Value::Array(types)) => escape(
            &types
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(" | "),
        ),
        _ => "object".into(),
    }
}

/// The HTML page for `document` (an OpenAPI document as JSON).
pub fn render(document: &Value) -> String {
    let mut html = String::new();
    let title = escape(text(document, "/info/title"));
    let _ = write!(
        html,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title>\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<style>body{{font-family:system-ui,sans-serif;max-width:70rem;margin:2rem auto;padding:0 1rem;color:#1b1b1b}}\
code,pre{{font-family:ui-monospace,monospace;font-size:.9em}}pre{{background:#f4f4f4;padding:.6rem;overflow:auto}}\
.op{{border:1px solid #ddd;border-radius:6px;margin:.8rem 0;padding:.6rem .9rem}}\
.m{{display:inline-block;min-width:4.5rem;font-weight:700}}.get{{color:#0a6}}.post{{color:#06c}}.delete{{color:#c22}}.patch{{color:#a60}}\
table{{border-collapse:collapse}}td,th{{border-bottom:1px solid #eee;padding:.2rem .6rem;text-align:left;vertical-align:top}}</style></head><body>"
    );
    let _ = write!(
        html,
        "<h1>{title} <small>{}</small></h1><p>{}</p><p>Machine-readable: <a href=\"/openapi.json\">/openapi.json</a>. \
Authenticate with <code>Authorization: Bearer &lt;token&gt;</code>.</p>",
        escape(text(document, "/info/version")),
        escape(text(document, "/info/description"))
    );
    let mut by_tag: Vec<(String, Vec<String>)> = document
        .get("tags")
        .and_then(Value::as_array)
        .map(|tags| {
            tags.iter()
                .map(|t| (text(t, "/name").to_string(), Vec::new()))
                .collect()
        })
        .unwrap_or_default();
    html.push_str("<nav><ul>");
    for (tag, _) in &by_tag {
        let _ = write!(html, "<li><a href=\"#tag-{0}\">{0}</a></li>", escape(tag));
    }
    html.push_str("<li><a href=\"#schemas\">schemas</a></li></ul></nav>");
    if let Some(paths) = document.get("paths").and_then(Value::as_object) {
        for (path, item) in paths {
            let Some(operations) = item.as_object() else {
                continue;
            };
            for (method, operation) in operations {
                let mut block = String::new();
                let summary = text(operation, "/summary");
                let description = text(operation, "/description");
                let _ = write!(
                    block,
                    "<div class=\"op\"><span class=\"m {m}\">{M}</span><code>{p}</code><p><b>{s}</b></p>",
                    m = escape(method),
                    M = escape(&method.to_uppercase()),
                    p = escape(path),
                    s = escape(summary)
                );
                if !description.is_empty() && description != summary {
                    let _ = write!(block, "<p>{}</p>", escape(description));
                }
                if let Some(parameters) = operation.get("parameters").and_then(Value::as_array) {
                    block.push_str(
                        "<table><tr><th>parameter</th><th>in</th><th>type</th><th></th></tr>",
                    );
                    for parameter in parameters {
                        let _ = write!(
                            block,
                            "<tr><td><code>{}</code>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                            escape(text(parameter, "/name")),
                            if parameter.get("required") == Some(&Value::Bool(true)) {
                                " *"
                            } else {
                                ""
                            },
                            escape(text(parameter, "/in")),
                            parameter
                                .get("schema")
                                .map(schema_label)
                                .unwrap_or_default(),
                            escape(text(parameter, "/description"))
                        );
                    }
                    block.push_str("</table>");
                }
                if let Some(body) = operation
                    .pointer("/requestBody/content")
                    .and_then(Value::as_object)
                {
                    for (media, content) in body {
                        let _ = write!(
                            block,
                            "<p>Body <code>{}</code>: {}</p>",
                            escape(media),
                            content.get("schema").map(schema_label).unwrap_or_default()
                        );
                    }
                }
                if let Some(responses) = operation.get("responses").and_then(Value::as_object) {
                    block.push_str("<table><tr><th>status</th><th>meaning</th><th>body</th></tr>");
                    for (status, response) in responses {
                        let body = response
                            .get("content")
                            .and_then(Value::as_object)
                            .and_then(|c| c.values().next())
                            .and_then(|c| c.get("schema"))
                            .map(schema_label)
                            .unwrap_or_default();
                        let _ = write!(
                            block,
                            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                            escape(status),
                            escape(text(response, "/description")),
                            body
                        );
                    }
                    block.push_str("</table>");
                }
                block.push_str("</div>");
                let tag = operation
                    .pointer("/tags/0")
                    .and_then(Value::as_str)
                    .unwrap_or("other")
                    .to_string();
                match by_tag.iter_mut().find(|(name, _)| *name == tag) {
                    Some((_, blocks)) => blocks.push(block),
                    None => by_tag.push((tag, vec![block])),
                }
            }
        }
    }
    for (tag, blocks) in &by_tag {
        let _ = write!(html, "<h2 id=\"tag-{0}\">{0}</h2>", escape(tag));
        for block in blocks {
            html.push_str(block);
        }
    }
    html.push_str("<h2 id=\"schemas\">Schemas</h2>");
    if let Some(schemas) = document
        .pointer("/components/schemas")
        .and_then(Value::as_object)
    {
        for (name, schema) in schemas {
            let pretty = serde_json::to_string_pretty(schema).unwrap_or_default();
            let _ = write!(
                html,
                "<details id=\"schema-{0}\"><summary><code>{0}</code></summary><pre>{1}</pre></details>",
                escape(name),
                escape(&pretty)
            );
        }
    }
    html.push_str("</body></html>");
    html
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn renders_every_operation_and_escapes_text() {
        let document = serde_json::json!({
            "info": {"title": "T<script>", "version": "v1", "description": "d"},
            "tags": [{"name": "backups"}],
            "paths": {"/api/v1/x": {"get": {"tags": ["backups"], "summary": "List <x>",
                "responses": {"200": {"description": "ok"}}}}},
            "components": {"schemas": {"A": {"type": "object"}}}
        });
        let html = render(&document);
        assert!(html.contains("/api/v1/x"));
        assert!(html.contains("List &lt;x&gt;"));
        assert!(!html.contains("<script>"));
        assert!(html.contains("id=\"schema-A\""));
        assert!(
            !html.contains("http://") && !html.contains("https://"),
            "no external resources"
        );
    }
}
