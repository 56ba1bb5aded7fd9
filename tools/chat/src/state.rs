//! The current chat id, remembered in a file so follow-up runs continue the chat.

use std::path::PathBuf;

use crate::{Error, Result};

/// The chat a turn belongs to, and where to remember it.
#[derive(Debug)]
pub struct Session {
    chat_id: Option<String>,
    state_file: PathBuf,
}

impl Session {
    /// `--chat-id` wins; `--new` starts without one; otherwise the remembered id, if any.
    pub fn open(state_file: PathBuf, chat_id: Option<String>, new: bool) -> Result<Self> {
        let chat_id = match (chat_id, new) {
            (Some(id), _) => Some(id),
            (None, true) => None,
            (None, false) => match std::fs::read_to_string(&state_file) {
                Ok(text) => Some(text.trim().to_owned()).filter(|id| !id.is_empty()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(source) => {
                    return Err(Error::File {
                        action: "reading",
                        path: state_file,
                        source,
                    });
                }
            },
        };
        Ok(Self {
            chat_id,
            state_file,
        })
    }

    /// The chat to continue, if any.
    pub fn chat_id(&self) -> Option<&str> {
        self.chat_id.as_deref()
    }

    /// Keeps `chat_id` for the next turn and the next run.
    pub fn remember(&mut self, chat_id: &str) -> Result<()> {
        self.chat_id = Some(chat_id.to_owned());
        let file_error = |source| Error::File {
            action: "writing",
            path: self.state_file.clone(),
            source,
        };
        if let Some(dir) = self
            .state_file
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
        {
            std::fs::create_dir_all(dir).map_err(file_error)?;
        }
        std::fs::write(&self.state_file, format!("{chat_id}\n")).map_err(file_error)
    }
}
