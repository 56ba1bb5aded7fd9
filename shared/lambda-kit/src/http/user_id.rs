//! The one rule for a user id, wherever one comes from: a token's `sub` at the router, the
//! `x-tool-user` header at the tool functions, a token on a public tool route. The router
//! refuses a token whose subject breaks it (401), so it never starts a turn whose tool calls
//! every tool function would refuse.

/// The longest user id accepted (ids are logged and keyed on).
pub const MAX_USER_ID_CHARS: usize = 256;

/// What a user id looks like, for error messages and docs.
pub const USER_ID_RULE: &str = "1 to 256 visible ASCII characters, no spaces";

/// Ids are visible ASCII (no spaces or control characters), 1 to [`MAX_USER_ID_CHARS`] long.
pub fn valid_user_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= MAX_USER_ID_CHARS && id.bytes().all(|b| b.is_ascii_graphic())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_ids_are_visible_ascii_up_to_256_characters() {
        for good in [
            "u1",
            "6f1c2b8e-1d2a-4c3b-9e8f-0a1b2c3d4e5f",
            "auth0|abc",
            &"a".repeat(256),
        ] {
            assert!(valid_user_id(good), "{good}");
        }
        for bad in [
            "",
            " ",
            "a b",
            "ünï",
            "a\u{0}b",
            "tab\tid",
            &"a".repeat(257),
        ] {
            assert!(!valid_user_id(bad), "{bad:?}");
        }
    }
}
