//! Every sample event in `events/seatsaero-search/` runs through the handler against the
//! fakes and gets the status its file name ends with (`search-200.json` → 200).

mod common;

use common::{Fake, reply};

#[tokio::test]
async fn sample_events_get_their_status() {
    let fake = Fake::start().await.with_fixtures().await;
    let dir = test_support::event_path("seatsaero-search");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|ext| ext == "json"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 4,
        "sample events missing in {}",
        dir.display()
    );

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
        let (status, body) = reply(seatsaero_search::handle(&fake.deps, req).await);
        assert_eq!(status, expected, "{name}: {body}");
        if expected == 200 {
            assert_eq!(body["success"], serde_json::json!(true), "{name}");
            assert!(
                body["results"]["count"].as_u64().unwrap_or(0) > 0,
                "{name}: {body}"
            );
        }
    }
}
