//! Every sample event in `events/amadeus-search/` goes through the handler against the fake
//! Amadeus and answers with the status its file name ends in (`search-200.json`).

mod common;

use common::*;

#[tokio::test]
async fn every_sample_event_answers_with_its_status() {
    let fake = fake().await;
    token_endpoint().mount(&fake.server).await;
    offers_for(FIXTURE_TOKEN)
        .respond_with(offers_reply())
        .mount(&fake.server)
        .await;
    let deps = deps(&fake).await;

    let dir = test_support::event_path("amadeus-search");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|ext| ext == "json"))
        .collect();
    files.sort();
    assert!(files.len() >= 2, "no sample events in {}", dir.display());

    for file in files {
        let name = file
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default()
            .to_owned();
        let expected: u16 = name
            .rsplit('-')
            .next()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("{name}: the file name must end in -<status>.json"));
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{name}: {e}"));
        let req = lambda_http::request::from_str(&text)
            .unwrap_or_else(|e| panic!("{name} is not an API Gateway event: {e}"));
        let (status, body, _) = call(&deps, req).await;
        assert_eq!(status, expected, "{name}: {body}");
        if expected == 200 {
            assert!(
                body["results"]["count"].as_u64().unwrap_or_default() > 0,
                "{name}: {body}"
            );
        }
    }
}
