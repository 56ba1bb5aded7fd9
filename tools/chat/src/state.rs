//! The current chat id, remembered in a file so follow-up runs continue the chat.

use std::path::PathBuf;

use crate::{Error, Result};

/// The chat a turn belongs to, and where to remember it: the file holds the chat id and the
/// router it belongs to, so a run against another stack (a deployed one after the local
/// one) does not continue a chat that stack has never seen.
#[derive(Debug)]
pub struct Session {
    chat_id: Option<String>,
    state_file: PathBuf,
    router: String,
}

impl Session {
    /// [`Session::open_for`] without a router (tests and single-stack use).
    pub fn open(state_file: PathBuf, chat_id: Option<String>, new: bool) -> Result<Self> {
        Self::open_for(state_file, "", chat_id, new)
    }

    /// `--chat-id` wins; `--new` starts without one; otherwise the remembered id, if it
    /// was remembered for `router`.
    pub fn open_for(
        state_file: PathBuf,
        router: &str,
        chat_id: Option<String>,
        new: bool,
    ) -> Result<Self> {
        let chat_id = match (chat_id, new) {
            (Some(id), _) => Some(id),
            (None, true) => None,
            (None, false) => match std::fs::read_to_string(&state_file) {
                Ok(text) => {
                    let mut lines = text.lines().map(str::trim);
                    let id = lines.next().unwrap_or_default();
                    let remembered_for = lines.next().unwrap_or_default();
                    Some(id.to_owned()).filter(|id| !id.is_empty() && remembered_for == router)
                }
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
            router: router.to_owned(),
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
        std::fs::write(&self.state_file, format!("{chat_id}\n{}\n", self.router))
            .map_err(file_error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chat_is_continued_only_on_the_router_it_was_remembered_for() {
        let dir = std::env::temp_dir().join(format!("chat-state-{}", std::process::id()));
        let file = dir.join("chat-id");
        let local = "http://127.0.0.1:9000/lambda-url/chat-router";
        let deployed = "https://abc.lambda-url.eu-west-1.on.aws";
        let mut session =
            Session::open_for(file.clone(), local, None, false).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(session.chat_id(), None);
        session.remember("chat-1").unwrap_or_else(|e| panic!("{e}"));
        let again =
            Session::open_for(file.clone(), local, None, false).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(again.chat_id(), Some("chat-1"));
        let elsewhere = Session::open_for(file.clone(), deployed, None, false)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            elsewhere.chat_id(),
            None,
            "a local chat is not continued on AWS"
        );
        // A file of the old format (the id alone) names no router: a new chat.
        std::fs::write(&file, "chat-0\n").unwrap_or_else(|e| panic!("{e}"));
        let old = Session::open_for(file, local, None, false).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(old.chat_id(), None);
        let _ = std::fs::remove_dir_all(dir);
    }
}
