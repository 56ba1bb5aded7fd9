//! The evals' plumbing, against the emulators and the offline stand-in (it proves the
//! plumbing; it scores no model): the dataset and its committed schema, a slice of cases
//! through the real runtime, the JSON file and the comparison of two runs.

use std::path::Path;

use evals::case::{self, Category, Lang};
use evals::report::compare;
use evals::run::{Model, Runner};

#[test]
fn the_dataset_checks_out_and_covers_every_category_in_both_languages() {
    let cases = case::load_dir(&evals::dataset_dir()).unwrap_or_else(|e| panic!("{e}"));
    assert!(cases.len() >= 150, "{} cases", cases.len());
    for category in [
        Category::ToolChoice,
        Category::Arguments,
        Category::NoTool,
        Category::Knowledge,
        Category::Handoff,
        Category::Approval,
        Category::Injection,
    ] {
        for lang in [Lang::En, Lang::De] {
            let n = cases
                .iter()
                .filter(|c| c.category == category && c.lang == lang)
                .count();
            assert!(n >= 5, "{} in {lang:?}: {n} cases", category.as_str());
        }
    }
}

#[test]
fn the_committed_schema_is_what_the_types_derive() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("case.schema.json");
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert_eq!(
        committed,
        evals::schema_text(),
        "{} is stale: run `cargo run -p evals -- --write-schema`",
        path.display()
    );
}

#[tokio::test]
async fn a_slice_runs_through_the_runtime_and_two_runs_compare() {
    let vars: Vec<(String, String)> = std::env::vars()
        .filter(|(k, _)| {
            !matches!(
                k.as_str(),
                "OPENAI_API_KEY" | "OPENAI_BASE_URL" | "LLM_PROVIDER"
            )
        })
        .collect();
    test_support::dynamodb().await;
    let runner = Runner::start(vars, Model::StandIn)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(runner.stand_in);
    let all = case::load_dir(&evals::dataset_dir()).unwrap_or_else(|e| panic!("{e}"));
    let pick = |id: &str| {
        all.iter()
            .find(|c| c.id == id)
            .cloned()
            .unwrap_or_else(|| panic!("no case {id}"))
    };
    // A flight search the stand-in reads, a knowledge question, a greeting.
    let slice = vec![
        pick("en-fra-jfk-business-date"),
        pick("de-mm-verfall"),
        pick("de-hallo"),
    ];
    let mut seen = Vec::new();
    let run = evals::run_all(&runner, &slice, 2, |n, r| seen.push((n, r.id.clone())))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(seen.len(), 3);
    let ids: Vec<&str> = run.cases.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(
        ids,
        ["en-fra-jfk-business-date", "de-mm-verfall", "de-hallo"]
    );

    // The model's first step is what was scored: its calls, with the arguments as sent.
    let flight = &run.cases[0];
    assert_eq!(
        flight.observed.calls.first().map(|c| c.name.as_str()),
        Some("search_flights"),
        "{:?}",
        flight.observed
    );
    assert!(flight.verdict.passed, "{}", flight.verdict.explain());
    let arguments: serde_json::Value =
        serde_json::from_str(&flight.observed.calls[0].arguments).unwrap();
    assert_eq!(arguments["origin"], "FRA");
    assert_eq!(run.cases[1].observed.calls[0].name, "search_knowledge_base");
    assert!(run.cases[2].observed.calls.is_empty());
    assert!(!run.cases[2].observed.text.is_empty());
    assert!(run.render().contains("the offline stand-in"));

    // Written and read back, then compared: the greeting had failed before (fixed now),
    // and a copy of this run in which the flight fails is a regression.
    assert!(
        run.cases[2].verdict.passed,
        "{}",
        run.cases[2].verdict.explain()
    );
    let dir = std::env::temp_dir().join(format!("evals-{}", test_support::unique("run")));
    let file = dir.join("run.json");
    evals::write_run(&run, &file).unwrap_or_else(|e| panic!("{e}"));
    let mut before = evals::read_run(&file).unwrap_or_else(|e| panic!("{e}"));
    before.cases[2].verdict.passed = false;
    let mut now = run.clone();
    now.cases[0].verdict.passed = false;
    let changes = compare(&before, &now);
    assert_eq!(changes.regressions, ["en-fra-jfk-business-date"]);
    assert_eq!(changes.fixed, ["de-hallo"]);
    let rendered = changes.render(&before, &now);
    assert!(
        rendered.contains("regressions (1): en-fra-jfk-business-date"),
        "{rendered}"
    );
    let _ = std::fs::remove_dir_all(dir);
}
