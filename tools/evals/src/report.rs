//! The report of a run: a table per category, every failed case explained, a JSON file of
//! every case, and the comparison with an earlier run (regressions first).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::case::{Case, Category, Lang};
use crate::score::{Observed, Verdict};

/// One case of a run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CaseResult {
    /// The case's id.
    pub id: String,
    /// Its category.
    pub category: Category,
    /// Its language.
    pub lang: Lang,
    /// What the model did.
    pub observed: Observed,
    /// How that scored.
    pub verdict: Verdict,
}

impl CaseResult {
    /// The result of `case`.
    pub fn new(case: &Case, observed: Observed, verdict: Verdict) -> Self {
        Self {
            id: case.id.clone(),
            category: case.category,
            lang: case.lang,
            observed,
            verdict,
        }
    }
}

/// A whole run, as written to the JSON file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Run {
    /// The model asked, `<provider>:<model>`.
    pub model: String,
    /// Whether that was the offline stand-in: its scores prove the plumbing, not a model.
    pub stand_in: bool,
    /// The day the model was told is today, which relative dates resolve against.
    pub today: String,
    /// When the run started, RFC 3339.
    pub started_at: String,
    /// Every case, in dataset order.
    pub cases: Vec<CaseResult>,
}

/// Passed and all, of a group of cases.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Cases that passed.
    pub passed: usize,
    /// All cases.
    pub total: usize,
}

impl Tally {
    fn add(&mut self, passed: bool) {
        self.total += 1;
        self.passed += usize::from(passed);
    }

    fn rate(self) -> String {
        if self.total == 0 {
            return "-".into();
        }
        format!("{:.0} %", self.passed as f64 * 100.0 / self.total as f64)
    }
}

impl Run {
    /// The tally per category, and English and German apart.
    pub fn tallies(&self) -> (BTreeMap<Category, (Tally, Tally)>, Tally) {
        let mut per = BTreeMap::<Category, (Tally, Tally)>::new();
        let mut all = Tally::default();
        for case in &self.cases {
            let entry = per.entry(case.category).or_default();
            match case.lang {
                Lang::En => entry.0.add(case.verdict.passed),
                Lang::De => entry.1.add(case.verdict.passed),
            }
            all.add(case.verdict.passed);
        }
        (per, all)
    }

    /// The table and the failed cases, for the terminal.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "Tool-calling evals: {} cases against {}{}, today {}",
            self.cases.len(),
            self.model,
            if self.stand_in {
                " (the offline stand-in: this proves the plumbing, it scores no model)"
            } else {
                ""
            },
            self.today
        );
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "{:<12} {:>6} {:>7} {:>6}   {:>9} {:>9}",
            "category", "cases", "passed", "rate", "en", "de"
        );
        let (per, all) = self.tallies();
        let cell = |t: Tally| format!("{}/{}", t.passed, t.total);
        for (category, (en, de)) in &per {
            let both = Tally {
                passed: en.passed + de.passed,
                total: en.total + de.total,
            };
            let _ = writeln!(
                out,
                "{:<12} {:>6} {:>7} {:>6}   {:>9} {:>9}",
                category.as_str(),
                both.total,
                both.passed,
                both.rate(),
                cell(*en),
                cell(*de)
            );
        }
        let _ = writeln!(
            out,
            "{:<12} {:>6} {:>7} {:>6}",
            "all",
            all.total,
            all.passed,
            all.rate()
        );
        let failed: Vec<&CaseResult> = self.cases.iter().filter(|c| !c.verdict.passed).collect();
        if !failed.is_empty() {
            let _ = writeln!(out, "\nFailed ({}):", failed.len());
            for case in failed {
                let _ = writeln!(out, "  {}: {}", case.id, case.verdict.explain());
            }
        }
        out
    }
}

/// How a run differs from an earlier one, case by case.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Comparison {
    /// Passed before, fail now.
    pub regressions: Vec<String>,
    /// Failed before, pass now.
    pub fixed: Vec<String>,
    /// Not in the earlier run.
    pub new: Vec<String>,
    /// In the earlier run only (a partial run, or cases since removed).
    pub gone: Vec<String>,
}

/// Compares `now` with `before`.
pub fn compare(before: &Run, now: &Run) -> Comparison {
    let earlier: BTreeMap<&str, bool> = before
        .cases
        .iter()
        .map(|c| (c.id.as_str(), c.verdict.passed))
        .collect();
    let mut comparison = Comparison::default();
    for case in &now.cases {
        match earlier.get(case.id.as_str()) {
            None => comparison.new.push(case.id.clone()),
            Some(true) if !case.verdict.passed => comparison.regressions.push(case.id.clone()),
            Some(false) if case.verdict.passed => comparison.fixed.push(case.id.clone()),
            Some(_) => {}
        }
    }
    let current: std::collections::BTreeSet<&str> =
        now.cases.iter().map(|c| c.id.as_str()).collect();
    comparison.gone = before
        .cases
        .iter()
        .filter(|c| !current.contains(c.id.as_str()))
        .map(|c| c.id.clone())
        .collect();
    comparison
}

impl Comparison {
    /// The comparison for the terminal; `before` names the earlier run.
    pub fn render(&self, before: &Run, now: &Run) -> String {
        let mut out = String::new();
        let outcome: BTreeMap<&str, bool> = now
            .cases
            .iter()
            .map(|c| (c.id.as_str(), c.verdict.passed))
            .collect();
        let both: Vec<(bool, bool)> = before
            .cases
            .iter()
            .filter_map(|c| {
                outcome
                    .get(c.id.as_str())
                    .map(|now| (c.verdict.passed, *now))
            })
            .collect();
        let _ = writeln!(
            out,
            "Compared with the run of {} against {}: of the {} cases both ran, {} passed then, {} now.",
            before.started_at,
            before.model,
            both.len(),
            both.iter().filter(|(then, _)| *then).count(),
            both.iter().filter(|(_, now)| *now).count(),
        );
        if before.model != now.model {
            let _ = writeln!(
                out,
                "  (another model: differences are not regressions of one)"
            );
        }
        let list = |out: &mut String, what: &str, ids: &[String]| {
            if !ids.is_empty() {
                let _ = writeln!(out, "  {what} ({}): {}", ids.len(), ids.join(", "));
            }
        };
        list(&mut out, "regressions", &self.regressions);
        list(&mut out, "fixed", &self.fixed);
        list(&mut out, "not in the earlier run", &self.new);
        if !self.gone.is_empty() {
            let _ = writeln!(out, "  not run this time: {} cases", self.gone.len());
        }
        if self.regressions.is_empty() && self.fixed.is_empty() {
            let _ = writeln!(out, "  no case changed its outcome");
        }
        out
    }
}
