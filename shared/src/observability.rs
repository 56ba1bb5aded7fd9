//! Logging: JSON lines in Lambda (CloudWatch Logs Insights can query the fields), readable
//! text locally. The filter comes from `RUST_LOG` (default `info`).

use tracing_subscriber::EnvFilter;

/// Installs the global subscriber once; later calls (e.g. from tests) are no-ops.
pub fn init_tracing() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let in_lambda = std::env::var_os("AWS_LAMBDA_FUNCTION_NAME").is_some();
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(true);
    let result = if in_lambda {
        builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .with_ansi(false)
            .try_init()
    } else {
        builder.compact().try_init()
    };
    // Already installed (a second handler in the same process, or a test harness): keep it.
    drop(result);
}
