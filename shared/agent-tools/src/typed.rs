//! [`Tool`], the trait a tool implements: typed arguments, a typed canonical request and a
//! declared output, checked once at the edge by [`TypedTool`], which is what the registry
//! and the pipeline hold (as a [`DynTool`]).

use std::any::TypeId;
use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::catalog::ToolInfo;
use crate::context::ToolContext;
use crate::deps::ToolDeps;
use crate::dyn_tool::DynTool;
use crate::schema::ToolSchema;
use shared::Error;
use shared::Result;
use shared::domain::flight::Locale;
use shared::domain::tool_call::ToolName;
use shared::domain::tool_result::ToolExecutionResult;
use shared::domain::ui::UiKind;

/// A tool the model can call (docs/adding-a-tool.md). The pipeline does the rest: the
/// profile check, the schema check, rate limits, dedupe, the ledger, timeouts and retries.
#[async_trait]
pub trait Tool: Send + Sync + Sized + 'static {
    /// Its name, how users call it and whether MCP clients may call it.
    const INFO: ToolInfo;

    /// The arguments as the model sends them. Their JSON Schema, derived, is what the model
    /// is offered (the type's description is the tool's, each field's doc comment its
    /// description); arguments that do not match it go back to the model with the reason.
    type Args: JsonSchema + DeserializeOwned + Send;

    /// The canonical request [`Tool::prepare`] makes of the arguments: what the ledger
    /// records and dedupes on, and what [`Tool::run`] gets, read back from the ledger when
    /// the call runs later (in the worker, after an approval). Often `Args` itself.
    type Request: Serialize + DeserializeOwned + Send + Sync;

    /// The shape of the result's structured data (`raw`), announced to MCP clients as the
    /// tool's `outputSchema`; `()` when the tool announces none.
    type Output: JsonSchema + 'static;

    /// Builds the tool, once per container.
    fn build(deps: &ToolDeps) -> Result<Self>;

    /// Checks the arguments against what the schema cannot say and returns the canonical
    /// request. An `Error::Invalid` goes back to the model, which may correct its call.
    fn prepare(&self, args: Self::Args, ctx: &ToolContext) -> Result<Self::Request>;

    /// Runs the canonical request. `Err` means the tool could not do its job (upstream
    /// down, ...); the pipeline derives the model's message from it and retries what may
    /// pass.
    async fn run(&self, ctx: &ToolContext, request: Self::Request) -> Result<ToolExecutionResult>;

    /// The schema offered to the model: by default derived from `Args` (and `Output`).
    fn schema() -> Result<ToolSchema> {
        let schema = ToolSchema::of::<Self::Args>(Self::INFO.name)?;
        with_output::<Self::Output>(schema)
    }

    /// Corrects lenient spellings in the model's arguments before the schema check
    /// (`"business"` for `BUSINESS`), instead of spending a repair round on them.
    fn tidy(_args: &mut Value, _ctx: &ToolContext) {}

    /// The JSON the ledger records and dedupes on: equal for two requests that mean the
    /// same. By default the request's serde form.
    fn canonical(request: &Self::Request) -> Result<Value> {
        Ok(serde_json::to_value(request)?)
    }

    /// True when the tool's message is the answer itself, so no final completion is made.
    fn answers_directly(&self) -> bool {
        false
    }

    /// `Some(source)` when the result depends only on the request, the language and
    /// `source` (the upstream it comes from), never on who asks: other users may then be
    /// served it from the result cache (`cache_secs`).
    fn cache_scope(&self) -> Option<String> {
        None
    }

    /// What the user is asked to approve, in their language, for a tool that needs
    /// approval: one line saying what the call will do. `None`: the tool's name and request.
    fn approval_summary(&self, _request: &Self::Request, _locale: Locale) -> Option<String> {
        None
    }

    /// For a tool whose settings ask for approval: whether this call still needs it.
    /// `false` when running it changes nothing the user must agree to (an alert that
    /// exists already, which [`Tool::run`] only reports), so it runs without asking.
    async fn needs_approval(&self, _ctx: &ToolContext, _request: &Self::Request) -> bool {
        true
    }

    /// `Some(kind)` for a tool the client renders (a UI skill): its result's `raw` is the
    /// `ui` event's payload.
    fn ui_kind(&self) -> Option<UiKind> {
        None
    }
}

/// `schema` announcing `O` as the result's shape, unless `O` is `()`.
pub fn with_output<O: JsonSchema + 'static>(schema: ToolSchema) -> Result<ToolSchema> {
    if TypeId::of::<O>() == TypeId::of::<()>() {
        return Ok(schema);
    }
    schema.with_output::<O>()
}

/// A [`Tool`] with its schema, as the registry holds it: checks the model's arguments
/// against the schema, deserialises them once, and reads stored requests back.
pub struct TypedTool<T> {
    tool: T,
    schema: ToolSchema,
}

impl<T: Tool> TypedTool<T> {
    /// `tool` with its schema (derived, checked to compile at the first call).
    pub fn new(tool: T) -> Result<Self> {
        Ok(Self {
            tool,
            schema: T::schema()?,
        })
    }

    /// Builds `T` from `deps`, ready for the registry.
    pub fn build(deps: &ToolDeps) -> Result<Arc<dyn DynTool>> {
        Ok(Arc::new(Self::new(T::build(deps)?)?))
    }

    /// The tool itself.
    pub fn tool(&self) -> &T {
        &self.tool
    }

    fn stored(request: &Value) -> Result<T::Request> {
        serde_json::from_value(request.clone())
            .map_err(|e| Error::Invalid(format!("stored {} request: {e}", T::INFO.name)))
    }
}

#[async_trait]
impl<T: Tool> DynTool for TypedTool<T> {
    fn name(&self) -> ToolName {
        T::INFO.name
    }

    fn schema(&self) -> &ToolSchema {
        &self.schema
    }

    fn prepare(&self, mut args: Value, ctx: &ToolContext) -> Result<Value> {
        T::tidy(&mut args, ctx);
        let args: T::Args = self.schema.parse(&args)?;
        let request = self.tool.prepare(args, ctx)?;
        T::canonical(&request)
    }

    async fn execute(&self, ctx: &ToolContext, request: &Value) -> Result<ToolExecutionResult> {
        let request = Self::stored(request)?;
        self.tool.run(ctx, request).await
    }

    fn answers_directly(&self) -> bool {
        self.tool.answers_directly()
    }

    fn cache_scope(&self) -> Option<String> {
        self.tool.cache_scope()
    }

    fn approval_summary(&self, request: &Value, locale: Locale) -> String {
        Self::stored(request)
            .ok()
            .and_then(|typed| self.tool.approval_summary(&typed, locale))
            .unwrap_or_else(|| {
                crate::dyn_tool::default_approval_summary(T::INFO.name, request, locale)
            })
    }

    fn ui_kind(&self) -> Option<UiKind> {
        self.tool.ui_kind()
    }

    async fn needs_approval(&self, ctx: &ToolContext, request: &Value) -> bool {
        match Self::stored(request) {
            Ok(typed) => self.tool.needs_approval(ctx, &typed).await,
            Err(_) => true,
        }
    }
}
