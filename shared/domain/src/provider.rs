//! Who serves model calls: an OpenAI-compatible HTTP API or Amazon Bedrock. One type for
//! chat (`LLM_PROVIDER`, an agent profile's `provider`) and embeddings
//! (`EMBEDDINGS_PROVIDER`), so both read and print the same names.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A model service the functions speak to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Provider {
    /// OpenAI's API, or a server compatible with it (Ollama, OpenRouter, Gemini's OpenAI
    /// endpoint, vLLM).
    #[serde(rename = "openai")]
    OpenAi,
    /// Amazon Bedrock, with the caller's AWS credentials.
    #[serde(rename = "bedrock")]
    Bedrock,
}

impl Provider {
    /// Every provider, in declaration order.
    pub const ALL: [Self; 2] = [Self::OpenAi, Self::Bedrock];

    /// The provider's name as configured and serialised (`openai`, `bedrock`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::Bedrock => "bedrock",
        }
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Provider {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "openai" => Ok(Self::OpenAi),
            "bedrock" => Ok(Self::Bedrock),
            other => Err(format!("expected openai or bedrock, got `{other}`")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back_as_they_print() {
        for p in Provider::ALL {
            assert_eq!(p.to_string().parse::<Provider>(), Ok(p));
            assert_eq!(
                serde_json::to_string(&p).ok(),
                Some(format!("\"{}\"", p.as_str()))
            );
        }
        assert_eq!(" Bedrock ".parse::<Provider>(), Ok(Provider::Bedrock));
        assert!(
            "vertex"
                .parse::<Provider>()
                .is_err_and(|e| e.contains("vertex"))
        );
    }
}
