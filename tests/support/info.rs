//! What the tests read from a server's INFO.

/// How many calls of `command` (lower case, as `cmdstat_get`) the text of
/// `INFO commandstats` counts; 0 if it has none.
pub fn command_calls(info: &str, command: &str) -> u64 {
    let prefix = format!("cmdstat_{command}:calls=");
    info.lines()
        .find_map(|line| line.strip_prefix(&prefix))
        .and_then(|rest| rest.split(',').next()?.parse().ok())
        .unwrap_or(0)
}
