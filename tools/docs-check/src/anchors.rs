//! Link fragments: `page.md#section` and `#section` must name a heading of that page, as
//! GitHub renders it (its anchor rule: lower case; letters, digits, `-` and `_` kept; spaces
//! become `-`; a repeated heading gets `-1`, `-2`, ...), or an explicit `id="..."`.

use std::collections::BTreeSet;
use std::path::Path;

use crate::link_targets;

/// GitHub's anchor of a heading's text.
pub fn slug(heading: &str) -> String {
    // A link in a heading contributes its text only.
    let mut text = String::new();
    let mut rest = heading;
    while let Some(at) = rest.find("](") {
        text.push_str(&rest[..at]);
        rest = &rest[at + 2..];
        rest = rest.find(')').map_or("", |end| &rest[end + 1..]);
    }
    text.push_str(rest);
    text.trim()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            '-' | '_' => Some(c),
            c if c.is_alphanumeric() => Some(c.to_lowercase().next().unwrap_or(c)),
            _ => None,
        })
        .collect()
}

/// The anchors a page offers: its headings' slugs and its `id="..."` attributes.
pub fn anchors(markdown: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut in_code = false;
    for line in markdown.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        if let Some(heading) = trimmed.strip_prefix('#') {
            let base = slug(heading.trim_start_matches('#'));
            let mut anchor = base.clone();
            let mut n = 0;
            while found.contains(&anchor) {
                n += 1;
                anchor = format!("{base}-{n}");
            }
            found.insert(anchor);
        }
        for (at, _) in line.match_indices("id=\"") {
            let rest = &line[at + 4..];
            if let Some(end) = rest.find('"') {
                found.insert(rest[..end].to_owned());
            }
        }
    }
    found
}

/// Fragment links of `markdown` (a page in `dir`) that name no anchor of their page. Links
/// to files that are not Markdown, or that do not exist (reported elsewhere), are skipped.
pub fn broken_anchors(markdown: &str, dir: &Path) -> Vec<String> {
    let own = anchors(markdown);
    let links = link_targets(markdown)
        .into_iter()
        .filter(|(_, target)| !target.contains("://") && !target.starts_with("mailto:"));
    let mut problems = Vec::new();
    for (line, target) in links {
        let Some((path, fragment)) = target.split_once('#') else {
            continue;
        };
        let offered = if path.is_empty() {
            own.clone()
        } else if path.ends_with(".md") {
            match std::fs::read_to_string(dir.join(path)) {
                Ok(text) => anchors(&text),
                Err(_) => continue,
            }
        } else {
            continue;
        };
        if !offered.contains(fragment) {
            problems.push(format!(
                "line {line}: the link to {target} names no heading of {}",
                if path.is_empty() { "this page" } else { path }
            ));
        }
    }
    problems
}
