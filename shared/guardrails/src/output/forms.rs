//! The link forms besides inline Markdown links: `<scheme:…>` autolinks, raw HTML tags
//! with a URL attribute, reference definitions (`[r]: url`) and bare URLs (`https://…`,
//! `www.…`), which renderers with GitHub's extensions and the web client turn into links.
//!
//! The rules read the text without its Markdown context (a renderer might put the same
//! characters in a paragraph, a table or a list) and so each is a superset of what a
//! renderer could make of it: a tag is read as leniently as a browser reads one, any `]:`
//! may begin a definition, a URL may begin anywhere. That keeps what the client sees
//! independent of how the answer was cut into pieces. [`off_list_links`] then reads the
//! whole answer as CommonMark does (with `pulldown-cmark`) and lists what a renderer would
//! still link off the list; the stream guard reports it, and the tests hold it empty.

use std::ops::Range;

use pulldown_cmark::{Event, LinkType, Parser, Tag};

use crate::links::LinkPolicy;

/// What replaces a link the policy refuses.
pub const LINK_REMOVED: &str = "[link removed]";
/// A bare URL longer than this is let through in parts (each checked on its own).
pub(super) const URL_HOLD: usize = 2048;
/// A tag or autolink still open after this many bytes is let through with its `<` spaced.
pub(super) const TAG_HOLD: usize = 400;

/// Tags that load, run or submit something whatever their attributes say.
const ACTIVE_TAGS: [&str; 16] = [
    "script", "style", "iframe", "frame", "frameset", "object", "embed", "applet", "form", "meta",
    "link", "base", "svg", "math", "template", "portal",
];
/// Attributes whose value a browser fetches or follows.
const URL_ATTRIBUTES: [&str; 16] = [
    "href",
    "src",
    "srcset",
    "action",
    "formaction",
    "poster",
    "background",
    "cite",
    "data",
    "ping",
    "lowsrc",
    "longdesc",
    "manifest",
    "codebase",
    "archive",
    "xlink:href",
];
/// Where the start of a bare URL may be: the beginnings of these, in any case.
const URL_STARTS: [&str; 3] = ["https://", "http://", "www."];

/// Ends a bare URL: what a URL cannot hold unescaped, and Markdown's brackets (a URL
/// running into a link's `[` would make two readings of the same text).
fn ends_url(c: char) -> bool {
    c.is_whitespace() || c.is_control() || "<>\"'`[]{}|\\^".contains(c)
}

/// Whether `c` would carry on a URL run.
pub(super) fn continues_url(c: char) -> bool {
    !ends_url(c)
}

/// The run a URL could be in at the end of `text`: after its last character that ends one.
pub(super) fn trailing_run(text: &str) -> &str {
    let start = text
        .char_indices()
        .rev()
        .find(|&(_, c)| ends_url(c))
        .map_or(0, |(i, c)| i + c.len_utf8());
    &text[start..]
}

/// Whether `run` holds the start of a URL, or ends with the beginning of one.
pub(super) fn may_be_url(run: &str) -> bool {
    let lower = run.to_ascii_lowercase();
    URL_STARTS
        .iter()
        .any(|p| lower.contains(p) || (1..p.len()).any(|n| lower.ends_with(&p[..n])))
}

/// A tag name or an autolink's scheme begins with a letter; a closing tag with `/`.
fn may_open_tag(next: Option<char>) -> bool {
    next.is_none_or(|c| c.is_ascii_alphabetic() || c == '/')
}

/// A tag as a browser reads it, from its `<`.
#[derive(Debug, PartialEq, Eq)]
enum Markup {
    /// `<scheme:…>`: the destination, and the end of the `>`.
    Autolink(Range<usize>, usize),
    /// A complete element tag; whether it may stay, and its end.
    Element { safe: bool, url: bool, end: usize },
    /// The text ends before the tag does.
    Open,
    /// Not a tag (`<` before a space, a digit, …).
    None,
}

/// Reads the tag that `<` at `at` opens in `text`.
fn read_tag(text: &str, at: usize, policy: &LinkPolicy) -> Markup {
    let bytes = text.as_bytes();
    let rest = &text[at + 1..];
    if !may_open_tag(rest.chars().next()) {
        return Markup::None;
    }
    if rest.is_empty() {
        return Markup::Open;
    }
    // An autolink: a scheme of 2–32 characters, `:`, then no space, `<` or `>`.
    let scheme_len = rest
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'.' | b'-'))
        .count();
    // Still only scheme characters: an autolink may follow.
    if scheme_len == rest.len() && scheme_len < 32 {
        return Markup::Open;
    }
    if (2..=32).contains(&scheme_len) && rest.as_bytes().get(scheme_len) == Some(&b':') {
        let dest_start = at + 1;
        let tail = &text[dest_start..];
        match tail.find(|c: char| c == '>' || c == '<' || c.is_whitespace() || c.is_control()) {
            Some(i) if bytes[dest_start + i] == b'>' => {
                return Markup::Autolink(dest_start..dest_start + i, dest_start + i + 1);
            }
            None => return Markup::Open,
            // A space or another `<`: not an autolink; perhaps a tag (`<a:b x="…">`).
            Some(_) => {}
        }
    }
    read_element(text, at, policy)
}

/// An element tag from its `<`: its name, then attributes with or without values.
fn read_element(text: &str, at: usize, policy: &LinkPolicy) -> Markup {
    let bytes = text.as_bytes();
    let mut i = at + 1;
    if bytes.get(i) == Some(&b'/') {
        i += 1;
    }
    // A name as HTML and CommonMark read one; anything else (`<https:…`, `<a.b`) is text,
    // whose URLs the bare-URL rule then sees.
    let name_start = i;
    while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'-') {
        i += 1;
    }
    let name = text[name_start..i].to_ascii_lowercase();
    match bytes.get(i) {
        _ if !name.starts_with(|c: char| c.is_ascii_alphabetic()) => {
            return if i >= bytes.len() {
                Markup::Open
            } else {
                Markup::None
            };
        }
        None => return Markup::Open,
        Some(b) if !b.is_ascii_whitespace() && !matches!(b, b'/' | b'>') => return Markup::None,
        Some(_) => {}
    }
    let mut safe = !ACTIVE_TAGS.contains(&name.as_str());
    let mut url = false;
    loop {
        while i < bytes.len() && (bytes[i].is_ascii_whitespace() || bytes[i] == b'/') {
            i += 1;
        }
        match bytes.get(i) {
            None => return Markup::Open,
            Some(b'>') => {
                return Markup::Element {
                    safe,
                    url,
                    end: i + 1,
                };
            }
            Some(_) => {}
        }
        let attr_start = i;
        while i < bytes.len()
            && !bytes[i].is_ascii_whitespace()
            && !matches!(bytes[i], b'/' | b'>' | b'=')
        {
            i += 1;
        }
        let attr = text[attr_start..i].to_ascii_lowercase();
        let mut j = i;
        while j < bytes.len() && bytes[j].is_ascii_whitespace() {
            j += 1;
        }
        let mut value = "";
        if bytes.get(j) == Some(&b'=') {
            j += 1;
            while j < bytes.len() && bytes[j].is_ascii_whitespace() {
                j += 1;
            }
            match bytes.get(j) {
                None => return Markup::Open,
                Some(&quote @ (b'"' | b'\'')) => match text[j + 1..].find(quote as char) {
                    Some(close) => {
                        value = &text[j + 1..j + 1 + close];
                        j += close + 2;
                    }
                    None => return Markup::Open,
                },
                Some(_) => {
                    let start = j;
                    while j < bytes.len() && !bytes[j].is_ascii_whitespace() && bytes[j] != b'>' {
                        j += 1;
                    }
                    value = &text[start..j];
                }
            }
            i = j;
        }
        if attr.starts_with("on") || attr == "style" || attr == "srcset" {
            safe = false;
        } else if URL_ATTRIBUTES.contains(&attr.as_str()) {
            url = true;
            safe &= policy.allows(value.trim());
        }
    }
}

/// Whether a definition's destination could take the browser elsewhere: it names a
/// scheme, or starts with `//` (or a backslash, which browsers read as a slash).
fn leaves_the_page(dest: &str) -> bool {
    let dest = dest.trim_start_matches('<');
    // A scheme as URLs spell one; anything else before a `:` makes a relative path.
    let scheme = dest.find(':').is_some_and(|i| {
        dest[..i].starts_with(|c: char| c.is_ascii_alphabetic())
            && dest[..i]
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'.' | b'-'))
    });
    scheme || dest.starts_with("//") || dest.starts_with("/\\") || dest.starts_with('\\')
}

/// The destination after a `]:` at `at`: spaces and at most one line break, then a run
/// without spaces. `None` when the text ends first (the definition may still come).
fn definition_destination(text: &str, at: usize) -> Option<Range<usize>> {
    let bytes = text.as_bytes();
    let mut i = at + 2;
    let mut line_breaks = 0;
    while i < bytes.len() && matches!(bytes[i], b' ' | b'\t' | b'\n') {
        line_breaks += usize::from(bytes[i] == b'\n');
        i += 1;
    }
    if i >= bytes.len() || line_breaks > 1 {
        return None;
    }
    let end = text[i..]
        .find(|c: char| c.is_whitespace())
        .map_or(bytes.len(), |n| i + n);
    Some(i..end)
}

/// Where a bare URL begins at `at`, if one does.
fn url_starts_at(text: &str, at: usize, before: Option<char>) -> bool {
    let rest = &text.as_bytes()[at..];
    let starts =
        |p: &str| rest.len() >= p.len() && rest[..p.len()].eq_ignore_ascii_case(p.as_bytes());
    if starts("https://") || starts("http://") {
        return true;
    }
    // `www.` only as a word of its own, as renderers read it.
    starts("www.")
        && text[..at]
            .chars()
            .next_back()
            .or(before)
            .is_none_or(|c| !(c.is_alphanumeric() || ".-@/:%".contains(c)))
}

/// Where the run of characters a URL may hold, from `at`, ends.
fn run_end(text: &str, at: usize) -> usize {
    text[at..].find(ends_url).map_or(text.len(), |n| at + n)
}

/// Whether the bare URL that begins at `at` and every one that begins inside it (a
/// linkifier may start one at each) stay on the list. `www.` alone makes no link.
fn bare_urls_allowed(text: &str, at: usize, before: Option<char>, policy: &LinkPolicy) -> bool {
    let end = run_end(text, at);
    (at..end)
        .filter(|&j| j == at || (text.is_char_boundary(j) && url_starts_at(text, j, before)))
        .all(|j| {
            let url = &text[j..url_end(text, j)];
            let www = url.len() >= 3 && url[..3].eq_ignore_ascii_case("www");
            match www {
                true if url.len() <= 4 => true,
                true => policy.allows(&format!("https://{url}")),
                false => policy.allows(url),
            }
        })
}

/// The end of the bare URL that begins at `at`: at a character a URL cannot hold, less
/// trailing punctuation and an unbalanced `)`.
fn url_end(text: &str, at: usize) -> usize {
    let mut end = run_end(text, at);
    loop {
        let run = &text[at..end];
        match run.chars().next_back() {
            Some(c) if ".,:;!?*_~".contains(c) => end -= c.len_utf8(),
            Some(')') if run.matches(')').count() > run.matches('(').count() => end -= 1,
            _ => return end,
        }
    }
}

/// Rewrites `text` so no link form leads off the list: an off-list autolink, bare URL or
/// definition's destination becomes [`LINK_REMOVED`], as does a tag with an off-list URL
/// attribute; an active tag (script, style, an event handler, …) becomes a space; a `<`
/// that opens no complete tag gets a space so no later text can complete one. Nothing
/// begins inside `skip` (inline links' destinations, which the link pattern checks).
/// `before` is the character shown before `text`; returns how many links were removed.
/// `kept` (allowed links) is moved along: a link a removed tag swallowed is kept no more.
pub(super) fn rewrite(
    text: &str,
    before: Option<char>,
    skip: &[Range<usize>],
    kept: &mut [Range<usize>],
    policy: &LinkPolicy,
) -> (String, usize) {
    let mut out = String::with_capacity(text.len());
    let mut removed = 0;
    let mut i = 0;
    let mut copied = 0;
    let bytes = text.as_bytes();
    // What was replaced in `text`, and how much longer `out` grew from its end on.
    let mut edits: Vec<(Range<usize>, isize)> = Vec::new();
    let mut replace = |out: &mut String, copied: &mut usize, range: Range<usize>, with: &str| {
        out.push_str(&text[*copied..range.start]);
        out.push_str(with);
        *copied = range.end;
        let growth = with.len() as isize - range.len() as isize;
        edits.push((range, growth));
    };
    while i < bytes.len() {
        if let Some(skipped) = skip.iter().find(|r| r.start == i) {
            i = skipped.end.max(i + 1);
            continue;
        }
        match bytes[i] {
            b'<' => match read_tag(text, i, policy) {
                Markup::Autolink(dest, end) => {
                    if !policy.allows(&text[dest]) {
                        removed += 1;
                        replace(&mut out, &mut copied, i..end, LINK_REMOVED);
                    }
                    i = end;
                    continue;
                }
                // A tag that may stay is read on from its name: CommonMark may not take it
                // for a tag (`<b <https://…>`), and what it holds is then text and links.
                Markup::Element {
                    safe: false,
                    url,
                    end,
                } => {
                    removed += usize::from(url);
                    // A space, not nothing: the text on both sides must not join into one URL.
                    replace(
                        &mut out,
                        &mut copied,
                        i..end,
                        if url { LINK_REMOVED } else { " " },
                    );
                    i = end;
                    continue;
                }
                Markup::Element { .. } => {}
                Markup::Open => replace(&mut out, &mut copied, i..i + 1, "< "),
                Markup::None => {}
            },
            b']' if bytes.get(i + 1) == Some(&b':') => {
                if let Some(dest) = definition_destination(text, i) {
                    let target = text[dest.clone()].trim_matches(['<', '>']);
                    if leaves_the_page(&text[dest.clone()]) && !policy.allows(target) {
                        removed += 1;
                        replace(&mut out, &mut copied, dest.clone(), LINK_REMOVED);
                        i = dest.end.max(i + 2);
                    } else {
                        // A destination that stays may still hold a bare URL.
                        i = dest.start.max(i + 2);
                    }
                    continue;
                }
            }
            _ if url_starts_at(text, i, before) => {
                let end = url_end(text, i);
                if !bare_urls_allowed(text, i, before, policy) {
                    removed += 1;
                    replace(&mut out, &mut copied, i..end, LINK_REMOVED);
                }
                i = end.max(i + 1);
                continue;
            }
            _ => {}
        }
        i += text[i..].chars().next().map_or(1, char::len_utf8);
    }
    out.push_str(&text[copied..]);
    let moved = |p: usize| {
        let growth: isize = edits
            .iter()
            .filter(|(edit, _)| edit.end <= p)
            .map(|(_, g)| g)
            .sum();
        p.saturating_add_signed(growth).min(out.len())
    };
    for range in kept.iter_mut() {
        let swallowed = edits.iter().any(|(edit, _)| {
            edit.start < range.end
                && edit.end > range.start
                && (edit.start < range.start || edit.end > range.end)
        });
        *range = if swallowed {
            0..0
        } else {
            moved(range.start)..moved(range.end)
        };
    }
    (out, removed)
}

/// Whether a link's text, standing in for the link, would continue a tag that `before`
/// (what is shown before it) leaves open, or leave one open itself: then it keeps its
/// brackets, which no tag name or attribute can be read through as one.
pub(super) fn in_open_tag(before: &str, text: &str) -> bool {
    let open = |s: &str| {
        s.rfind('<')
            .is_some_and(|at| read_tag(s, at, &LinkPolicy::default()) == Markup::Open)
    };
    open(before) || text.contains('<')
}

/// `cut`, moved back to the start of the first link form in `text` that it would split: a
/// tag or autolink, a definition's destination, a bare URL. Each piece then holds whole
/// forms, read as the whole answer reads them. `before` is the character `text` follows.
pub(super) fn safe_cut(text: &str, cut: usize, before: Option<char>) -> usize {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < cut {
        let end = match bytes[i] {
            b'<' => {
                let whole = read_tag(text, i, &LinkPolicy::default());
                let piece = read_tag(&text[..cut], i, &LinkPolicy::default());
                match whole {
                    Markup::Autolink(_, end) | Markup::Element { end, .. } => Some(end),
                    Markup::Open if text.len() - i < TAG_HOLD => Some(text.len() + 1),
                    // Open in the piece, not in the text: the piece would read it otherwise.
                    _ if piece == Markup::Open => Some(cut + 1),
                    Markup::Open | Markup::None => None,
                }
            }
            b']' if bytes.get(i + 1) == Some(&b':') => {
                definition_destination(text, i).map(|d| d.end)
            }
            // The whole run: the reading of a URL depends on all of it.
            _ if url_starts_at(text, i, before) => {
                Some(run_end(text, i)).filter(|end| end - i < URL_HOLD)
            }
            _ => None,
        };
        if end.is_some_and(|end| end > cut) {
            return i;
        }
        i += text[i..].chars().next().map_or(1, char::len_utf8);
    }
    cut
}

/// Bytes at the end of `text` that could still become a link form and so are held back:
/// an open tag or autolink, a `]` that may become a definition's `]:`, a definition whose
/// destination has not ended, a URL (or the start of one) not yet ended.
pub(super) fn hold(text: &str) -> usize {
    let bytes = text.as_bytes();
    let mut from = text.len();
    // The trailing run a URL may be in.
    let run = trailing_run(text);
    if run.len() < URL_HOLD && may_be_url(run) {
        from = text.len() - run.len();
    }
    let floor = text.len().saturating_sub(TAG_HOLD);
    let mut i = floor;
    while i < text.len() {
        if !text.is_char_boundary(i) {
            i += 1;
            continue;
        }
        match bytes[i] {
            b'<' => match read_tag(text, i, &LinkPolicy::default()) {
                Markup::Open => return text.len() - from.min(i),
                Markup::Autolink(_, end) | Markup::Element { end, .. } => {
                    i = end;
                    continue;
                }
                Markup::None => {}
            },
            b']' if i + 1 == text.len() => from = from.min(i),
            b']' if bytes[i + 1] == b':' => {
                let open = definition_destination(text, i).is_none_or(|d| d.end == text.len());
                if open && text[i + 2..].matches('\n').count() <= 1 {
                    from = from.min(i);
                }
            }
            _ => {}
        }
        i += 1;
    }
    text.len() - from
}

/// What a CommonMark renderer would still link off the list in `text`: links, images and
/// autolinks with an off-list destination, reference definitions leaving the page, and
/// HTML carrying an off-list URL attribute or an active tag.
pub fn off_list_links(text: &str, policy: &LinkPolicy) -> Vec<String> {
    let parser = Parser::new(text).into_offset_iter();
    let mut found: Vec<String> = parser
        .reference_definitions()
        .iter()
        .filter(|(_, def)| leaves_the_page(&def.dest) && !policy.allows(&def.dest))
        .map(|(_, def)| def.dest.to_string())
        .collect();
    for (event, range) in parser {
        match event {
            Event::Start(Tag::Link {
                link_type,
                dest_url,
                ..
            })
            | Event::Start(Tag::Image {
                link_type,
                dest_url,
                ..
            }) => {
                let relative = !leaves_the_page(&dest_url) && link_type != LinkType::Email;
                if !relative && link_type != LinkType::Email && !policy.allows(&dest_url) {
                    found.push(dest_url.to_string());
                }
            }
            Event::Html(html) | Event::InlineHtml(html) => {
                let mut i = 0;
                while let Some(at) = html[i..].find('<').map(|n| i + n) {
                    match read_tag(&html, at, policy) {
                        Markup::Element {
                            safe: false, end, ..
                        } => {
                            found.push(text[range.clone()].to_owned());
                            i = end;
                        }
                        Markup::Element { end, .. } | Markup::Autolink(_, end) => i = end,
                        Markup::Open | Markup::None => i = at + 1,
                    }
                }
            }
            _ => {}
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> LinkPolicy {
        LinkPolicy::new(["seats.aero", ".united.com"])
    }

    fn rewritten(text: &str) -> String {
        rewrite(text, None, &[], &mut [], &policy()).0
    }

    #[test]
    fn every_form_off_the_list_is_removed() {
        for (text, shown) in [
            (
                "see <https://evil.example/c?d=1> now",
                "see [link removed] now",
            ),
            (
                "see <https://seats.aero/x> now",
                "see <https://seats.aero/x> now",
            ),
            ("go to https://evil.example/c?d=1.", "go to [link removed]."),
            (
                "go to https://seats.aero/x?y=1.",
                "go to https://seats.aero/x?y=1.",
            ),
            ("visit www.evil.example today", "visit [link removed] today"),
            ("visit www.united.com today", "visit www.united.com today"),
            ("HTTPS://EVIL.EXAMPLE/x", "[link removed]"),
            (
                "![s][1]\n\n[1]: https://evil.example/c",
                "![s][1]\n\n[1]: [link removed]",
            ),
            ("[1]:\n  //evil.example/c", "[1]:\n  [link removed]"),
            ("[1]: see page 4", "[1]: see page 4"),
            ("<img src=\"https://evil.example/c\">", "[link removed]"),
            ("<img src=https://evil.example/c>", "[link removed]"),
            (
                "<a href='https://seats.aero/x'>ok</a>",
                "<a href='https://seats.aero/x'>ok</a>",
            ),
            ("<IMG SRC=\"https://evil.example\">", "[link removed]"),
            ("<b onmouseover=\"x()\">hi</b>", " hi</b>"),
            ("<script>alert(1)</script>", " alert(1) "),
            ("<img alt=\">\" src=\"//evil.example/c\">", "[link removed]"),
            ("a <b and c", "a < b and c"),
            ("1 < 2 and 3<4", "1 < 2 and 3<4"),
            ("mail <me@example.com>", "mail <me@example.com>"),
        ] {
            assert_eq!(rewritten(text), shown, "{text}");
        }
    }

    #[test]
    fn inline_link_destinations_are_left_to_the_link_pattern() {
        let text = "x https://evil.example/a [U](https://evil.example/b) y";
        let dest = text.find("https://evil.example/b").unwrap_or_default();
        let skip = [Range {
            start: dest,
            end: dest + 22,
        }];
        let (shown, removed) = rewrite(text, None, &skip, &mut [], &policy());
        assert_eq!(removed, 1);
        assert_eq!(shown, "x [link removed] [U](https://evil.example/b) y");
    }

    #[test]
    fn what_may_still_become_a_link_is_held() {
        for (text, held) in [
            ("see https://evil.exa", "https://evil.exa"),
            ("see htt", "htt"),
            ("see ww", "ww"),
            ("see <img src=\"https://", "<img src=\"https://"),
            ("see <", "<"),
            ("[1]", "]"),
            ("[1]: https://x", "]: https://x"),
            ("[1]:\n", "]:\n"),
            ("plain words", ""),
            ("a < b", ""),
            ("<b>bold</b> and", ""),
        ] {
            assert_eq!(&text[text.len() - hold(text)..], held, "{text}");
        }
    }

    #[test]
    fn the_parser_finds_what_a_renderer_would_link() {
        let policy = policy();
        for text in [
            "[a](https://evil.example)",
            "<https://evil.example>",
            "![i][r]\n\n[r]: https://evil.example/p.png",
            "<img src=\"https://evil.example\">",
            "para\n\n<div onclick=\"x()\">x</div>",
        ] {
            assert!(!off_list_links(text, &policy).is_empty(), "{text}");
        }
        for text in [
            "[a](https://seats.aero/x) and <https://www.united.com>",
            "[a][r]\n\n[r]: https://seats.aero/y",
            "<b>bold</b>, [local](/help), <me@example.com>",
            "[link removed] and [1]: [link removed]",
        ] {
            assert_eq!(
                off_list_links(text, &policy),
                Vec::<String>::new(),
                "{text}"
            );
        }
    }
}
