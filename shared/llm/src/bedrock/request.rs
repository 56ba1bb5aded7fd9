//! A [`CompletionRequest`] in Converse form: system blocks, alternating user/assistant
//! messages with `toolUse`/`toolResult` blocks, the tool configuration and the inference
//! settings. Pure, so every rule of the API is unit-tested without a server.
//!
//! Converse is stricter than Chat Completions, and these rules follow from it:
//! - the conversation starts with a user message and roles alternate, so consecutive
//!   messages of one role are merged (a step's tool results become one user message);
//! - blank text blocks are refused, so empty texts are left out;
//! - a request with `toolUse`/`toolResult` blocks must carry a `toolConfig`, and Converse
//!   has no "none" tool choice: a step that offers no tools shows earlier calls and results
//!   as text instead;
//! - a tool call's input is a JSON object, not text: arguments that are not one (the
//!   model's own invalid JSON, which the pipeline refused) are sent as `{}`, and the tool
//!   result beside it says what was wrong.

use aws_sdk_bedrockruntime::types::{
    AnyToolChoice, AutoToolChoice, CachePointBlock, CachePointType, ContentBlock, ConversationRole,
    InferenceConfiguration, Message, SpecificToolChoice, SystemContentBlock, Tool,
    ToolChoice as WireChoice, ToolConfiguration, ToolInputSchema, ToolResultBlock,
    ToolResultContentBlock, ToolResultStatus, ToolSpecification, ToolUseBlock,
};
use aws_smithy_types::{Document, Number};
use serde_json::Value;

use agent_core::llm::{CompletionRequest, PromptMessage, PromptRole, ToolChoice};
use domain::{Error, Result};

/// Stands in for the start of a conversation whose first kept message is the model's.
const EARLIER: &str = "(earlier messages omitted)";

/// What one `ConverseStream` call sends, apart from the model id.
#[derive(Debug, Clone, PartialEq)]
pub struct ConverseParts {
    /// The system prompt's blocks.
    pub system: Vec<SystemContentBlock>,
    /// The conversation, alternating as Bedrock requires.
    pub messages: Vec<Message>,
    /// The offered tools and the tool choice; `None` without tools.
    pub tool_config: Option<ToolConfiguration>,
    /// Temperature and the token limit.
    pub inference: InferenceConfiguration,
}

impl ConverseParts {
    /// Ends the system prompt with a prompt-cache point. Converse caches the prefix before
    /// it: the tool definitions and the system prompt, the same on every step and turn of a
    /// profile, and the largest part of most requests. Opt-in, because models without
    /// prompt caching refuse the block; a prefix shorter than the model's minimum is simply
    /// not cached.
    pub fn cache_system_prompt(&mut self) -> Result<()> {
        if self.system.is_empty() {
            return Ok(());
        }
        let point = CachePointBlock::builder()
            .r#type(CachePointType::Default)
            .build()
            .map_err(sdk_build)?;
        self.system.push(SystemContentBlock::CachePoint(point));
        Ok(())
    }
}

/// Maps `request` to Converse. Fails only when the SDK refuses a value it requires (never
/// for a request this crate builds).
pub fn converse_parts(request: &CompletionRequest) -> Result<ConverseParts> {
    let tool_config = tool_config(request)?;
    let with_tools = tool_config.is_some();
    let mut system = Vec::new();
    let mut turns: Vec<(ConversationRole, Vec<ContentBlock>)> = Vec::new();
    for message in request.messages.iter() {
        // Leading system messages are the system prompt; a later one (a notice the turn
        // adds) is read by the model as text of the user's side.
        if message.role == PromptRole::System && turns.is_empty() {
            if !message.content.trim().is_empty() {
                system.push(SystemContentBlock::Text(message.content.clone()));
            }
            continue;
        }
        let (role, blocks) = blocks(message, with_tools)?;
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some((last, kept)) if *last == role => kept.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    if turns
        .first()
        .is_some_and(|(role, _)| *role == ConversationRole::Assistant)
    {
        turns.insert(
            0,
            (
                ConversationRole::User,
                vec![ContentBlock::Text(EARLIER.into())],
            ),
        );
    }
    let messages = turns
        .into_iter()
        .map(|(role, content)| {
            Message::builder()
                .role(role)
                .set_content(Some(content))
                .build()
                .map_err(sdk_build)
        })
        .collect::<Result<Vec<_>>>()?;
    let inference = InferenceConfiguration::builder()
        .set_max_tokens(
            request
                .max_tokens
                .map(|n| i32::try_from(n).unwrap_or(i32::MAX)),
        )
        .set_temperature(request.temperature)
        .build();
    Ok(ConverseParts {
        system,
        messages,
        tool_config,
        inference,
    })
}

/// The blocks of one prompt message and the role they are sent under.
fn blocks(
    message: &PromptMessage,
    with_tools: bool,
) -> Result<(ConversationRole, Vec<ContentBlock>)> {
    let mut out = Vec::new();
    let text = |out: &mut Vec<ContentBlock>, text: &str| {
        if !text.trim().is_empty() {
            out.push(ContentBlock::Text(text.to_owned()));
        }
    };
    let role = match message.role {
        PromptRole::System | PromptRole::User => {
            text(&mut out, &message.content);
            ConversationRole::User
        }
        PromptRole::Assistant => {
            text(&mut out, &message.content);
            for call in &message.tool_calls {
                if with_tools {
                    out.push(ContentBlock::ToolUse(
                        ToolUseBlock::builder()
                            .tool_use_id(&call.id)
                            .name(&call.name)
                            .input(arguments(&call.arguments))
                            .build()
                            .map_err(sdk_build)?,
                    ));
                } else {
                    text(
                        &mut out,
                        &format!("(called the tool {} with {})", call.name, call.arguments),
                    );
                }
            }
            ConversationRole::Assistant
        }
        PromptRole::Tool => {
            let id = message.tool_call_id.as_deref().unwrap_or_default();
            if with_tools && !id.is_empty() {
                // A result must have content; an empty one still says that it came.
                let content = if message.content.trim().is_empty() {
                    "(no output)".to_owned()
                } else {
                    message.content.clone()
                };
                out.push(ContentBlock::ToolResult(
                    ToolResultBlock::builder()
                        .tool_use_id(id)
                        .content(ToolResultContentBlock::Text(content))
                        .status(if message.failed {
                            ToolResultStatus::Error
                        } else {
                            ToolResultStatus::Success
                        })
                        .build()
                        .map_err(sdk_build)?,
                ));
            } else {
                let status = if message.failed { "failed" } else { "result" };
                text(
                    &mut out,
                    &format!("(tool {status} for call {id}) {}", message.content),
                );
            }
            ConversationRole::User
        }
    };
    Ok((role, out))
}

/// The tool configuration, or `None` when no tools are offered (also for `ToolChoice::None`:
/// Converse has no such choice, so no tools are sent at all).
fn tool_config(request: &CompletionRequest) -> Result<Option<ToolConfiguration>> {
    if request.tools.is_empty() || request.tool_choice == ToolChoice::None {
        return Ok(None);
    }
    let tools = request
        .tools
        .iter()
        .map(|spec| {
            ToolSpecification::builder()
                .name(&spec.name)
                // Converse refuses an empty description; none is the same to the model.
                .set_description(
                    (!spec.description.trim().is_empty()).then(|| spec.description.clone()),
                )
                .input_schema(ToolInputSchema::Json(document(&spec.parameters)))
                .build()
                .map(Tool::ToolSpec)
                .map_err(sdk_build)
        })
        .collect::<Result<Vec<_>>>()?;
    let choice = match &request.tool_choice {
        ToolChoice::Auto | ToolChoice::None => WireChoice::Auto(AutoToolChoice::builder().build()),
        ToolChoice::Required => WireChoice::Any(AnyToolChoice::builder().build()),
        ToolChoice::Tool(name) => WireChoice::Tool(
            SpecificToolChoice::builder()
                .name(name)
                .build()
                .map_err(sdk_build)?,
        ),
    };
    ToolConfiguration::builder()
        .set_tools(Some(tools))
        .tool_choice(choice)
        .build()
        .map(Some)
        .map_err(sdk_build)
}

/// A tool call's arguments as the input object Converse wants (see the module notes).
fn arguments(text: &str) -> Document {
    match serde_json::from_str::<Value>(text) {
        Ok(value @ Value::Object(_)) => document(&value),
        _ => Document::Object(Default::default()),
    }
}

/// JSON as the SDK's document type.
pub fn document(value: &Value) -> Document {
    match value {
        Value::Null => Document::Null,
        Value::Bool(b) => Document::Bool(*b),
        Value::Number(n) => Document::Number(match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => Number::PosInt(u),
            (None, Some(i)) => Number::NegInt(i),
            _ => Number::Float(n.as_f64().unwrap_or_default()),
        }),
        Value::String(s) => Document::String(s.clone()),
        Value::Array(items) => Document::Array(items.iter().map(document).collect()),
        Value::Object(map) => {
            Document::Object(map.iter().map(|(k, v)| (k.clone(), document(v))).collect())
        }
    }
}

/// The SDK's document type as JSON (a non-finite float, which JSON cannot hold, is null).
pub fn json(document: &Document) -> Value {
    match document {
        Document::Null => Value::Null,
        Document::Bool(b) => Value::Bool(*b),
        Document::Number(Number::PosInt(u)) => Value::from(*u),
        Document::Number(Number::NegInt(i)) => Value::from(*i),
        Document::Number(Number::Float(f)) => {
            serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number)
        }
        Document::String(s) => Value::String(s.clone()),
        Document::Array(items) => Value::Array(items.iter().map(json).collect()),
        Document::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), json(v))).collect())
        }
    }
}

fn sdk_build(e: aws_sdk_bedrockruntime::error::BuildError) -> Error {
    Error::Upstream {
        service: super::SERVICE,
        message: format!("building the Converse request: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json as j;

    use super::*;
    use agent_core::llm::{ToolCallRequest, ToolSpec};

    fn request(tools: bool, choice: ToolChoice) -> CompletionRequest {
        CompletionRequest {
            provider: None,
            model: "anthropic.claude-3-5-haiku-20241022-v1:0".into(),
            messages: vec![
                PromptMessage::system("be brief"),
                PromptMessage::user("flights ZRH-LHR"),
                PromptMessage::assistant(
                    "",
                    vec![
                        ToolCallRequest {
                            id: "t1".into(),
                            name: "search_flights".into(),
                            arguments: r#"{"origin":"ZRH"}"#.into(),
                        },
                        ToolCallRequest {
                            id: "t2".into(),
                            name: "search_flights".into(),
                            arguments: r#"{"origin": "#.into(),
                        },
                    ],
                ),
                PromptMessage::tool("t1", r#"{"results":[]}"#),
                PromptMessage::tool("t2", "not valid JSON").with_failure(true),
                PromptMessage::system("answer now"),
            ]
            .into(),
            tools: if tools {
                vec![ToolSpec {
                    name: "search_flights".into(),
                    description: "Search flights".into(),
                    parameters:
                        j!({"type": "object", "properties": {"origin": {"type": "string"}}}).into(),
                }]
                .into()
            } else {
                Default::default()
            },
            tool_choice: choice,
            temperature: Some(0.25),
            max_tokens: Some(300),
            fallback: Default::default(),
        }
    }

    fn parts(tools: bool, choice: ToolChoice) -> ConverseParts {
        converse_parts(&request(tools, choice)).unwrap_or_else(|e| panic!("parts: {e}"))
    }

    #[test]
    fn tool_calls_and_results_become_blocks_in_alternating_messages() {
        let parts = parts(true, ToolChoice::Auto);
        assert_eq!(parts.system, [SystemContentBlock::Text("be brief".into())]);
        let roles: Vec<_> = parts.messages.iter().map(|m| m.role.clone()).collect();
        assert_eq!(
            roles,
            [
                ConversationRole::User,
                ConversationRole::Assistant,
                ConversationRole::User
            ]
        );
        // The empty assistant text is left out; both calls are tool-use blocks.
        let uses: Vec<_> = parts.messages[1]
            .content
            .iter()
            .filter_map(|b| b.as_tool_use().ok())
            .collect();
        assert_eq!(parts.messages[1].content.len(), 2);
        assert_eq!(json(&uses[0].input), j!({"origin": "ZRH"}));
        // Invalid arguments go as an empty object.
        assert_eq!(json(&uses[1].input), j!({}));
        // Both results and the later notice form one user message, in order.
        let last = &parts.messages[2].content;
        let statuses: Vec<_> = last
            .iter()
            .filter_map(|b| b.as_tool_result().ok())
            .map(|r| (r.tool_use_id.as_str(), r.status.clone()))
            .collect();
        assert_eq!(
            statuses,
            [
                ("t1", Some(ToolResultStatus::Success)),
                ("t2", Some(ToolResultStatus::Error))
            ]
        );
        assert_eq!(last.last(), Some(&ContentBlock::Text("answer now".into())));
        assert_eq!(parts.inference.max_tokens, Some(300));
        assert_eq!(parts.inference.temperature, Some(0.25));
    }

    #[test]
    fn tool_choice_maps_and_none_offers_no_tools() {
        let choice = |c| parts(true, c).tool_config.and_then(|t| t.tool_choice);
        assert!(matches!(
            choice(ToolChoice::Auto),
            Some(WireChoice::Auto(_))
        ));
        assert!(matches!(
            choice(ToolChoice::Required),
            Some(WireChoice::Any(_))
        ));
        assert!(
            matches!(choice(ToolChoice::Tool("search_flights".into())), Some(WireChoice::Tool(t)) if t.name == "search_flights")
        );
        let spec = parts(true, ToolChoice::Auto)
            .tool_config
            .and_then(|t| t.tools.into_iter().next());
        let Some(Tool::ToolSpec(spec)) = spec else {
            panic!("no tool spec")
        };
        assert_eq!(spec.name, "search_flights");
        let Some(ToolInputSchema::Json(schema)) = spec.input_schema else {
            panic!("no schema")
        };
        assert_eq!(json(&schema)["properties"]["origin"]["type"], j!("string"));
        for (tools, choice) in [(true, ToolChoice::None), (false, ToolChoice::Auto)] {
            let parts = parts(tools, choice);
            assert!(parts.tool_config.is_none());
            // Without a tool configuration no tool blocks may be sent: they become text.
            let blocks = parts.messages.iter().flat_map(|m| &m.content);
            assert!(blocks.clone().all(ContentBlock::is_text));
            let texts: String = blocks.filter_map(|b| b.as_text().ok().cloned()).collect();
            assert!(texts.contains("(called the tool search_flights with {\"origin\":\"ZRH\"})"));
            assert!(texts.contains("(tool failed for call t2) not valid JSON"));
        }
    }

    #[test]
    fn a_conversation_starting_with_the_model_gets_a_user_message_first() {
        let mut req = request(false, ToolChoice::Auto);
        req.messages = vec![
            PromptMessage::system("s"),
            PromptMessage::assistant("earlier answer", vec![]),
            PromptMessage::user("   "),
            PromptMessage::user("next"),
        ]
        .into();
        let parts = converse_parts(&req).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(parts.messages.len(), 3);
        assert_eq!(parts.messages[0].role, ConversationRole::User);
        assert_eq!(
            parts.messages[2].content,
            [ContentBlock::Text("next".into())]
        );
    }

    #[test]
    fn documents_round_trip_json() {
        let value = j!({"a": [1, -2, 2.5, "x", null, true], "b": {"c": {}}});
        assert_eq!(json(&document(&value)), value);
    }

    #[test]
    fn a_cache_point_ends_the_system_prompt_only_when_there_is_one() {
        let mut parts =
            converse_parts(&request(true, ToolChoice::Auto)).unwrap_or_else(|e| panic!("{e}"));
        let messages = parts.messages.clone();
        parts
            .cache_system_prompt()
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(parts.system.len(), 2);
        assert!(parts.system[0].is_text());
        assert!(
            parts.system[1]
                .as_cache_point()
                .is_ok_and(|p| p.r#type() == &CachePointType::Default)
        );
        // The history and the tools are left as they were.
        assert_eq!(parts.messages, messages);

        let mut bare = request(false, ToolChoice::Auto);
        std::sync::Arc::make_mut(&mut bare.messages).remove(0);
        let mut parts = converse_parts(&bare).unwrap_or_else(|e| panic!("{e}"));
        parts
            .cache_system_prompt()
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(parts.system.is_empty());
    }
}
