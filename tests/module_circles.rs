//! No module circles in `src/`: for every module, no two of its child modules may name each
//! other's items, directly or round a longer loop (A → B → C → A), outside test code. A circle
//! means neither part can be understood, tested or moved without the other; DESIGN.md's layering
//! is the same rule one level up, and the top level is checked too.
//!
//! The top level also keeps DESIGN.md section 2's layering: each part uses only the parts it
//! lists (`top_level_parts_use_only_what_design_allows`).
//!
//! An edge A → B is any path in A's files (a `use` tree or an inline `crate::…`, `super::…`,
//! `self::…` path) that names something under B; `#[cfg(test)]` modules are left out. The
//! scan is lexical: comments, strings and character literals are skipped first.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Module = Vec<String>;

/// Every `.rs` file under `dir`, with its module path (`src/gateway/mod.rs` → `gateway`).
fn modules(root: &Path) -> BTreeMap<Module, PathBuf> {
    fn walk(dir: &Path, root: &Path, out: &mut BTreeMap<Module, PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, root, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let relative = path.strip_prefix(root).unwrap().with_extension("");
                let mut module: Module = relative
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                if module.last().is_some_and(|m| m == "mod") {
                    module.pop();
                }
                if module == ["lib"] || module == ["main"] {
                    module.clear();
                }
                out.insert(module, path);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// The source without comments, string and character literals (each replaced by a space).
fn code_only(source: &str) -> String {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c == 'r'
            && (next == Some('"') || next == Some('#'))
            && !chars[..i]
                .last()
                .is_some_and(|p| p.is_alphanumeric() || *p == '_')
        {
            // A raw string: r"…" or r#"…"#.
            let mut j = i + 1;
            let mut hashes = 0;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= chars.len() {
                    break;
                }
                if chars[j] == '"' && (0..hashes).all(|k| chars.get(j + 1 + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            out.push(' ');
            i = j;
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push(' ');
        } else if c == '\'' && next == Some('\\') {
            // An escaped character literal: '\n', '\'', '\u{..}'.
            i += 2;
            while i < chars.len() && chars[i] != '\'' {
                i += 1;
            }
            i += 1;
            out.push(' ');
        } else if c == '\'' && chars.get(i + 2) == Some(&'\'') {
            i += 3;
            out.push(' ');
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// `code` without its `#[cfg(test)]` modules.
fn without_test_modules(code: &str) -> String {
    let mut code = code.to_string();
    while let Some(start) = code.find("#[cfg(test)]") {
        let mut rest = code[start + "#[cfg(test)]".len()..].trim_start();
        // Further attributes, then `mod name {` (a test-only `use` or item is dropped alone).
        while rest.starts_with("#[") {
            let end = rest.find(']').unwrap();
            rest = rest[end + 1..].trim_start();
        }
        let offset = code.len() - rest.len();
        let item_is_module = rest.starts_with("mod ") || rest.starts_with("pub mod ");
        let open = if item_is_module {
            rest.find('{').map(|o| offset + o)
        } else {
            None
        };
        let end = match open {
            Some(open) => {
                let mut depth = 0;
                let mut end = open;
                for (k, ch) in code[open..].char_indices() {
                    match ch {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                end = open + k + 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                end
            }
            // Not a module: drop the attribute only (its item is one line of test code).
            None => offset + rest.find(['\n', ';']).unwrap_or(0),
        };
        code.replace_range(start..end, " ");
    }
    code
}

/// The paths a `use` tree body names (`gateway::{service::X, y}` → both), each from `prefix`.
fn expand_use(prefix: &[String], tree: &str, out: &mut Vec<Module>) {
    let tree = tree.trim();
    if let Some(inner) = tree.strip_prefix('{') {
        let inner = &inner[..inner.rfind('}').unwrap_or(inner.len())];
        let mut depth = 0;
        let mut part = String::new();
        for ch in inner.chars() {
            match ch {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand_use(prefix, &part, out);
                    part.clear();
                    continue;
                }
                _ => {}
            }
            part.push(ch);
        }
        expand_use(prefix, &part, out);
        return;
    }
    if tree.is_empty() {
        return;
    }
    match tree.split_once("::") {
        Some((head, rest)) => {
            let mut next = prefix.to_vec();
            next.push(head.trim().to_string());
            expand_use(&next, rest, out);
        }
        None => {
            let mut path = prefix.to_vec();
            let name = tree.split_whitespace().next().unwrap_or_default();
            if name != "self" && name != "*" {
                path.push(name.to_string());
            }
            out.push(path);
        }
    }
}

/// Every path starting at `crate`, `super` or `self` in `code`.
fn paths(code: &str) -> Vec<Module> {
    let mut out = Vec::new();
    for statement in code.split(';') {
        let statement = statement.trim_start();
        let body = statement
            .strip_prefix("pub use ")
            .or_else(|| statement.strip_prefix("pub(crate) use "))
            .or_else(|| statement.strip_prefix("use "));
        if let Some(body) = body {
            expand_use(&[], body, &mut out);
        }
    }
    let bytes = code.as_bytes();
    for start in ["crate::", "super::", "self::"] {
        let mut from = 0;
        while let Some(found) = code[from..].find(start) {
            let at = from + found;
            from = at + start.len();
            if at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_') {
                continue;
            }
            let chain: String = code[at..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':' || c.is_whitespace())
                .collect();
            out.push(
                chain
                    .split("::")
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect(),
            );
        }
    }
    out
}

/// The module a path from `module` lands in (the deepest existing one).
fn resolve(module: &Module, path: &Module, known: &BTreeMap<Module, PathBuf>) -> Module {
    let mut full: Module = Vec::new();
    let mut rest = path.as_slice();
    match rest.first().map(String::as_str) {
        Some("crate") => rest = &rest[1..],
        Some("super" | "self") => {
            full = module.clone();
            while let Some(first) = rest.first() {
                match first.as_str() {
                    "super" => {
                        full.pop();
                    }
                    "self" => {}
                    _ => break,
                }
                rest = &rest[1..];
            }
        }
        _ => return Vec::new(),
    }
    full.extend(rest.iter().cloned());
    (0..=full.len())
        .rev()
        .map(|k| full[..k].to_vec())
        .find(|candidate| known.contains_key(candidate))
        .unwrap_or_default()
}

/// Strongly connected sets of more than one node (Tarjan).
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        next: usize,
        found: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        s.index.insert(v, s.next);
        s.low.insert(v, s.next);
        s.next += 1;
        s.stack.push(v);
        s.on_stack.insert(v);
        if let Some(targets) = s.graph.get(v) {
            for w in targets {
                if !s.index.contains_key(w.as_str()) {
                    visit(s, w);
                    let low = s.low[v].min(s.low[w.as_str()]);
                    s.low.insert(v, low);
                } else if s.on_stack.contains(w.as_str()) {
                    let low = s.low[v].min(s.index[w.as_str()]);
                    s.low.insert(v, low);
                }
            }
        }
        if s.low[v] == s.index[v] {
            let mut set = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                set.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if set.len() > 1 {
                set.sort();
                s.found.push(set);
            }
        }
    }
    let mut state = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !state.index.contains_key(v.as_str()) {
            visit(&mut state, v);
        }
    }
    state.found
}

/// Every module's edges to other modules.
fn edges(root: &Path) -> BTreeSet<(Module, Module)> {
    let known = modules(root);
    let mut edges = BTreeSet::new();
    for (module, file) in &known {
        let code = without_test_modules(&code_only(&std::fs::read_to_string(file).unwrap()));
        for path in paths(&code) {
            let target = resolve(module, &path, &known);
            if &target != module {
                edges.insert((module.clone(), target));
            }
        }
    }
    edges
}

/// The circles among each module's children, as `parent: a <-> b <-> c`.
fn all_circles(edges: &BTreeSet<(Module, Module)>) -> Vec<String> {
    let parents: BTreeSet<Module> = edges
        .iter()
        .flat_map(|(a, b)| [a.clone(), b.clone()])
        .filter(|m| !m.is_empty())
        .map(|m| m[..m.len() - 1].to_vec())
        .collect();
    let mut found = Vec::new();
    for parent in parents {
        let depth = parent.len();
        let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (a, b) in edges {
            let under = |m: &Module| m.len() > depth && m[..depth] == parent[..];
            if under(a) && under(b) && a[depth] != b[depth] {
                graph
                    .entry(a[depth].clone())
                    .or_default()
                    .insert(b[depth].clone());
            }
        }
        for set in circles(&graph) {
            let name = if parent.is_empty() {
                "crate".to_string()
            } else {
                parent.join("::")
            };
            found.push(format!("{name}: {}", set.join(" <-> ")));
        }
    }
    found
}

#[test]
fn the_scan_finds_a_circle_and_ignores_comments_strings_and_tests() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir_all(src.join("part")).unwrap();
    std::fs::write(src.join("lib.rs"), "pub mod part;\n").unwrap();
    std::fs::write(
        src.join("part/mod.rs"),
        "pub mod a;\npub mod b;\npub mod c;\n",
    )
    .unwrap();
    std::fs::write(
        src.join("part/a.rs"),
        "use super::{b::Thing, c};\n// use crate::part::c::Other;\n",
    )
    .unwrap();
    std::fs::write(
        src.join("part/b.rs"),
        "pub struct Thing;\nconst S: &str = \"crate::part::a::X\";\n#[cfg(test)]\nmod tests { use crate::part::a; }\n",
    )
    .unwrap();
    std::fs::write(src.join("part/c.rs"), "fn f() { crate::part::a::g(); }\n").unwrap();
    assert_eq!(all_circles(&edges(src)), ["part: a <-> c"]);
}

/// `NAC_MODULE_CIRCLES_SRC` points the check at another tree's `src/` (to measure an older
/// checkout); by default, this one's.
#[test]
fn src_has_no_module_circles() {
    let src = std::env::var_os("NAC_MODULE_CIRCLES_SRC")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    let edges = edges(&src);
    assert!(
        edges.len() > 100,
        "the scan found only {} edges",
        edges.len()
    );
    let found = all_circles(&edges);
    assert!(
        found.is_empty(),
        "module circles in src/ (break each by moving what both sides need into a leaf module, \
         or by passing values instead of calling back):\n{}",
        found.join("\n")
    );
}

/// DESIGN.md section 2, "which part may use which", plus the three leaves it leaves unnamed:
/// `queue` (uses `api`), `shutdown` (the process-wide stop signal, uses nothing) and `client`
/// (the gateway's REST client behind the CLI, uses `api`). `cli` wires everything together.
const ALLOWED_PARTS: &[(&str, &[&str])] = &[
    ("api", &[]),
    ("policy", &["api"]),
    ("queue", &["api"]),
    ("shutdown", &[]),
    ("client", &["api"]),
    ("manifest", &["api", "policy"]),
    ("history", &["api", "manifest"]),
    (
        "controllers",
        &["api", "policy", "queue", "manifest", "shutdown"],
    ),
    (
        "gateway",
        &["api", "policy", "queue", "history", "manifest", "shutdown"],
    ),
    ("sim", &["api", "manifest"]),
];

/// The top-level edges DESIGN does not allow, as `from -> to`.
fn layering_breaches(edges: &BTreeSet<(Module, Module)>) -> Vec<String> {
    let mut found = BTreeSet::new();
    for (from, to) in edges {
        let (Some(from), Some(to)) = (from.first(), to.first()) else {
            continue; // lib.rs and main.rs wire the parts together
        };
        if from == to || from == "cli" {
            continue;
        }
        let allowed = ALLOWED_PARTS
            .iter()
            .find(|(part, _)| part == from)
            .map(|(_, uses)| uses.contains(&to.as_str()));
        match allowed {
            Some(true) => {}
            Some(false) => {
                found.insert(format!("{from} -> {to}"));
            }
            None => {
                found.insert(format!("{from} (a part DESIGN does not place) -> {to}"));
            }
        }
    }
    found.into_iter().collect()
}

#[test]
fn the_layering_check_names_a_part_using_what_it_may_not() {
    let edge = |a: &str, b: &str| -> (Module, Module) {
        (
            a.split("::").map(String::from).collect(),
            b.split("::").map(String::from).collect(),
        )
    };
    let edges = BTreeSet::from([
        edge("history::manifests", "policy::origin"),
        edge("gateway::rest", "history::store"),
        edge("cli::serve", "sim::demo"),
        edge("config", "api"),
    ]);
    assert_eq!(
        layering_breaches(&edges),
        [
            "config (a part DESIGN does not place) -> api",
            "history -> policy"
        ]
    );
}

/// `NAC_MODULE_CIRCLES_SRC` as above.
#[test]
fn top_level_parts_use_only_what_design_allows() {
    let src = std::env::var_os("NAC_MODULE_CIRCLES_SRC")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    let found = layering_breaches(&edges(&src));
    assert!(
        found.is_empty(),
        "parts of src/ using what DESIGN.md section 2 does not let them (move what both need \
         into the lower part, usually `api`):\n{}",
        found.join("\n")
    );
}
