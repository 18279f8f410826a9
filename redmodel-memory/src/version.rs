//! The Redis versions the engine can behave as: what it reports (HELLO,
//! INFO, Lua's `redis.REDIS_VERSION`) and which commands it knows follow
//! the one an [`crate::Engine`] is built with.

/// A Redis release whose behaviour the engine follows
/// ([`crate::Engine::with_version`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum RedisVersion {
    /// Redis 7.0.15, the default.
    #[default]
    V7_0,
    /// Redis 7.4.1: 7.0's commands and the ones 7.4 adds (hash-field
    /// expiration, `CLIENT NO-TOUCH`, `CLIENT SETINFO`, `WAITAOF`...).
    V7_4,
}

impl RedisVersion {
    /// The version as Redis prints it (`7.0.15`, `7.4.1`).
    pub fn as_str(self) -> &'static str {
        match self {
            RedisVersion::V7_0 => "7.0.15",
            RedisVersion::V7_4 => "7.4.1",
        }
    }

    /// `REDIS_VERSION_NUM`: the version as `0xMMmmpp`.
    pub fn number(self) -> u32 {
        match self {
            RedisVersion::V7_0 => 0x07_00_0f,
            RedisVersion::V7_4 => 0x07_04_01,
        }
    }

    /// Whether this version has the hash-field expiration commands
    /// (HEXPIRE and the like) and the RDB types they need.
    pub fn has_field_expiry(self) -> bool {
        self >= RedisVersion::V7_4
    }
}

impl std::fmt::Display for RedisVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for RedisVersion {
    type Err = String;

    /// `7.0`, `7.0.15`, `7.4` or `7.4.1`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "7.0" | "7.0.15" => Ok(RedisVersion::V7_0),
            "7.4" | "7.4.1" => Ok(RedisVersion::V7_4),
            _ => Err(format!(
                "unsupported Redis version {s:?} (expected 7.0 or 7.4)"
            )),
        }
    }
}

#[cfg(test)]
mod tests;
