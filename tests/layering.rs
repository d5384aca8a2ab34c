//! Dependencies run one way (DESIGN.md §2): no module of `starweaver` or `starweaver-py`
//! may import, directly or through others, a module that imports it.
//!
//! The test reads both crates' sources and builds their module graphs from what the code
//! names: `use crate::…`, `use super::…`, `use self::…`, `use child::…`, and `crate::…`,
//! `super::…`, `self::…` paths anywhere else (macro arguments included; comments and
//! strings are not code). Each file is one node. Two rules decide the edges:
//!
//! - A parent depends on each child it declares (`mod child;`): it re-exports or uses it.
//!   So a parent's `pub use child::X` is no upward import, and a name reached through a
//!   re-export (`crate::tool::ToolError`, re-exported from `tool::error`) is an edge to the
//!   module that defines it, not to the one that re-exports it.
//! - A child naming its parent's *own* items (`super::AgentInner`, defined in
//!   `agent/mod.rs`) depends on the parent, which makes a cycle with the rule above: a
//!   module never imports one above it, its parent included.
//!
//! Inline modules (`mod tests { … }`) count as their file, with `super` resolved from the
//! inline module. A failure names each cycle, e.g. `agent → session → agent`.
// Test code: helpers outside `#[test]` fns unwrap and index too; a panic fails the test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

type ModPath = Vec<String>;

/// A token of Rust source, as much as the graph needs: identifiers, `::` and single
/// punctuation; literals, lifetimes and comments are dropped.
#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String),
    PathSep,
    Punct(char),
}

fn tokenize(source: &str) -> Vec<Token> {
    let chars: Vec<char> = source.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c.is_whitespace() {
            i += 1;
        } else if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            // Block comments nest in Rust.
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
        } else if c == '"' {
            i = skip_string(&chars, i + 1);
        } else if (c == 'r' || c == 'b' || c == 'c') && raw_string_start(&chars, i).is_some() {
            let (hashes, body) = raw_string_start(&chars, i).unwrap_or_default();
            i = skip_raw_string(&chars, body, hashes);
        } else if (c == 'b' || c == 'c') && next == Some('"') {
            i = skip_string(&chars, i + 2);
        } else if c == '\'' || (c == 'b' && next == Some('\'')) {
            i = skip_char_or_lifetime(&chars, if c == 'b' { i + 1 } else { i });
        } else if c.is_alphabetic() || c == '_' {
            if c == 'r' && next == Some('#') {
                i += 2; // a raw identifier, `r#type`
            }
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            tokens.push(Token::Ident(word));
        } else if c.is_ascii_digit() {
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_' || chars[i] == '.') {
                // `0..n` is a range, not a number.
                if chars[i] == '.' && chars.get(i + 1) == Some(&'.') {
                    break;
                }
                i += 1;
            }
        } else if c == ':' && next == Some(':') {
            tokens.push(Token::PathSep);
            i += 2;
        } else {
            tokens.push(Token::Punct(c));
            i += 1;
        }
    }
    tokens
}

/// Past the closing quote of a string whose body starts at `i`.
fn skip_string(chars: &[char], mut i: usize) -> usize {
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            '"' => return i + 1,
            _ => i += 1,
        }
    }
    i
}

/// `r"`, `r#"`, `br"`, `cr#"`…: the number of `#` and where the body starts.
fn raw_string_start(chars: &[char], i: usize) -> Option<(usize, usize)> {
    if i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_') {
        return None;
    }
    let mut j = i;
    if chars[j] == 'b' || chars[j] == 'c' {
        j += 1;
    }
    if chars.get(j) != Some(&'r') {
        return None;
    }
    j += 1;
    let mut hashes = 0;
    while chars.get(j) == Some(&'#') {
        hashes += 1;
        j += 1;
    }
    (chars.get(j) == Some(&'"')).then_some((hashes, j + 1))
}

fn skip_raw_string(chars: &[char], mut i: usize, hashes: usize) -> usize {
    while i < chars.len() {
        if chars[i] == '"' && (1..=hashes).all(|k| chars.get(i + k) == Some(&'#')) {
            return i + 1 + hashes;
        }
        i += 1;
    }
    i
}

/// A char literal (`'a'`, `'\n'`, `'\u{1F600}'`) or a lifetime (`'a`), from its quote.
fn skip_char_or_lifetime(chars: &[char], i: usize) -> usize {
    match chars.get(i + 1) {
        Some('\\') => {
            let mut j = i + 3;
            while j < chars.len() && chars[j] != '\'' {
                j += 1;
            }
            j + 1
        }
        Some(_) if chars.get(i + 2) == Some(&'\'') => i + 3,
        _ => {
            // A lifetime or label: the quote and the identifier after it.
            let mut j = i + 1;
            while j < chars.len() && (chars[j].is_alphanumeric() || chars[j] == '_') {
                j += 1;
            }
            j
        }
    }
}

/// One source file's contribution: the names it brings into scope at its top level, the
/// items it defines, and every crate path it names.
#[derive(Debug, Default)]
struct FileFacts {
    /// `use` at the file's top level: local name → absolute path (crate-relative).
    imports: BTreeMap<String, ModPath>,
    /// Names of items the file defines (`fn`, `struct`, …), to tell own items from globs.
    items: BTreeSet<String>,
    /// Top-level globs (`use super::*`) to look names up in.
    globs: Vec<ModPath>,
    /// Child modules declared `mod x;` (files) or `mod x { … }` (inline).
    children: BTreeSet<String>,
    /// Every crate path named anywhere in the file, absolute.
    references: Vec<ModPath>,
}

const ITEM_KEYWORDS: &[&str] = &["fn", "struct", "enum", "trait", "type", "const", "static", "union", "macro_rules"];

/// Reads one file of module `module` (its path from the crate root).
fn scan(module: &[String], tokens: &[Token]) -> FileFacts {
    let mut facts = FileFacts::default();
    // The inline modules we are in: (name, brace depth at which its body opened).
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    let ident = |i: usize| match tokens.get(i) {
        Some(Token::Ident(word)) => Some(word.as_str()),
        _ => None,
    };
    while i < tokens.len() {
        let scope: ModPath = module.iter().cloned().chain(inline.iter().map(|(name, _)| name.clone())).collect();
        match &tokens[i] {
            Token::Punct('{') => {
                depth += 1;
                i += 1;
            }
            Token::Punct('}') => {
                if inline.last().is_some_and(|&(_, d)| d == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
                i += 1;
            }
            // `pub(in crate::x)` restricts visibility; it is no dependency.
            Token::Ident(word) if word == "pub" && tokens.get(i + 1) == Some(&Token::Punct('(')) => {
                while i < tokens.len() && tokens[i] != Token::Punct(')') {
                    i += 1;
                }
            }
            Token::Ident(word) if word == "mod" && ident(i + 1).is_some() => {
                let name = ident(i + 1).unwrap_or_default().to_owned();
                let at_top = inline.is_empty();
                match tokens.get(i + 2) {
                    Some(Token::Punct(';')) if at_top => {
                        facts.children.insert(name);
                    }
                    Some(Token::Punct('{')) => {
                        if at_top {
                            facts.children.insert(name.clone());
                        }
                        inline.push((name, depth + 1));
                    }
                    _ => {}
                }
                i += 2;
            }
            // An import (not `impl Trait + use<'a>`, which captures lifetimes).
            Token::Ident(word) if word == "use" && tokens.get(i + 1) != Some(&Token::Punct('<')) => {
                let mut leaves = Vec::new();
                let mut end = use_tree(tokens, i + 1, &mut Vec::new(), &mut leaves);
                while end < tokens.len() && tokens[end] != Token::Punct(';') {
                    end += 1;
                }
                for (path, binds) in leaves {
                    let Some(absolute) = absolute(&scope, &path, &facts.children) else { continue };
                    if inline.is_empty() {
                        match binds {
                            Some(name) if name == "_" => {}
                            Some(name) => {
                                facts.imports.insert(name, absolute.clone());
                            }
                            None => facts.globs.push(absolute.clone()),
                        }
                    }
                    facts.references.push(absolute);
                }
                i = end + 1;
            }
            Token::Ident(word) if ITEM_KEYWORDS.contains(&word.as_str()) => {
                let skip = usize::from(tokens.get(i + 1) == Some(&Token::Punct('!')));
                if let Some(name) = ident(i + 1 + skip)
                    && inline.is_empty()
                {
                    facts.items.insert(name.to_owned());
                }
                i += 1;
            }
            Token::Ident(word)
                if matches!(word.as_str(), "crate" | "super" | "self")
                    && tokens.get(i + 1) == Some(&Token::PathSep)
                    && tokens.get(i.wrapping_sub(1)) != Some(&Token::PathSep)
                    && tokens.get(i.wrapping_sub(1)) != Some(&Token::Punct('$')) =>
            {
                let mut path = vec![word.clone()];
                let mut j = i + 1;
                while tokens.get(j) == Some(&Token::PathSep)
                    && let Some(segment) = ident(j + 1)
                {
                    path.push(segment.to_owned());
                    j += 2;
                }
                if let Some(absolute) = absolute(&scope, &path, &facts.children) {
                    facts.references.push(absolute);
                }
                i = j;
            }
            _ => i += 1,
        }
    }
    facts
}

/// Parses one use tree from `i` (`a::b`, `a::{b, c::*}`, `a as b`); each leaf is (path,
/// what it binds): `Some(name)` (`_` for `as _`), `None` for a glob. Returns the index past
/// the tree.
fn use_tree(
    tokens: &[Token],
    mut i: usize,
    prefix: &mut Vec<String>,
    leaves: &mut Vec<(ModPath, Option<String>)>,
) -> usize {
    let depth = prefix.len();
    if tokens.get(i) == Some(&Token::PathSep) {
        i += 1; // `use ::std::…`
    }
    loop {
        match tokens.get(i) {
            Some(Token::Ident(word)) if word != "as" => {
                prefix.push(word.clone());
                i += 1;
                if tokens.get(i) == Some(&Token::PathSep) {
                    i += 1;
                    continue;
                }
                break;
            }
            Some(Token::Punct('*')) => {
                leaves.push((prefix.clone(), None));
                prefix.truncate(depth);
                return i + 1;
            }
            Some(Token::Punct('{')) => {
                i += 1;
                while i < tokens.len() && tokens.get(i) != Some(&Token::Punct('}')) {
                    i = use_tree(tokens, i, prefix, leaves);
                    if tokens.get(i) == Some(&Token::Punct(',')) {
                        i += 1;
                    } else if tokens.get(i) != Some(&Token::Punct('}')) {
                        break;
                    }
                }
                prefix.truncate(depth);
                return i + 1;
            }
            _ => break,
        }
    }
    // A leaf: `self` in `{self, …}` names the prefix itself.
    if prefix.last().is_some_and(|s| s == "self") && prefix.len() > 1 {
        prefix.pop();
    }
    let mut binds = prefix.last().cloned();
    if let Some(Token::Ident(word)) = tokens.get(i)
        && word == "as"
    {
        binds = match tokens.get(i + 1) {
            Some(Token::Ident(name)) => Some(name.clone()),
            _ => Some(String::from("_")),
        };
        i += 2;
    }
    if prefix.len() > depth || depth > 0 {
        leaves.push((prefix.clone(), binds));
    }
    prefix.truncate(depth);
    i
}

/// A path as named in module `scope`, made absolute; `None` when it names another crate.
fn absolute(scope: &[String], path: &[String], children: &BTreeSet<String>) -> Option<ModPath> {
    let (first, rest) = path.split_first()?;
    let mut base: ModPath = match first.as_str() {
        "crate" => Vec::new(),
        "self" => scope.to_vec(),
        "super" => scope[..scope.len().checked_sub(1)?].to_vec(),
        // `use child::X` in the module that declares `mod child`; any other first segment
        // is another crate (or a local enum's variants).
        name if children.contains(name) => {
            let mut base = scope.to_vec();
            base.push(name.to_owned());
            base
        }
        _ => return None,
    };
    let mut rest = rest;
    while let Some((segment, tail)) = rest.split_first()
        && segment == "super"
    {
        base.pop();
        rest = tail;
    }
    base.extend(rest.iter().cloned());
    Some(base)
}

/// A crate's modules: each file's facts by its module path.
struct Crate {
    name: String,
    files: BTreeMap<ModPath, FileFacts>,
}

impl Crate {
    fn read(name: &str, src: &Path) -> Crate {
        let mut files = BTreeMap::new();
        let mut pending = vec![(PathBuf::from(src).join("lib.rs"), ModPath::new())];
        while let Some((file, module)) = pending.pop() {
            let source = fs::read_to_string(&file).unwrap_or_else(|e| panic!("reading {}: {e}", file.display()));
            let facts = scan(&module, &tokenize(&source));
            let dir = if module.is_empty() || file.ends_with("mod.rs") {
                file.parent().map(Path::to_path_buf).unwrap_or_default()
            } else {
                file.with_extension("")
            };
            for child in &facts.children {
                let mut path = module.clone();
                path.push(child.clone());
                let flat = dir.join(format!("{child}.rs"));
                let nested = dir.join(child).join("mod.rs");
                if flat.exists() {
                    pending.push((flat, path));
                } else if nested.exists() {
                    pending.push((nested, path));
                }
            }
            files.insert(module, facts);
        }
        Crate { name: name.to_owned(), files }
    }

    /// The file that defines what `path` names, following `use` re-exports.
    fn resolve(&self, path: &[String], hops: usize) -> Option<ModPath> {
        if hops > 32 {
            return None;
        }
        let mut module = ModPath::new();
        let mut rest = path;
        while let Some((segment, tail)) = rest.split_first() {
            let mut child = module.clone();
            child.push(segment.clone());
            if self.files.contains_key(&child) {
                module = child;
                rest = tail;
                continue;
            }
            let facts = self.files.get(&module)?;
            if facts.children.contains(segment) {
                // An inline module: it belongs to this file.
                return Some(module);
            }
            if let Some(target) = facts.imports.get(segment) {
                let target: ModPath = target.iter().chain(tail.iter()).cloned().collect();
                return self.resolve(&target, hops + 1);
            }
            if facts.items.contains(segment) {
                return Some(module);
            }
            for glob in &facts.globs {
                let target: ModPath = glob.iter().chain(rest.iter()).cloned().collect();
                if let Some(found) = self.resolve(&target, hops + 1)
                    && found != *glob
                {
                    return Some(found);
                }
            }
            return Some(module);
        }
        Some(module)
    }

    /// Module → the modules it depends on.
    fn graph(&self) -> BTreeMap<String, BTreeSet<String>> {
        let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (module, facts) in &self.files {
            let from = display(module);
            let edges = graph.entry(from.clone()).or_default();
            for child in &facts.children {
                let mut path = module.clone();
                path.push(child.clone());
                if self.files.contains_key(&path) {
                    edges.insert(display(&path));
                }
            }
            for reference in &facts.references {
                if let Some(target) = self.resolve(reference, 0) {
                    let to = display(&target);
                    if to != from {
                        edges.insert(to);
                    }
                }
            }
        }
        graph
    }
}

fn display(module: &[String]) -> String {
    if module.is_empty() { String::from("crate") } else { module.join("::") }
}

/// Every cycle of the graph, one per strongly connected component of more than one module
/// (or a module depending on itself), as `a → b → a` from its first module, naming the
/// component's other modules when the cycle shown does not pass through them all.
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let mut found = Vec::new();
    for component in components(graph) {
        let start = component.iter().next().cloned().unwrap_or_default();
        let looped = component.len() == 1 && graph.get(&start).is_some_and(|to| to.contains(&start));
        if component.len() < 2 && !looped {
            continue;
        }
        // The shortest way back to `start`, within the component.
        let mut previous: BTreeMap<&str, &str> = BTreeMap::new();
        let mut queue = VecDeque::from([start.as_str()]);
        let mut last = None;
        'search: while let Some(node) = queue.pop_front() {
            for next in graph.get(node).into_iter().flatten() {
                if next == &start {
                    last = Some(node);
                    break 'search;
                }
                if component.contains(next) && !previous.contains_key(next.as_str()) {
                    previous.insert(next, node);
                    queue.push_back(next);
                }
            }
        }
        let mut path = vec![start.clone()];
        let mut node = last.unwrap_or(&start);
        while node != start {
            path.push(node.to_owned());
            node = previous.get(node).copied().unwrap_or(&start);
        }
        path[1..].reverse();
        path.push(start.clone());
        let mut line = path.join(" → ");
        if component.len() > path.len() - 1 {
            let others: Vec<&str> = component.iter().filter(|m| !path.contains(m)).map(String::as_str).collect();
            write!(line, " (its cycle also holds {})", others.join(", ")).unwrap();
        }
        found.push(line);
    }
    found
}

/// Tarjan's strongly connected components.
fn components(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<BTreeSet<String>> {
    struct State<'g> {
        graph: &'g BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        on_stack: BTreeSet<&'g str>,
        out: Vec<BTreeSet<String>>,
    }
    fn visit<'g>(state: &mut State<'g>, node: &'g str) {
        let n = state.index.len();
        state.index.insert(node, n);
        state.low.insert(node, n);
        state.stack.push(node);
        state.on_stack.insert(node);
        for next in state.graph.get(node).into_iter().flatten() {
            let next = next.as_str();
            if !state.index.contains_key(next) {
                visit(state, next);
                let low = state.low[node].min(state.low[next]);
                state.low.insert(node, low);
            } else if state.on_stack.contains(next) {
                let low = state.low[node].min(state.index[next]);
                state.low.insert(node, low);
            }
        }
        if state.low[node] == state.index[node] {
            let mut component = BTreeSet::new();
            while let Some(top) = state.stack.pop() {
                state.on_stack.remove(top);
                component.insert(top.to_owned());
                if top == node {
                    break;
                }
            }
            state.out.push(component);
        }
    }
    let mut state = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for node in graph.keys() {
        if !state.index.contains_key(node.as_str()) {
            visit(&mut state, node);
        }
    }
    state.out.sort();
    state.out
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[test]
fn no_module_imports_one_above_it() {
    let mut failures = Vec::new();
    for (name, src) in [("starweaver", "starweaver/src"), ("starweaver-py", "starweaver-py/src")] {
        let krate = Crate::read(name, &workspace().join(src));
        assert!(krate.files.len() > 10, "{name}: only {} modules found", krate.files.len());
        for cycle in cycles(&krate.graph()) {
            failures.push(format!("{}: {cycle}", krate.name));
        }
    }
    assert!(
        failures.is_empty(),
        "modules import each other in a cycle (DESIGN.md §2: dependencies run one way):\n  {}",
        failures.join("\n  ")
    );
}

/// The graph of a few in-memory files, as `Crate::read` would build it from disk.
fn graph_of(files: &[(&str, &str)]) -> BTreeMap<String, BTreeSet<String>> {
    let files = files
        .iter()
        .map(|(module, source)| {
            let module: ModPath = module.split("::").filter(|s| !s.is_empty()).map(str::to_owned).collect();
            let facts = scan(&module, &tokenize(source));
            (module, facts)
        })
        .collect();
    Crate { name: String::from("synthetic"), files }.graph()
}

#[test]
fn the_cycle_finder_names_each_cycle() {
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("agent", &["session", "json"][..]),
        ("session", &["stream"]),
        ("stream", &["agent"]),
        ("json", &[]),
        ("error", &["model"]),
        ("model", &["error"]),
        ("tool", &["json"]),
    ]
    .into_iter()
    .map(|(from, to)| (from.to_owned(), to.iter().map(|s| (*s).to_owned()).collect()))
    .collect();
    assert_eq!(cycles(&graph), ["agent → session → stream → agent", "error → model → error"]);
    // A cycle shown through some of its component names the rest.
    let chain: BTreeMap<String, BTreeSet<String>> = [("x", &["y"][..]), ("y", &["x", "z"]), ("z", &["y"])]
        .into_iter()
        .map(|(from, to)| (from.to_owned(), to.iter().map(|s| (*s).to_owned()).collect()))
        .collect();
    assert_eq!(cycles(&chain), ["x → y → x (its cycle also holds z)"]);
    let acyclic: BTreeMap<String, BTreeSet<String>> =
        graph.into_iter().filter(|(from, _)| from != "stream" && from != "model").collect();
    assert!(cycles(&acyclic).is_empty());
}

#[test]
fn a_parent_re_exporting_its_children_is_no_cycle() {
    let graph = graph_of(&[
        ("", "pub mod tool; pub mod json; pub use tool::Tool;"),
        ("tool", "mod error; mod context; pub use error::ToolError; pub use context::Context; pub trait Tool {}"),
        // Through the parent's re-export: an edge to the sibling that defines it.
        ("tool::error", "use crate::json::kind_of; pub struct ToolError;"),
        ("tool::context", "use super::ToolError; use crate::tool::error::ToolError as E; pub struct Context;"),
        ("json", "pub fn kind_of() {} #[cfg(test)] mod tests { use super::*; use crate::Tool; }"),
    ]);
    assert_eq!(graph["tool::context"], BTreeSet::from([String::from("tool::error")]));
    assert_eq!(graph["tool"], BTreeSet::from([String::from("tool::context"), String::from("tool::error")]));
    // A test module importing from above is a dependency of its file, like any other code.
    assert!(graph["json"].contains("tool"));
}

#[test]
fn a_child_naming_its_parents_own_item_is_a_cycle() {
    let graph = graph_of(&[
        ("", "mod agent;"),
        ("agent", "mod run; pub struct AgentInner; fn go() { run::drive() }"),
        ("agent::run", "pub fn drive() { let _ = super::AgentInner; }"),
    ]);
    assert_eq!(cycles(&graph), ["agent → agent::run → agent"]);
}

#[test]
fn paths_in_code_and_macros_count_and_comments_and_strings_do_not() {
    let graph = graph_of(&[
        ("", "mod a; mod b; mod c; mod d;"),
        (
            "a",
            r#"fn f() -> impl Sized + use<> { format!("{}", crate::b::g()); let s = "crate::c::h"; } // crate::d::x"#,
        ),
        ("b", "/// [`crate::c::Y`]\npub fn g() {} pub(in crate::d) fn k() {}"),
        ("c", r##"const X: &str = r#"crate::a::f"#; fn f<'a>(x: &'a str) -> char { 'x' }"##),
        ("d", "use crate::{a, b::{self, g as gee}, c::*};"),
    ]);
    assert_eq!(graph["a"], BTreeSet::from([String::from("b")]));
    assert!(graph["b"].is_empty(), "{:?}", graph["b"]);
    assert!(graph["c"].is_empty(), "{:?}", graph["c"]);
    assert_eq!(graph["d"], BTreeSet::from([String::from("a"), String::from("b"), String::from("c")]));
}

/// `cargo test -p starweaver-tests --test layering -- --ignored --nocapture` prints both
/// graphs, each module with what it depends on.
#[test]
#[ignore = "prints the module graphs; run it by hand"]
fn print_the_module_graphs() {
    for (name, src) in [("starweaver", "starweaver/src"), ("starweaver-py", "starweaver-py/src")] {
        println!("{name}:");
        for (module, to) in Crate::read(name, &workspace().join(src)).graph() {
            println!("  {module} → {}", to.into_iter().collect::<Vec<_>>().join(", "));
        }
    }
}
