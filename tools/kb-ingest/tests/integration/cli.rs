//! The command's wiring: arguments and their defaults, the API key from the environment or
//! from Secrets Manager (moto), and a whole run against DynamoDB Local.

use crate::common;

use crate::common::{Docs, FakeEmbeddings, manifests_with_prefix};
use clap::Parser;
use kb_ingest::{Args, Progress, run};
use shared::config::Env;
use shared::kb::chunker::ChunkerConfig;

fn parse(args: &[&str]) -> Args {
    let mut argv = vec!["kb-ingest", "--table", "KbTestTable"];
    argv.extend_from_slice(args);
    Args::try_parse_from(argv).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn defaults_and_prune_rules() {
    let docs = Docs::new();
    let file = docs.write("a.md", "# A\n\ntext");
    let dir = docs.path().to_str().unwrap_or_default().to_owned();
    let file = file.to_str().unwrap_or_default().to_owned();

    let args = parse(&[]);
    assert_eq!(args.paths, [std::path::PathBuf::from("infra/kb/docs")]);
    let options = args.options();
    assert_eq!(options.chunker, ChunkerConfig::new(800, 100));
    assert_eq!(options.batch_size, 64);
    assert!(!options.dry_run && !options.drop_embeddings);
    assert_eq!(options.id_prefix, "");

    assert!(parse(&[&dir]).prune(), "a folder: prune by default");
    assert!(
        !parse(&[&file]).prune(),
        "a single file: no prune by default"
    );
    assert!(!parse(&[&dir, &file]).prune());
    assert!(parse(&[&file, "--prune"]).prune());
    assert!(!parse(&[&dir, "--no-prune"]).prune());
    assert!(
        parse(&[&dir, "--no-prune", "--prune"]).prune(),
        "the last flag wins"
    );

    let args = parse(&[
        "--chunk-size",
        "400",
        "--chunk-overlap",
        "50",
        "--batch-size",
        "0",
        "--dry-run",
    ]);
    let options = args.options();
    assert_eq!(options.chunker, ChunkerConfig::new(400, 50));
    assert_eq!(options.batch_size, 1);
    assert!(options.dry_run);
}

#[test]
fn embeddings_configuration_from_flags_and_environment() {
    let env = Env::from_pairs([
        ("OPENAI_BASE_URL", "https://api.openai.com/v1"),
        ("EMBEDDINGS_DIMENSIONS", "256"),
    ]);
    let config = parse(&[]).embeddings_config(&env).ok().flatten();
    assert_eq!(
        config.as_ref().and_then(|c| c.base_url()),
        Some("https://api.openai.com/v1")
    );
    assert_eq!(
        config.as_ref().map(|c| c.model.as_str()),
        Some("text-embedding-3-small")
    );
    assert_eq!(config.and_then(|c| c.dimensions), Some(256));

    assert_eq!(
        parse(&["--no-embeddings"]).embeddings_config(&env).ok(),
        Some(None)
    );
    assert_eq!(
        parse(&[]).embeddings_config(&Env::default()).ok(),
        Some(None)
    );

    let config = parse(&[
        "--embeddings-base-url",
        "http://127.0.0.1:8088",
        "--embeddings-model",
        "all-minilm-l6-v2",
        "--embeddings-dimensions",
        "384",
    ])
    .embeddings_config(&Env::default())
    .ok()
    .flatten();
    assert_eq!(
        config.as_ref().and_then(|c| c.base_url()),
        Some("http://127.0.0.1:8088")
    );
    assert_eq!(
        config.as_ref().map(|c| c.model.as_str()),
        Some("all-minilm-l6-v2")
    );
    assert_eq!(config.and_then(|c| c.dimensions), Some(384));
}

async fn authorization_sent(fake: &FakeEmbeddings) -> Vec<String> {
    fake.server
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .filter_map(|r| {
            r.headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        })
        .collect()
}

#[tokio::test]
async fn a_whole_run_with_the_key_from_the_environment() {
    let fake = FakeEmbeddings::start(8).await;
    let docs = Docs::new();
    docs.write("miles.md", "# Miles\n\nOne.\n\n## More\n\nTwo.");
    let prefix = test_support::unique("cli") + "-";
    let table = test_support::require_env("KB_TABLE");
    let dir = docs.path().to_str().unwrap_or_default().to_owned();
    let args = Args::try_parse_from([
        "kb-ingest",
        &dir,
        "--table",
        &table,
        "--id-prefix",
        &prefix,
        "--embeddings-base-url",
        &fake.server.uri(),
        "--embeddings-model",
        "fake-model",
    ])
    .unwrap_or_else(|e| panic!("{e}"));
    let env = Env::from_pairs([("EMBEDDINGS_API_KEY", "sk-direct")]);

    let report = run(&args, &env, &Progress::silent())
        .await
        .unwrap_or_else(|e| panic!("run: {e}"));
    assert_eq!(report.added, [format!("{prefix}miles")]);
    assert_eq!(report.chunks_written, 2);
    assert_eq!(authorization_sent(&fake).await, ["Bearer sk-direct"]);
    let store = common::dynamo_store().await;
    assert_eq!(manifests_with_prefix(&store, &prefix).await.len(), 1);

    let again = run(&args, &env, &Progress::silent())
        .await
        .unwrap_or_else(|e| panic!("run: {e}"));
    assert!(!again.changed());
    assert!(
        again.to_string().contains("KB version unchanged"),
        "{again}"
    );
}

#[tokio::test]
async fn the_key_can_come_from_secrets_manager() {
    let secret = test_support::create_secret("kb-ingest-embeddings-key", "sk-from-secret").await;
    let fake = FakeEmbeddings::start(8).await;
    let docs = Docs::new();
    docs.write("notes.txt", "Plain text.");
    let prefix = test_support::unique("cli-secret") + "-";
    let table = test_support::require_env("KB_TABLE");
    let dir = docs.path().to_str().unwrap_or_default().to_owned();
    let args = Args::try_parse_from(["kb-ingest", &dir, "--table", &table, "--id-prefix", &prefix])
        .unwrap_or_else(|e| panic!("{e}"));
    let env = Env::from_pairs([
        ("EMBEDDINGS_BASE_URL", fake.server.uri()),
        ("EMBEDDINGS_API_KEY_SECRET", secret),
    ]);
    let report = run(&args, &env, &Progress::silent())
        .await
        .unwrap_or_else(|e| panic!("run: {e}"));
    assert_eq!(
        report.embedding_model.as_deref(),
        Some("text-embedding-3-small")
    );
    assert_eq!(authorization_sent(&fake).await, ["Bearer sk-from-secret"]);

    // A secret that does not exist is a configuration error naming the variable.
    let env = Env::from_pairs([
        ("EMBEDDINGS_BASE_URL", fake.server.uri()),
        (
            "EMBEDDINGS_API_KEY_SECRET",
            test_support::unique("missing-secret"),
        ),
    ]);
    let err = run(&args, &env, &Progress::silent())
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("EMBEDDINGS_API_KEY_SECRET"), "{err}");
}

#[tokio::test]
async fn an_empty_folder_prunes_only_when_asked_explicitly() {
    let fake = FakeEmbeddings::start(8).await;
    let docs = Docs::new();
    docs.write("miles.md", "# Miles\n\nOne.");
    let prefix = test_support::unique("cli-empty") + "-";
    let table = test_support::require_env("KB_TABLE");
    let dir = docs.path().to_str().unwrap_or_default().to_owned();
    let env = Env::from_pairs([("EMBEDDINGS_BASE_URL", fake.server.uri())]);
    let args = |extra: &[&str]| {
        let mut argv = vec![
            "kb-ingest",
            dir.as_str(),
            "--table",
            &table,
            "--id-prefix",
            &prefix,
        ];
        argv.extend_from_slice(extra);
        Args::try_parse_from(argv).unwrap_or_else(|e| panic!("{e}"))
    };
    run(&args(&[]), &env, &Progress::silent())
        .await
        .unwrap_or_else(|e| panic!("run: {e}"));
    docs.remove("miles.md");

    let err = run(&args(&[]), &env, &Progress::silent())
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("pass --prune explicitly"), "{err}");
    let store = common::dynamo_store().await;
    assert_eq!(manifests_with_prefix(&store, &prefix).await.len(), 1);

    let report = run(&args(&["--prune"]), &env, &Progress::silent())
        .await
        .unwrap_or_else(|e| panic!("run: {e}"));
    assert_eq!(report.removed, [format!("{prefix}miles")]);
    assert!(manifests_with_prefix(&store, &prefix).await.is_empty());
}
