//! `openapi`: writes the OpenAPI document to docs/openapi.json (run from the repository
//! root); `openapi --check` only says whether the committed one is current.

use std::process::ExitCode;

use openapi::{DOCUMENT_PATH, Error, REGENERATE, document, render};

fn main() -> ExitCode {
    let check = match std::env::args().nth(1).as_deref() {
        None => false,
        Some("--check") => true,
        Some(_) => {
            eprintln!("usage: openapi [--check]   (from the repository root)");
            return ExitCode::from(2);
        }
    };
    match run(check) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("openapi: {DOCUMENT_PATH} is stale; regenerate it with `{REGENERATE}`");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("openapi: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Whether the committed document is current (after writing it, unless `check`).
fn run(check: bool) -> Result<bool, Error> {
    let text = render(&document()?);
    let committed = std::fs::read_to_string(DOCUMENT_PATH).unwrap_or_default();
    if check {
        return Ok(committed == text);
    }
    if committed != text {
        std::fs::write(DOCUMENT_PATH, &text).map_err(|source| Error::File {
            action: "writing",
            path: DOCUMENT_PATH.into(),
            source,
        })?;
        println!("openapi: wrote {DOCUMENT_PATH}");
    }
    Ok(true)
}
