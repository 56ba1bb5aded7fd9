//! Tables the code owns. Each follows a `<!-- generated: NAME -->` line in its page; `make
//! docs` writes them from the code and `make test` fails, naming the row, when a committed
//! page differs. A table's key column and the columns the code fills are rewritten; its other
//! columns are the page's prose, kept row by row.

use std::collections::{BTreeMap, BTreeSet};

use crate::cells;

/// Where a page keeps rows the code has but the page does not yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Rows stay in the tables and the order the page gives them (sections the page groups
    /// them in); new rows go to the end of the last table.
    Page,
    /// One table, in the code's order.
    Code,
}

/// One table (or one set of tables sharing a marker) as the code writes it.
#[derive(Debug, Clone)]
pub struct Owned {
    /// The marker's name: `<!-- generated: NAME -->`.
    pub name: &'static str,
    /// The header's cells.
    pub header: Vec<String>,
    /// How many columns after the key the code fills; the rest are prose.
    pub owned: usize,
    /// Key → the cells the code fills, in the code's order.
    pub rows: Vec<(String, Vec<String>)>,
    /// Keys whose rows the page writes whole (facts the code cannot state), kept as they are.
    pub kept: BTreeSet<String>,
    pub order: Order,
    /// Whether a row may leave its prose empty (the code's columns say it all).
    pub prose_optional: bool,
}

impl Owned {
    /// A table the code writes in `order`, its key column and `owned` columns from `rows`,
    /// every further column of `header` prose the page must write.
    pub fn new(
        name: &'static str,
        header: &[&str],
        owned: usize,
        order: Order,
        rows: Vec<(String, Vec<String>)>,
    ) -> Self {
        Self {
            name,
            header: header.iter().map(|c| (*c).to_owned()).collect(),
            owned,
            rows,
            kept: BTreeSet::new(),
            order,
            prose_optional: false,
        }
    }

    /// With rows the page writes whole.
    pub fn keeping(mut self, kept: BTreeSet<String>) -> Self {
        self.kept = kept;
        self
    }

    /// With prose a row may leave empty.
    pub fn prose_optional(mut self) -> Self {
        self.prose_optional = true;
        self
    }
}

/// A page with its generated tables rewritten, and where the committed page differed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Regenerated {
    pub text: String,
    pub problems: Vec<String>,
}

/// The marker line that precedes a generated table.
pub fn marker(name: &str) -> String {
    format!("<!-- generated: {name} -->")
}

/// A row's key: its first cell's first backticked name, or the cell.
pub fn key(cell: &str) -> String {
    cell.split('`').nth(1).unwrap_or(cell).to_owned()
}

struct Table {
    /// Lines of the page the table spans (after the marker).
    span: std::ops::Range<usize>,
    header: Vec<String>,
    rows: Vec<(String, Vec<String>)>,
}

fn tables(lines: &[&str], name: &str) -> Vec<Table> {
    let marker = marker(name);
    let mut found = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if line.trim() != marker {
            continue;
        }
        let start = i + 1;
        let end = lines[start..]
            .iter()
            .position(|l| !l.trim_start().starts_with('|'))
            .map_or(lines.len(), |n| start + n);
        let parsed: Vec<Vec<String>> = lines[start..end]
            .iter()
            .map(|l| cells(l).into_iter().map(str::to_owned).collect())
            .collect();
        let header = parsed.first().cloned().unwrap_or_default();
        let rows = parsed
            .iter()
            .skip(2)
            .map(|cells| (key(&cells[0]), cells.clone()))
            .collect();
        found.push(Table {
            span: start..end,
            header,
            rows,
        });
    }
    found
}

fn line(cells: &[String]) -> String {
    let escaped: Vec<String> = cells.iter().map(|c| c.replace('|', "\\|")).collect();
    format!("| {} |", escaped.join(" | "))
}

/// A prose cell of an old row: by its column's name, else by its place from the end (a
/// renamed prose column keeps its text).
fn prose(old: &Table, row: &[String], column: &str, from_end: usize) -> String {
    let at = old
        .header
        .iter()
        .position(|h| h == column)
        .or_else(|| old.header.len().checked_sub(from_end + 1));
    at.and_then(|at| row.get(at)).cloned().unwrap_or_default()
}

impl Owned {
    fn render(&self, key: &str, cells: &[String], old: Option<(&Table, &[String])>) -> Vec<String> {
        let mut row = vec![format!("`{key}`")];
        row.extend(cells.iter().cloned());
        let prose_columns = &self.header[1 + self.owned..];
        for (i, column) in prose_columns.iter().enumerate() {
            let from_end = prose_columns.len() - 1 - i;
            row.push(
                old.map(|(t, r)| prose(t, r, column, from_end))
                    .unwrap_or_default(),
            );
        }
        row
    }

    /// `markdown` (the page `page`) with this table rewritten from the code.
    pub fn regenerate(&self, page: &str, markdown: &str) -> Regenerated {
        let lines: Vec<&str> = markdown.lines().collect();
        let found = tables(&lines, self.name);
        if found.is_empty() {
            return Regenerated {
                text: markdown.to_owned(),
                problems: vec![format!("{page}: no `{}` line", marker(self.name))],
            };
        }
        let rendered = self.rows_by_table(&found);
        let problems = self.problems(page, &found, &rendered);
        let mut out: Vec<String> = Vec::new();
        let mut at = 0;
        for (table, rows) in found.iter().zip(&rendered) {
            out.extend(lines[at..table.span.start].iter().map(|l| (*l).to_owned()));
            out.push(line(&self.header));
            out.push(line(&vec!["---".to_owned(); self.header.len()]));
            out.extend(rows.iter().map(|r| line(r)));
            at = table.span.end;
        }
        out.extend(lines[at..].iter().map(|l| (*l).to_owned()));
        let mut text = out.join("\n");
        if markdown.ends_with('\n') {
            text.push('\n');
        }
        Regenerated { text, problems }
    }

    /// The rows each of the page's tables gets: kept rows as they are, the code's rows with
    /// their prose carried over, rows new to the page at the end of the last table.
    fn rows_by_table(&self, found: &[Table]) -> Vec<Vec<Vec<String>>> {
        let code: BTreeMap<&str, &Vec<String>> =
            self.rows.iter().map(|(k, c)| (k.as_str(), c)).collect();
        let placed: BTreeSet<&str> = found
            .iter()
            .flat_map(|t| t.rows.iter().map(|(k, _)| k.as_str()))
            .collect();
        // Where a key stood in the page (a row may move between tables of one marker).
        let old_row = |key: &str| {
            found.iter().find_map(|t| {
                t.rows
                    .iter()
                    .find(|(k, _)| k == key)
                    .map(|(_, r)| (t, r.as_slice()))
            })
        };
        let mut rendered = Vec::new();
        for (n, table) in found.iter().enumerate() {
            let keys: Vec<&str> = match self.order {
                Order::Code if n == 0 => self.rows.iter().map(|(k, _)| k.as_str()).collect(),
                Order::Code => Vec::new(),
                Order::Page => table.rows.iter().map(|(k, _)| k.as_str()).collect(),
            };
            let mut rows = Vec::new();
            for key in keys {
                if self.kept.contains(key) {
                    rows.extend(old_row(key).map(|(_, cells)| cells.to_vec()));
                } else if let Some(cells) = code.get(key) {
                    rows.push(self.render(key, cells, old_row(key)));
                }
            }
            if n + 1 == found.len() && self.order == Order::Page {
                let new = self
                    .rows
                    .iter()
                    .filter(|(k, _)| !placed.contains(k.as_str()));
                rows.extend(new.map(|(key, cells)| self.render(key, cells, None)));
            }
            rendered.push(rows);
        }
        rendered
    }

    /// Where the committed tables differ from `rendered`, and prose still to write.
    fn problems(&self, page: &str, found: &[Table], rendered: &[Vec<Vec<String>>]) -> Vec<String> {
        let mut problems = Vec::new();
        for (table, rows) in found.iter().zip(rendered) {
            if table.header != self.header {
                problems.push(format!(
                    "{page}: `{}` table: the header is {:?}, the code writes {:?}",
                    self.name, table.header, self.header
                ));
            }
            problems.extend(differences(page, self.name, table, rows));
        }
        for row in rendered.iter().flatten().filter(|_| !self.prose_optional) {
            for (cell, column) in row.iter().zip(&self.header).skip(1 + self.owned) {
                if cell.is_empty() {
                    problems.push(format!(
                        "{page}: `{}` table: row `{}` has no text in column \"{column}\": write it",
                        self.name,
                        key(&row[0])
                    ));
                }
            }
        }
        problems
    }
}

/// Rows the page lacks, has in excess, or states otherwise than the code.
fn differences(page: &str, name: &str, table: &Table, rows: &[Vec<String>]) -> Vec<String> {
    let mut problems = Vec::new();
    let new: BTreeMap<String, &Vec<String>> = rows.iter().map(|r| (key(&r[0]), r)).collect();
    for (key, old) in &table.rows {
        match new.get(key) {
            None => problems.push(format!(
                "{page}: `{name}` table: row `{key}` is not in the code (or belongs to another table)"
            )),
            Some(row) if *row != old => problems.push(format!(
                "{page}: `{name}` table: row `{key}` says {}, the code {}",
                line(old),
                line(row)
            )),
            Some(_) => {}
        }
    }
    let old: BTreeSet<&str> = table.rows.iter().map(|(k, _)| k.as_str()).collect();
    for key in new.keys().filter(|k| !old.contains(k.as_str())) {
        problems.push(format!(
            "{page}: `{name}` table: no row `{key}`, which the code has"
        ));
    }
    problems
}

/// Rewrites `page` (a path from the repository root) with `tables`; with `write`, saves it.
/// The problems are the committed page's differences (none left once written, but for
/// prose still to write).
pub fn apply(root: &std::path::Path, page: &str, tables: &[Owned], write: bool) -> Vec<String> {
    let path = root.join(page);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) => return vec![format!("{page}: {e}")],
    };
    let mut current = text.clone();
    let mut problems = Vec::new();
    for table in tables {
        let regenerated = table.regenerate(page, &current);
        problems.extend(regenerated.problems);
        current = regenerated.text;
    }
    if !write {
        return problems;
    }
    if current != text
        && let Err(e) = std::fs::write(&path, &current)
    {
        return vec![format!("{page}: {e}")];
    }
    // Written: only prose still to write remains a problem.
    tables
        .iter()
        .flat_map(|t| t.regenerate(page, &current).problems)
        .collect()
}
