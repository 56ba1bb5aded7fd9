//! The one-fact-one-place checks on a fixture that breaks each rule once, and on texts that
//! must pass.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use docs_check::anchors::{anchors, broken_anchors, slug};
use docs_check::facts::{
    API_PAGE, SETTINGS_PAGE, first_cells, foreign_rows, repeated_sentences, restated_defaults,
};
use shared::config::VarDefault;

const FIXTURE: &str = include_str!("../fixtures/duplicated.md");

fn defaults() -> BTreeMap<String, VarDefault> {
    [
        ("MAX_TOOL_STEPS", "4"),
        ("LlmProvider", "openai"),
        ("AmadeusEnv", "test"),
    ]
    .into_iter()
    .map(|(name, value)| (name.to_owned(), VarDefault::Value(value.to_owned())))
    .collect()
}

#[test]
fn a_default_given_outside_the_settings_page_is_reported_once() {
    let found = restated_defaults(FIXTURE, &defaults());
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("line 3:") && found[0].contains("MAX_TOOL_STEPS"));
}

#[test]
fn defaults_are_recognised_in_their_usual_wordings() {
    let defaults = defaults();
    for text in [
        "`MAX_TOOL_STEPS` (default 4) rounds",
        "`MAX_TOOL_STEPS`, 4, rounds",
        "`MAX_TOOL_STEPS` defaults to 4.",
        "`MAX_TOOL_STEPS` (4 rounds)",
    ] {
        assert_eq!(restated_defaults(text, &defaults).len(), 1, "{text}");
    }
    for text in [
        "`MAX_TOOL_STEPS` (40)",
        "`MAX_TOOL_STEPS` rounds. Then 4 more",
        "`MAX_TOOL_STEPS` (see its default)",
        "```text\n`MAX_TOOL_STEPS` (4)\n```",
    ] {
        assert!(restated_defaults(text, &defaults).is_empty(), "{text}");
    }
}

#[test]
fn rows_about_routes_codes_and_settings_belong_to_their_pages() {
    let codes = BTreeSet::from(["not_found".to_owned()]);
    let settings = BTreeSet::from(["MAX_TOOL_STEPS".to_owned()]);
    let found = foreign_rows(FIXTURE, "docs/web.md", &codes, &settings);
    assert_eq!(found.len(), 3, "{found:?}");
    assert!(found[0].contains("GET /chats") && found[0].contains(API_PAGE));
    assert!(found[1].contains("not_found") && found[1].contains(API_PAGE));
    assert!(found[2].contains("MAX_TOOL_STEPS") && found[2].contains(SETTINGS_PAGE));
    // The owning page may have its rows.
    let own = foreign_rows(FIXTURE, SETTINGS_PAGE, &codes, &settings);
    assert_eq!(own.len(), 2, "{own:?}");
}

#[test]
fn a_table_s_first_cells_are_its_names() {
    assert_eq!(
        first_cells(FIXTURE, "code"),
        BTreeSet::from(["not_found".to_owned()])
    );
}

#[test]
fn a_sentence_written_twice_is_reported_with_its_first_place() {
    let pages = [("docs/a.md".to_owned(), FIXTURE.to_owned())];
    let found = repeated_sentences(&pages);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains("line 26") && found[0].contains("docs/a.md:19"),
        "{found:?}"
    );
    // The same sentence in a second page is reported there, too.
    let two = [
        (
            "docs/a.md".to_owned(),
            "One two three four five six seven eight nine ten.\n".to_owned(),
        ),
        (
            "docs/b.md".to_owned(),
            "- One two three four five six seven eight [nine](x.md) ten.\n".to_owned(),
        ),
    ];
    assert_eq!(repeated_sentences(&two).len(), 1);
    let short = [(
        "docs/a.md".to_owned(),
        "See below.\n\nSee below.\n".to_owned(),
    )];
    assert!(repeated_sentences(&short).is_empty());
}

#[test]
fn anchors_follow_github_s_rule() {
    assert_eq!(slug(" `POST /chat`"), "post-chat");
    assert_eq!(
        slug(" Secrets, logging and the AWS SDK"),
        "secrets-logging-and-the-aws-sdk"
    );
    assert_eq!(
        slug(" The pipeline: admit → run → record"),
        "the-pipeline-admit--run--record"
    );
    let page = anchors(
        "# Title\n## Retry\n### Retry\n<a id=\"custom\"></a>\n```sh\n# not a heading\n```\n",
    );
    assert!(page.contains("retry") && page.contains("retry-1") && page.contains("custom"));
    assert!(!page.contains("not-a-heading"));
}

#[test]
fn a_link_to_a_missing_heading_is_reported() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let found = broken_anchors(FIXTURE, &dir);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(
        found[0]
            .contains("#a-page-that-writes-down-facts-other-pages-own-used-by-teststests-factsrs")
    );
    assert!(found[1].contains("broken.md#no-such-heading"));
}
