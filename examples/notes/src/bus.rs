//! The notes service on the Redis call protocol. Anyone who can reach Redis can publish a
//! `call.requested`, so the processes share one secret and every identity on the bus is
//! signed with it: a replica runs a request that states an identity only when the identity is
//! signed for that very request, so a Redis client without the secret calls only what
//! anonymous callers may (and anonymous callers share one rate-limit budget), whatever
//! identity it states.
//!
//! The secret is a file of 32 bytes or more, the same file for every process of one
//! deployment: `head -c 32 /dev/urandom > notes.key`, then `--identity-secret-file notes.key`.

use opkit::OperationRegistry;
use opkit::protocol::{
    CallHandler, CallHandlerHandle, IdentityKeys, PendingOptions, PendingRequestMap,
};
use opkit_adapters::redis::RedisPubSub;
use std::path::Path;
use std::sync::Arc;

/// The fewest bytes a shared identity secret may have.
pub const MIN_SECRET_BYTES: usize = 32;

/// The key id the notes processes sign under.
pub const KEY_ID: &str = "notes";

/// The keys of the shared `secret`; an error naming the problem when it is too short.
pub fn identity_keys(secret: &[u8]) -> Result<IdentityKeys, String> {
    if secret.len() < MIN_SECRET_BYTES {
        return Err(format!(
            "the identity secret has {} bytes: it needs {MIN_SECRET_BYTES} or more (make one with `head -c 32 /dev/urandom > notes.key`)",
            secret.len()
        ));
    }
    Ok(IdentityKeys::new().with_signing_secret(KEY_ID, secret))
}

/// The keys of the secret in the file at `path`.
pub fn read_identity_keys(path: &Path) -> Result<IdentityKeys, String> {
    let secret = std::fs::read(path).map_err(|error| {
        format!(
            "the identity secret file `{}` cannot be read: {error}",
            path.display()
        )
    })?;
    identity_keys(&secret)
}

/// Serves `registry` on the Redis at `url`, running only requests whose identities `keys`
/// verify (anonymous ones as anonymous).
pub async fn serve(
    registry: OperationRegistry,
    url: &str,
    keys: IdentityKeys,
) -> Result<CallHandlerHandle, Box<dyn std::error::Error>> {
    let bus = Arc::new(RedisPubSub::connect(url).await?);
    Ok(CallHandler::new(registry, bus)
        .with_identity_keys(keys)
        .spawn()
        .await?)
}

/// A caller on the Redis at `url` that signs the identity of every call with `keys`.
pub async fn caller(
    url: &str,
    keys: IdentityKeys,
) -> Result<PendingRequestMap, Box<dyn std::error::Error>> {
    let bus = Arc::new(RedisPubSub::connect(url).await?);
    let options = PendingOptions::default().with_identity_keys(keys);
    Ok(PendingRequestMap::connect_with(bus, options).await?)
}
