//! Import circles between sibling modules of a crate, found by reading its
//! source as text (no dependency, no compiler).
//!
//! The rule: within every module that has child modules (and at the crate
//! root), the graph whose nodes are the child modules and whose edges are
//! "some code of child A (A itself or any module below it) refers to
//! sibling B" has no cycle. Referring to an ancestor's own items (its
//! traits, its types) is allowed; that is how children share what their
//! parent defines.
//!
//! A reference is any path that names a module of the crate: `crate::a::b`,
//! `super::b`, `super::super::c`, `self::b`, a name bound by a `use`
//! (grouped or not, renamed or not) and then used as `name::x`, in a `use`
//! or inline in code. A name the parent only re-exports (`pub use
//! b::Thing;` in the parent, `super::Thing` in A) is followed to where it
//! points, so it counts as a reference to `b`. Comments, doc comments,
//! string and character literals are skipped. Modules are followed from
//! the crate root through their `mod` declarations, `name.rs`,
//! `name/mod.rs` and inline `mod name { ... }` alike. Items under
//! `#[cfg(test)]` (test modules, test-only imports and helpers) are left
//! out: a unit test may drive its module through the crate's front door
//! (a test of `acl` opening a `Connection`) without that being a design
//! dependency.
//!
//! ```no_run
//! let circles = redmodel_suite::module_graph::cycles("redmodel-memory/src".as_ref());
//! assert!(circles.is_empty(), "{circles:?}");
//! ```

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};

/// The circles of the crate whose sources are in `src_dir` (its `lib.rs`,
/// else its `main.rs`): each one a set of sibling modules that all reach
/// each other, as paths such as `crate::command::meta`, sorted. Empty when
/// the crate has none.
///
/// # Panics
///
/// If `src_dir` holds neither `lib.rs` nor `main.rs`, or a declared module
/// has no file.
pub fn cycles(src_dir: &Path) -> Vec<Vec<String>> {
    check(src_dir)
        .circles
        .into_iter()
        .map(|c| c.modules)
        .collect()
}

/// The circles of the crate in `src_dir`, each with the references that
/// close it, for a failure message that says where to cut.
///
/// # Panics
///
/// As [`cycles`].
pub fn check(src_dir: &Path) -> Report {
    let crate_graph = CrateGraph::read(src_dir);
    let edges = crate_graph.sibling_edges();
    let mut circles = Vec::new();
    for (parent, graph) in &edges {
        let nodes: BTreeSet<&String> = graph
            .keys()
            .chain(graph.values().flat_map(|to| to.keys()))
            .collect();
        for component in strongly_connected(&nodes, graph) {
            if component.len() < 2 {
                continue;
            }
            let members: BTreeSet<&String> = component.iter().copied().collect();
            let mut inside = Vec::new();
            for &from in &component {
                for (to, at) in graph.get(from).into_iter().flatten() {
                    if members.contains(to) {
                        inside.push(Edge {
                            from: join(parent, from),
                            to: join(parent, to),
                            at: at.clone(),
                        });
                    }
                }
            }
            inside.sort_by(|a, b| (&a.from, &a.to).cmp(&(&b.from, &b.to)));
            let mut modules: Vec<String> = component.iter().map(|c| join(parent, c)).collect();
            modules.sort();
            circles.push(Circle {
                modules,
                edges: inside,
            });
        }
    }
    circles.sort_by(|a, b| a.modules.cmp(&b.modules));
    Report { circles }
}

/// What [`check`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// Every circle, sorted by its modules.
    pub circles: Vec<Circle>,
}

/// A set of sibling modules that all reach each other.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Circle {
    /// The modules, as paths from `crate`, sorted.
    pub modules: Vec<String>,
    /// The references between them.
    pub edges: Vec<Edge>,
}

/// "Module `from` (or a module below it) refers to sibling `to`".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edge {
    /// The referring sibling.
    pub from: String,
    /// The sibling referred to.
    pub to: String,
    /// The first such reference: `file:line`.
    pub at: String,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for circle in &self.circles {
            writeln!(
                f,
                "circle of {} modules: {}",
                circle.modules.len(),
                circle.modules.join(", ")
            )?;
            for edge in &circle.edges {
                writeln!(f, "    {} -> {}  ({})", edge.from, edge.to, edge.at)?;
            }
        }
        Ok(())
    }
}

type ModPath = Vec<String>;

fn join(parent: &[String], child: &str) -> String {
    let mut s = String::from("crate");
    for seg in parent.iter().map(String::as_str).chain([child]) {
        s.push_str("::");
        s.push_str(seg);
    }
    s
}

/// One module of the crate, as read from its source.
#[derive(Debug, Default)]
struct Module {
    children: BTreeSet<String>,
    /// Names bound by `use`: name -> the path it stands for (already made
    /// absolute when it starts with `crate`, `super` or `self`; otherwise
    /// resolved at lookup, relative to this module).
    bindings: HashMap<String, UsePath>,
    /// Paths imported with `*`.
    globs: Vec<UsePath>,
    /// Paths that may name a module of the crate, with where they are.
    refs: Vec<(UsePath, String)>,
}

/// A path as written, anchored where it was written.
#[derive(Debug, Clone)]
struct UsePath {
    /// The module the path was written in.
    at: ModPath,
    segments: Vec<String>,
}

struct CrateGraph {
    modules: BTreeMap<ModPath, Module>,
}

impl CrateGraph {
    fn read(src_dir: &Path) -> Self {
        let root_file = ["lib.rs", "main.rs"]
            .iter()
            .map(|f| src_dir.join(f))
            .find(|p| p.is_file())
            .unwrap_or_else(|| panic!("no lib.rs or main.rs in {}", src_dir.display()));
        let mut graph = CrateGraph {
            modules: BTreeMap::new(),
        };
        graph.read_file(&root_file, src_dir, Vec::new(), src_dir);
        graph
    }

    /// Reads the module `path` from `file`; its file children live in
    /// `child_dir`.
    fn read_file(&mut self, file: &Path, child_dir: &Path, path: ModPath, src_dir: &Path) {
        let text = std::fs::read_to_string(file)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
        let shown = file
            .strip_prefix(src_dir.parent().unwrap_or(src_dir))
            .unwrap_or(file)
            .display()
            .to_string();
        let tokens = tokenize(&text);
        let mut file_mods = Vec::new();
        Parser {
            tokens: &tokens,
            pos: 0,
            file: &shown,
            graph: self,
            file_mods: &mut file_mods,
        }
        .module_body(path, child_dir.to_path_buf(), false);
        for (child, dir) in file_mods {
            let name = child.last().cloned().unwrap_or_default();
            let flat = dir.join(format!("{name}.rs"));
            let nested = dir.join(&name).join("mod.rs");
            let (child_file, grandchild_dir) = if flat.is_file() {
                (flat, dir.join(&name))
            } else if nested.is_file() {
                (nested, dir.join(&name))
            } else {
                panic!(
                    "module {} is declared but has no file {} or {}",
                    join(&child[..child.len() - 1], &name),
                    flat.display(),
                    nested.display()
                )
            };
            self.read_file(&child_file, &grandchild_dir, child, src_dir);
        }
    }

    /// The module a path names (the deepest module it goes through), or
    /// `None` when it leaves the crate or names nothing known.
    fn resolve(&self, path: &UsePath, depth: usize) -> Option<ModPath> {
        if depth > 16 {
            return None;
        }
        let mut segments = path.segments.iter().peekable();
        let mut at = path.at.clone();
        let first = segments.next()?;
        match first.as_str() {
            "crate" | "$crate" => at.clear(),
            "self" => {}
            "super" => {
                at.pop()?;
            }
            name => {
                let module = self.modules.get(&at)?;
                if module.children.contains(name) {
                    at.push(name.to_string());
                } else if let Some(bound) = module.bindings.get(name) {
                    let mut whole = bound.clone();
                    whole.segments.extend(segments.cloned());
                    return self.resolve(&whole, depth + 1);
                } else {
                    let glob = module.globs.iter().find_map(|g| {
                        let m = self.resolve(g, depth + 1)?;
                        self.modules.get(&m)?.children.contains(name).then_some(m)
                    })?;
                    at = glob;
                    at.push(name.to_string());
                }
            }
        }
        while segments.peek().map(|s| s.as_str()) == Some("super") {
            segments.next();
            at.pop()?;
        }
        while let Some(seg) = segments.next() {
            let module = self.modules.get(&at)?;
            if seg == "self" {
                continue;
            }
            if module.children.contains(seg) {
                at.push(seg.clone());
            } else if let Some(bound) = module.bindings.get(seg) {
                let mut whole = bound.clone();
                whole.segments.extend(segments.cloned());
                return self.resolve(&whole, depth + 1).or(Some(at));
            } else {
                break;
            }
        }
        Some(at)
    }

    /// For each module with children: child -> sibling -> first reference.
    fn sibling_edges(&self) -> BTreeMap<ModPath, BTreeMap<String, BTreeMap<String, String>>> {
        let mut edges: BTreeMap<ModPath, BTreeMap<String, BTreeMap<String, String>>> =
            BTreeMap::new();
        for (from, module) in &self.modules {
            for (path, at) in &module.refs {
                let Some(to) = self.resolve(path, 0) else {
                    continue;
                };
                let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
                if common == from.len() || common == to.len() {
                    // Its own descendant, or an ancestor's own items.
                    continue;
                }
                edges
                    .entry(from[..common].to_vec())
                    .or_default()
                    .entry(from[common].clone())
                    .or_default()
                    .entry(to[common].clone())
                    .or_insert_with(|| at.clone());
            }
        }
        edges
    }
}

/// Tarjan's strongly connected components.
fn strongly_connected<'a>(
    nodes: &BTreeSet<&'a String>,
    graph: &'a BTreeMap<String, BTreeMap<String, String>>,
) -> Vec<Vec<&'a String>> {
    struct State<'a> {
        index: HashMap<&'a String, usize>,
        low: HashMap<&'a String, usize>,
        stack: Vec<&'a String>,
        on_stack: BTreeSet<&'a String>,
        out: Vec<Vec<&'a String>>,
    }
    fn visit<'a>(
        v: &'a String,
        graph: &'a BTreeMap<String, BTreeMap<String, String>>,
        s: &mut State<'a>,
    ) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in graph.get(v).into_iter().flat_map(|m| m.keys()) {
            if !s.index.contains_key(w) {
                visit(w, graph, s);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w);
                if w == v {
                    break;
                }
            }
            s.out.push(component);
        }
    }
    let mut s = State {
        index: HashMap::new(),
        low: HashMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for &v in nodes {
        if !s.index.contains_key(v) {
            visit(v, graph, &mut s);
        }
    }
    s.out
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Ident(String),
    /// `::`
    Path,
    Punct(char),
    /// A literal, a lifetime: nothing that names a module.
    Other,
}

/// The tokens of `text` with their lines; comments and literals dropped.
fn tokenize(text: &str) -> Vec<(Tok, usize)> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    while i < chars.len() {
        let c = chars[i];
        let start_line = line;
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && at(i + 1) == '/' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if chars[i] == '\n' {
                        line += 1;
                    }
                    i += 1;
                }
            }
        } else if c == '"' {
            i = skip_string(&chars, i + 1, 0, &mut line);
            out.push((Tok::Other, start_line));
        } else if c == '\'' {
            // A character literal, or a lifetime / label.
            if at(i + 1) == '\\' {
                i += 2;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if at(i + 2) == '\'' {
                i += 3;
            } else {
                i += 1;
                while is_ident_char(at(i)) {
                    i += 1;
                }
            }
            out.push((Tok::Other, start_line));
        } else if c.is_ascii_digit() {
            while is_ident_char(at(i)) || (at(i) == '.' && at(i + 1).is_ascii_digit()) {
                i += 1;
            }
            out.push((Tok::Other, start_line));
        } else if is_ident_start(c) || (c == '$' && is_ident_start(at(i + 1))) {
            let begin = i;
            i += 1;
            while is_ident_char(at(i)) {
                i += 1;
            }
            let word: String = chars[begin..i].iter().collect();
            // String and char prefixes: b"..", r"..", r#".."#, br"..", c"..", b'.'.
            let raw = matches!(word.as_str(), "r" | "br" | "cr");
            if matches!(word.as_str(), "b" | "c" | "r" | "br" | "cr")
                && (at(i) == '"' || (raw && at(i) == '#'))
            {
                let mut hashes = 0;
                while at(i) == '#' {
                    hashes += 1;
                    i += 1;
                }
                if at(i) == '"' {
                    i = if raw {
                        skip_raw_string(&chars, i + 1, hashes, &mut line)
                    } else {
                        skip_string(&chars, i + 1, 0, &mut line)
                    };
                    out.push((Tok::Other, start_line));
                    continue;
                }
                // `r#ident`: a raw identifier.
                let begin = i;
                while is_ident_char(at(i)) {
                    i += 1;
                }
                let word: String = chars[begin..i].iter().collect();
                out.push((Tok::Ident(word), start_line));
                continue;
            }
            if word == "b" && at(i) == '\'' {
                i += 1;
                if at(i) == '\\' {
                    i += 1;
                }
                i += 1;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
                out.push((Tok::Other, start_line));
                continue;
            }
            out.push((Tok::Ident(word), start_line));
        } else if c == ':' && at(i + 1) == ':' {
            i += 2;
            out.push((Tok::Path, start_line));
        } else {
            i += 1;
            out.push((Tok::Punct(c), start_line));
        }
    }
    out
}

fn is_ident_start(c: char) -> bool {
    c == '_' || c.is_alphabetic()
}

fn is_ident_char(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

/// Skips a string body from `i` (after the opening quote); returns the
/// index after the closing quote.
fn skip_string(chars: &[char], mut i: usize, _hashes: usize, line: &mut usize) -> usize {
    while i < chars.len() {
        match chars[i] {
            '\\' => {
                if chars.get(i + 1) == Some(&'\n') {
                    *line += 1;
                }
                i += 2;
            }
            '"' => return i + 1,
            '\n' => {
                *line += 1;
                i += 1;
            }
            _ => i += 1,
        }
    }
    i
}

/// Skips a raw string body closed by `"` and `hashes` `#`s.
fn skip_raw_string(chars: &[char], mut i: usize, hashes: usize, line: &mut usize) -> usize {
    while i < chars.len() {
        if chars[i] == '\n' {
            *line += 1;
        }
        if chars[i] == '"' && (1..=hashes).all(|k| chars.get(i + k) == Some(&'#')) {
            return i + 1 + hashes;
        }
        i += 1;
    }
    i
}

struct Parser<'a> {
    tokens: &'a [(Tok, usize)],
    pos: usize,
    file: &'a str,
    graph: &'a mut CrateGraph,
    /// File modules declared here (`mod name;`), with the directory their
    /// file is in.
    file_mods: &'a mut Vec<(ModPath, PathBuf)>,
}

impl Parser<'_> {
    fn peek(&self, k: usize) -> Option<&Tok> {
        self.tokens.get(self.pos + k).map(|(t, _)| t)
    }

    fn ident(&self, k: usize) -> Option<&str> {
        match self.peek(k) {
            Some(Tok::Ident(s)) => Some(s),
            _ => None,
        }
    }

    fn line(&self) -> usize {
        self.tokens.get(self.pos).map_or(0, |(_, l)| *l)
    }

    fn module(&mut self, path: &ModPath) -> &mut Module {
        self.graph.modules.entry(path.clone()).or_default()
    }

    /// Reads the items of module `path` up to the end of the file or, for
    /// an inline module, its closing brace.
    fn module_body(&mut self, path: ModPath, child_dir: PathBuf, inline: bool) {
        self.module(&path);
        let mut depth = 0usize;
        while let Some(tok) = self.peek(0).cloned() {
            match tok {
                Tok::Punct('#') if self.at_cfg_test() => self.skip_item(),
                Tok::Punct('{') => {
                    depth += 1;
                    self.pos += 1;
                }
                Tok::Punct('}') => {
                    self.pos += 1;
                    if depth == 0 && inline {
                        return;
                    }
                    depth = depth.saturating_sub(1);
                }
                Tok::Ident(word) if word == "mod" && self.ident(1).is_some() => {
                    let name = self.ident(1).unwrap_or_default().to_string();
                    let mut child = path.clone();
                    child.push(name.clone());
                    self.module(&path).children.insert(name.clone());
                    match self.peek(2) {
                        Some(Tok::Punct(';')) => {
                            self.pos += 3;
                            self.file_mods.push((child, child_dir.clone()));
                        }
                        Some(Tok::Punct('{')) => {
                            self.pos += 3;
                            self.module_body(child, child_dir.join(&name), true);
                        }
                        _ => self.pos += 2,
                    }
                }
                Tok::Ident(word) if word == "use" => {
                    self.pos += 1;
                    let line = self.line();
                    let mut found = Vec::new();
                    self.use_tree(Vec::new(), &mut found);
                    let at = format!("{}:{line}", self.file);
                    for (segments, binding) in found {
                        let use_path = UsePath {
                            at: path.clone(),
                            segments,
                        };
                        let module = self.module(&path);
                        module.refs.push((use_path.clone(), at.clone()));
                        match binding {
                            Binding::Name(name) => {
                                module.bindings.insert(name, use_path);
                            }
                            Binding::Glob => module.globs.push(use_path),
                            Binding::None => {}
                        }
                    }
                }
                Tok::Ident(word) if self.starts_path(&word) => {
                    let line = self.line();
                    let mut segments = vec![word];
                    self.pos += 1;
                    while self.peek(0) == Some(&Tok::Path) {
                        match self.ident(1) {
                            Some(s) => {
                                segments.push(s.to_string());
                                self.pos += 2;
                            }
                            None => break,
                        }
                    }
                    let at = format!("{}:{line}", self.file);
                    self.module(&path).refs.push((
                        UsePath {
                            at: path.clone(),
                            segments,
                        },
                        at,
                    ));
                }
                _ => self.pos += 1,
            }
        }
    }

    /// Whether the cursor is at `#[cfg(test)]`.
    fn at_cfg_test(&self) -> bool {
        let want = [
            Tok::Punct('#'),
            Tok::Punct('['),
            Tok::Ident("cfg".to_string()),
            Tok::Punct('('),
            Tok::Ident("test".to_string()),
            Tok::Punct(')'),
            Tok::Punct(']'),
        ];
        want.iter()
            .enumerate()
            .all(|(k, t)| self.peek(k) == Some(t))
    }

    /// Skips the item at the cursor, its attributes included: up to a `;`
    /// outside brackets, or the brace that closes its body.
    fn skip_item(&mut self) {
        let mut depth = 0usize;
        while let Some(tok) = self.peek(0).cloned() {
            self.pos += 1;
            match tok {
                Tok::Punct('#') if depth == 0 && self.peek(0) == Some(&Tok::Punct('[')) => {
                    // An attribute: skip its brackets.
                    let mut square = 0usize;
                    while let Some(t) = self.peek(0).cloned() {
                        self.pos += 1;
                        match t {
                            Tok::Punct('[') => square += 1,
                            Tok::Punct(']') => {
                                square -= 1;
                                if square == 0 {
                                    break;
                                }
                            }
                            _ => {}
                        }
                    }
                }
                Tok::Punct('{' | '(' | '[') => depth += 1,
                Tok::Punct(')' | ']') => depth = depth.saturating_sub(1),
                Tok::Punct('}') => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        return;
                    }
                }
                Tok::Punct(';') if depth == 0 => return,
                _ => {}
            }
        }
    }

    /// Whether the identifier at the cursor begins a path (`word::`), not
    /// continues one (`x::word::`).
    fn starts_path(&self, word: &str) -> bool {
        let after_path = self.pos > 0 && self.tokens[self.pos - 1].0 == Tok::Path;
        !after_path && self.peek(1) == Some(&Tok::Path) && word != "Self"
    }

    /// Reads a use tree after `prefix`; pushes each imported path and what
    /// it binds. Stops after the tree (at `,`, `}` or `;`).
    fn use_tree(&mut self, prefix: Vec<String>, found: &mut Vec<(Vec<String>, Binding)>) {
        let mut path = prefix;
        if self.peek(0) == Some(&Tok::Path) {
            // `use ::extern_crate::...`: nothing of this crate.
            self.pos += 1;
            let mut ignored = Vec::new();
            self.use_tree(vec!["::".to_string()], &mut ignored);
            return;
        }
        loop {
            match self.peek(0).cloned() {
                Some(Tok::Ident(s)) if s != "as" => {
                    path.push(s);
                    self.pos += 1;
                    if self.peek(0) == Some(&Tok::Path) {
                        self.pos += 1;
                        continue;
                    }
                    if self.ident(0) == Some("as") {
                        self.pos += 1;
                        let name = self.ident(0).unwrap_or("_").to_string();
                        self.pos += 1;
                        let binding = if name == "_" {
                            Binding::None
                        } else {
                            Binding::Name(name)
                        };
                        found.push((strip_self(std::mem::take(&mut path)), binding));
                    } else {
                        let path = strip_self(std::mem::take(&mut path));
                        let name = path.last().cloned().unwrap_or_default();
                        found.push((path, Binding::Name(name)));
                    }
                    break;
                }
                Some(Tok::Punct('*')) => {
                    self.pos += 1;
                    found.push((path.clone(), Binding::Glob));
                    break;
                }
                Some(Tok::Punct('{')) => {
                    self.pos += 1;
                    loop {
                        match self.peek(0) {
                            Some(Tok::Punct('}')) => {
                                self.pos += 1;
                                break;
                            }
                            Some(Tok::Punct(',')) => self.pos += 1,
                            None => break,
                            Some(_) => {
                                let before = self.pos;
                                self.use_tree(path.clone(), found);
                                if self.pos == before {
                                    self.pos += 1;
                                }
                            }
                        }
                    }
                    break;
                }
                _ => break,
            }
        }
        if self.peek(0) == Some(&Tok::Punct(';')) {
            self.pos += 1;
        }
    }
}

/// `a::b::self` (from `use a::b::{self}`) is `a::b`.
fn strip_self(mut path: Vec<String>) -> Vec<String> {
    if path.len() > 1 && path.last().map(String::as_str) == Some("self") {
        path.pop();
    }
    path
}

enum Binding {
    Name(String),
    Glob,
    None,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, files: &[(&str, &str)]) {
        for (name, text) in files {
            let path = dir.join(name);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).expect("create dir");
            }
            std::fs::write(path, text).expect("write");
        }
    }

    fn circles_of(test: &str, files: &[(&str, &str)]) -> Vec<Vec<String>> {
        let dir = std::env::temp_dir().join(format!("module_graph_{}_{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        write(&dir, files);
        let found = cycles(&dir);
        let _ = std::fs::remove_dir_all(&dir);
        found
    }

    #[test]
    fn a_grouped_use_and_a_super_path_close_a_circle() {
        let found = circles_of(
            "a_grouped_use_and_a_super_path_close_a_circle",
            &[
                ("lib.rs", "mod a;\nmod b;\nmod c;\n"),
                ("a.rs", "use crate::{b::{self, X}, c};\n"),
                ("b.rs", "fn f() { super::a::g(); }\n"),
                (
                    "c.rs",
                    "// use crate::a;\nconst S: &str = \"crate::a::x\";\n",
                ),
            ],
        );
        assert_eq!(found, vec![vec!["crate::a", "crate::b"]]);
    }

    #[test]
    fn a_descendant_speaks_for_its_ancestor() {
        let found = circles_of(
            "a_descendant_speaks_for_its_ancestor",
            &[
                ("lib.rs", "mod a;\nmod b;\npub trait T {}\n"),
                ("a.rs", "mod inner;\nuse super::T;\n"),
                ("a/inner.rs", "fn f() { super::super::b::g(); }\n"),
                (
                    "b/mod.rs",
                    "use crate::a as alias;\nfn g() { alias::h(); }\n",
                ),
            ],
        );
        assert_eq!(found, vec![vec!["crate::a", "crate::b"]]);
    }

    #[test]
    fn a_parent_re_export_is_followed_to_the_sibling() {
        let found = circles_of(
            "a_parent_re_export_is_followed_to_the_sibling",
            &[
                ("lib.rs", "mod a;\nmod b;\nuse b::Thing;\n"),
                ("a.rs", "use super::Thing;\n"),
                ("b.rs", "pub struct Thing; fn f() { crate::a::x(); }\n"),
            ],
        );
        assert_eq!(found, vec![vec!["crate::a", "crate::b"]]);
    }

    #[test]
    fn a_tree_without_back_references_has_no_circle() {
        let found = circles_of(
            "a_tree_without_back_references_has_no_circle",
            &[
                ("lib.rs", "mod a;\nmod b;\nmod c;\n"),
                ("a.rs", "use crate::b;\nmod inner { use super::*; }\n"),
                (
                    "b.rs",
                    "#[cfg(test)]\nmod tests;\n#[cfg(test)]\nfn t() { crate::a::f(); }\n",
                ),
                (
                    "c.rs",
                    "fn f() -> &'static str { let c = '\"'; \"super::a\" }\n",
                ),
            ],
        );
        assert!(found.is_empty(), "{found:?}");
    }
}
