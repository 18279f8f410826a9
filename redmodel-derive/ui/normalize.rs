//! rustc's messages for a case, made independent of the machine and of
//! edits elsewhere: a location outside the case loses its machine prefix
//! (`$WORKSPACE/`, `$CARGO/`, `$RUST/`) and its line numbers, and the
//! gutter is as wide as the line numbers the message keeps, whatever
//! other line numbers rustc had to fit in it.

use std::path::Path;

/// The lines rustc ends with, which repeat what the messages say.
const SUMMARY: [&str; 3] = [
    "error: aborting due to",
    "For more information about",
    "Some errors have detailed explanations",
];

/// One line of a message, its gutter taken apart.
enum Line {
    /// `--> path` or `::: path`, the location already rewritten.
    Arrow(&'static str, String),
    /// `NN |rest`: a quoted line (its number dropped when it is not the
    /// case's) or the gutter's bar alone.
    Gutter(String, String),
    /// A line indented past the gutter (`= note: ...`, a note's list).
    Indented(String),
    /// Anything else, as it is.
    Plain(String),
}

/// `stderr` with the case's locations relative to its folder's parent
/// (`cases/NAME.rs:L:C`), every other location rewritten without its
/// line, and rustc's closing summary dropped.
pub fn normalize(stderr: &str, case_folder: &Path, workspace: &Path) -> String {
    let paths = Paths {
        cases: format!("{}/", case_folder.display()),
        shown: case_folder
            .file_name()
            .map_or_else(String::new, |name| format!("{}/", name.to_string_lossy())),
        workspace: format!("{}/", workspace.display()),
    };
    let messages: Vec<String> = stderr
        .split("\n\n")
        .filter(|message| !message.trim().is_empty())
        .filter_map(|message| message_of(message, &paths))
        .collect();
    format!("{}\n", messages.join("\n\n"))
}

/// How the locations of one case are rewritten.
struct Paths {
    /// The cases' folder as rustc prints it (relative to the workspace).
    cases: String,
    /// The cases' folder as the expected files show it.
    shown: String,
    /// The workspace root, absolute.
    workspace: String,
}

/// One message (the lines up to a blank one), rewritten; `None` for
/// rustc's closing summary.
fn message_of(message: &str, paths: &Paths) -> Option<String> {
    let mut lines = Vec::new();
    // The gutter's width in rustc's output, and whether the snippet being
    // read quotes a file other than the case.
    let mut margin: Option<usize> = None;
    let mut elsewhere = false;
    for line in message.lines() {
        if SUMMARY.iter().any(|start| line.starts_with(start)) || is_warning_count(line) {
            continue;
        }
        if let Some((indent, arrow, location)) = arrow(line) {
            margin = Some(indent);
            let (path, position) = split_position(location);
            let case_file = path.strip_prefix(&paths.cases);
            elsewhere = case_file.is_none();
            let location = match case_file {
                Some(file) => format!("{}{file}{position}", paths.shown),
                None => machine_free(path, &paths.workspace),
            };
            lines.push(Line::Arrow(arrow, location));
            continue;
        }
        let line = others(line);
        lines.push(match margin {
            Some(m) => gutter(line, m, elsewhere),
            None => Line::Plain(line),
        });
    }
    if lines.is_empty() {
        return None;
    }
    // One width for the message: the widest line number it keeps.
    let width = lines
        .iter()
        .filter_map(|line| match line {
            Line::Gutter(number, _) => Some(number.len()),
            _ => None,
        })
        .max()
        .unwrap_or(0)
        .max(1);
    let rendered: Vec<String> = lines
        .into_iter()
        .map(|line| match line {
            Line::Arrow(arrow, location) => format!("{:width$}{arrow} {location}", ""),
            Line::Gutter(number, rest) => format!("{number:>width$} |{rest}"),
            Line::Indented(rest) => format!("{:width$}{rest}", ""),
            Line::Plain(line) => line,
        })
        .collect();
    Some(rendered.join("\n"))
}

/// "warning: 1 warning emitted" and the like.
fn is_warning_count(line: &str) -> bool {
    line.starts_with("warning: ") && line.ends_with(" emitted")
}

/// A `  --> path:L:C` or `  ::: path:L:C` line: its indent, arrow and location.
fn arrow(line: &str) -> Option<(usize, &'static str, &str)> {
    let rest = line.trim_start_matches(' ');
    let indent = line.len() - rest.len();
    [("--> ", "-->"), ("::: ", ":::")]
        .into_iter()
        .find_map(|(prefix, arrow)| Some((indent, arrow, rest.strip_prefix(prefix)?)))
}

/// `path:L:C` split into the path and `:L:C` (empty when absent).
fn split_position(location: &str) -> (&str, &str) {
    let mut end = location.len();
    for _ in 0..2 {
        match location[..end].rfind(':') {
            Some(colon)
                if location[colon + 1..end].bytes().all(|b| b.is_ascii_digit())
                    && colon + 1 < end =>
            {
                end = colon;
            }
            _ => return (location, ""),
        }
    }
    location.split_at(end)
}

/// A path outside the case without what depends on the machine.
fn machine_free(path: &str, workspace: &str) -> String {
    if let Some(rest) = path.strip_prefix(workspace) {
        return format!("$WORKSPACE/{rest}");
    }
    if !path.starts_with('/') {
        // Cargo compiles a workspace's members from its root, with
        // relative paths, and their spans keep them.
        return format!("$WORKSPACE/{path}");
    }
    if let Some(at) = path.find("/library/") {
        if path.starts_with("/rustc/") || path.contains("/rustlib/") {
            return format!("$RUST/{}", &path[at + "/library/".len()..]);
        }
    }
    if let Some(at) = path.find("/registry/src/") {
        let index_and_rest = &path[at + "/registry/src/".len()..];
        if let Some(slash) = index_and_rest.find('/') {
            return format!("$CARGO/{}", &index_and_rest[slash + 1..]);
        }
    }
    path.to_owned()
}

/// "and 12 others": the count of a trait's implementations, which grows
/// with the library.
fn others(line: &str) -> String {
    let Some(at) = line.find("and ") else {
        return line.to_owned();
    };
    let rest = &line[at + 4..];
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || !rest[digits..].starts_with(" others") {
        return line.to_owned();
    }
    format!("{}and $N{}", &line[..at], &rest[digits..])
}

/// A line of a message whose gutter is `m` wide in rustc's output.
fn gutter(line: String, m: usize, elsewhere: bool) -> Line {
    let bytes = line.as_bytes();
    // `NN |...`: the line number (or blanks) in m columns, a blank, a bar.
    if bytes.len() > m + 1
        && bytes[m + 1] == b'|'
        && bytes[..=m].iter().all(|b| b.is_ascii_digit() || *b == b' ')
    {
        let number = if elsewhere { "" } else { line[..=m].trim() };
        return Line::Gutter(number.to_owned(), line[m + 2..].to_owned());
    }
    // `= note: ...`, and the continuation lines of a note's list.
    if bytes.iter().take_while(|b| **b == b' ').count() >= m {
        return Line::Indented(line[m..].to_owned());
    }
    Line::Plain(line)
}
