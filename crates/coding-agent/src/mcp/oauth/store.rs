//! The OAuth credentials of HTTP MCP servers: one file, `CONFIG_DIR/mcp-credentials.json`, mode
//! 0600 whatever the umask, one entry per server name with the URL it was issued for.
//!
//! Why the URL is kept: a token is sent only to the URL it was obtained for. A project's mcp.json
//! (or an edited home file) that gives a logged-in server's name to another URL gets no token; the
//! server is asked to log in again instead.
//!
//! Writes are atomic (a temporary file in CONFIG_DIR, renamed over the old one) and serialized by
//! an exclusive lock on the sidecar `mcp-credentials.json.lock`, so two sessions refreshing at once
//! cannot lose each other's tokens. The lock is also held across a whole refresh (load, exchange,
//! save), so a rotated refresh token is never used twice.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rmcp::transport::auth::{AuthError, CredentialRefreshGuard, CredentialStore, StoredCredentials};
use serde::{Deserialize, Serialize};

use crate::locked_file::LockedFile;

/// The file's name in CONFIG_DIR.
pub(crate) const FILE_NAME: &str = "mcp-credentials.json";

/// Why the credentials file could not be read or written. The message names the file.
#[derive(Debug, thiserror::Error)]
pub enum CredentialsError {
    #[error("{path} {reason}")]
    Read { path: PathBuf, reason: String },
    #[error("{path} is not valid: {reason}; remove it and log in again (`elph mcp login NAME`)")]
    Malformed { path: PathBuf, reason: String },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot lock {path}: {source}")]
    Lock {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// What the file holds.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Contents {
    #[serde(default)]
    servers: BTreeMap<String, Entry>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    url: String,
    credentials: StoredCredentials,
}

/// `CONFIG_DIR/mcp-credentials.json`.
#[derive(Clone, Debug)]
pub struct CredentialsFile {
    path: PathBuf,
}

impl CredentialsFile {
    pub fn new(config_dir: &Path) -> CredentialsFile {
        CredentialsFile {
            path: config_dir.join(FILE_NAME),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn lock_path(&self) -> PathBuf {
        let mut name = self.path.as_os_str().to_owned();
        name.push(".lock");
        PathBuf::from(name)
    }

    fn read(&self) -> Result<Contents, CredentialsError> {
        let bytes = elph_config::read::read_config(&self.path).map_err(|error| CredentialsError::Read {
            path: self.path.clone(),
            reason: error.reason(),
        })?;
        let Some(bytes) = bytes else {
            return Ok(Contents::default());
        };
        serde_json::from_slice(&bytes).map_err(|error| CredentialsError::Malformed {
            path: self.path.clone(),
            reason: error.to_string(),
        })
    }

    /// The credentials stored for `name`, if they were issued for `url`.
    pub fn load(&self, name: &str, url: &str) -> Result<Option<StoredCredentials>, CredentialsError> {
        let mut contents = self.read()?;
        Ok(contents
            .servers
            .remove(name)
            .filter(|entry| entry.url == url)
            .map(|entry| entry.credentials))
    }

    /// What doctor says about `name`'s login at `url`: none, stored and valid for how long,
    /// expired (and whether a refresh can renew it), or stored for another URL.
    pub(crate) fn login_state(&self, name: &str, url: &str) -> String {
        let contents = match self.read() {
            Ok(contents) => contents,
            Err(error) => return format!("login unknown: {error}"),
        };
        let Some(entry) = contents.servers.get(name) else {
            return "no login stored".to_string();
        };
        if entry.url != url {
            return format!(
                "a login is stored for another URL ({}), not sent here; run `elph mcp login {name}`",
                entry.url
            );
        }
        let Some(token) = &entry.credentials.token_response else {
            return format!("no token stored; run `elph mcp login {name}`");
        };
        // Read through its wire form: the token type is oauth2's, which Elph does not depend on.
        let token = serde_json::to_value(token).unwrap_or_default();
        let refreshable = token.get("refresh_token").is_some_and(|t| !t.is_null());
        let expires_at = token
            .get("expires_in")
            .and_then(serde_json::Value::as_u64)
            .zip(entry.credentials.token_received_at)
            .map(|(valid, received)| received.saturating_add(valid));
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_secs());
        match expires_at {
            None => "login stored (no expiry given)".to_string(),
            Some(at) if at > now => format!(
                "login stored, valid for {} more minute(s)",
                (at - now).div_ceil(60)
            ),
            Some(_) if refreshable => {
                "login stored, access token expired (renewed with its refresh token on the next use)"
                    .to_string()
            }
            Some(_) => format!("login expired, no refresh token; run `elph mcp login {name}`"),
        }
    }

    /// What is stored for `name`, whatever its URL: the URL it was issued for, and the credentials.
    pub(crate) fn entry(&self, name: &str) -> Result<Option<(String, StoredCredentials)>, CredentialsError> {
        let mut contents = self.read()?;
        Ok(contents
            .servers
            .remove(name)
            .map(|entry| (entry.url, entry.credentials)))
    }

    /// Whether anything is stored for `name` (whatever its URL).
    pub fn has(&self, name: &str) -> Result<bool, CredentialsError> {
        Ok(self.read()?.servers.contains_key(name))
    }

    /// Takes the file's lock (blocking until other writers are done).
    fn lock(&self) -> Result<LockedFile, CredentialsError> {
        let lock_error = |source| CredentialsError::Lock {
            path: self.lock_path(),
            source,
        };
        if let Some(dir) = self.path.parent() {
            elph_config::private::create_private_dir_all(dir).map_err(lock_error)?;
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(self.lock_path())
            .map_err(lock_error)?;
        file.lock().map_err(lock_error)?;
        Ok(LockedFile::new(file))
    }

    /// Read, change, write back: under the lock unless the caller already holds it.
    fn update<T>(
        &self,
        held: Option<&LockedFile>,
        change: impl FnOnce(&mut Contents) -> T,
    ) -> Result<T, CredentialsError> {
        let _guard = match held {
            Some(_) => None,
            None => Some(self.lock()?),
        };
        let mut contents = self.read()?;
        let result = change(&mut contents);
        self.write(&contents)?;
        Ok(result)
    }

    fn write(&self, contents: &Contents) -> Result<(), CredentialsError> {
        let write_error = |source| CredentialsError::Write {
            path: self.path.clone(),
            source,
        };
        let dir = self.path.parent().unwrap_or(Path::new("."));
        elph_config::private::create_private_dir_all(dir).map_err(write_error)?;
        let mut temp = tempfile::Builder::new()
            .prefix(".mcp-credentials.")
            .permissions(std::fs::Permissions::from_mode(0o600))
            .tempfile_in(dir)
            .map_err(write_error)?;
        // The mode asked for at creation is masked by the umask; make it exact.
        temp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o600))
            .map_err(write_error)?;
        let json =
            serde_json::to_vec_pretty(contents).map_err(|error| write_error(std::io::Error::other(error)))?;
        temp.write_all(&json).map_err(write_error)?;
        temp.as_file().sync_all().map_err(write_error)?;
        temp.persist(&self.path)
            .map_err(|error| write_error(error.error))?;
        Ok(())
    }

    /// Stores `credentials` for `name` at `url`, replacing what was there.
    fn save(
        &self,
        held: Option<&LockedFile>,
        name: &str,
        url: &str,
        credentials: StoredCredentials,
    ) -> Result<(), CredentialsError> {
        self.update(held, |contents| {
            contents.servers.insert(
                name.to_string(),
                Entry {
                    url: url.to_string(),
                    credentials,
                },
            );
        })
    }

    /// Removes what is stored for `name`; whether there was anything. The file goes when it is
    /// left empty.
    pub fn remove(&self, name: &str) -> Result<bool, CredentialsError> {
        let _guard = self.lock()?;
        let mut contents = self.read()?;
        if contents.servers.remove(name).is_none() {
            return Ok(false);
        }
        if contents.servers.is_empty() {
            match std::fs::remove_file(&self.path) {
                Ok(()) => {}
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(source) => {
                    return Err(CredentialsError::Write {
                        path: self.path.clone(),
                        source,
                    });
                }
            }
        } else {
            self.write(&contents)?;
        }
        Ok(true)
    }

    /// The store rmcp's authorization manager uses for one server.
    pub(crate) fn for_server(&self, name: &str, url: &str) -> ServerCredentials {
        ServerCredentials {
            file: self.clone(),
            name: name.to_string(),
            url: url.to_string(),
            refreshing: Arc::new(Mutex::new(None)),
        }
    }
}

/// One server's entry of the credentials file, as rmcp's [`CredentialStore`].
#[derive(Clone)]
pub(crate) struct ServerCredentials {
    file: CredentialsFile,
    name: String,
    url: String,
    /// The lock taken for a refresh, shared with its guard: `save` inside a refresh must not take
    /// it again (a second `flock` from this process on another open of the file would wait for
    /// itself). rmcp's manager runs one refresh at a time per server.
    refreshing: Arc<Mutex<Option<Arc<LockedFile>>>>,
}

fn store_error(error: CredentialsError) -> AuthError {
    AuthError::CredentialStoreError(error.to_string())
}

/// Runs blocking file work off the async threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, CredentialsError> + Send + 'static,
) -> Result<T, AuthError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|error| AuthError::CredentialStoreError(error.to_string()))?
        .map_err(store_error)
}

/// Holds the file's lock for the length of a refresh.
struct RefreshLock {
    slot: Arc<Mutex<Option<Arc<LockedFile>>>>,
}

impl Drop for RefreshLock {
    fn drop(&mut self) {
        self.slot.lock().unwrap_or_else(|p| p.into_inner()).take();
    }
}

#[async_trait::async_trait]
impl CredentialStore for ServerCredentials {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let (file, name, url) = (self.file.clone(), self.name.clone(), self.url.clone());
        blocking(move || file.load(&name, &url)).await
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let held = self.refreshing.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let (file, name, url) = (self.file.clone(), self.name.clone(), self.url.clone());
        blocking(move || file.save(held.as_deref(), &name, &url, credentials)).await
    }

    async fn clear(&self) -> Result<(), AuthError> {
        let (file, name) = (self.file.clone(), self.name.clone());
        blocking(move || file.remove(&name).map(|_| ())).await
    }

    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, AuthError> {
        let file = self.file.clone();
        let lock = blocking(move || file.lock()).await?;
        *self.refreshing.lock().unwrap_or_else(|p| p.into_inner()) = Some(Arc::new(lock));
        Ok(Some(CredentialRefreshGuard::new(RefreshLock {
            slot: self.refreshing.clone(),
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt as _;

    fn credentials(token: &str) -> StoredCredentials {
        let response: rmcp::transport::auth::OAuthTokenResponse = serde_json::from_value(serde_json::json!({
            "access_token": token, "token_type": "Bearer", "expires_in": 60, "refresh_token": "r"
        }))
        .unwrap();
        StoredCredentials::new("client".into(), Some(response), vec![], Some(1))
    }

    fn token_of(credentials: &StoredCredentials) -> String {
        use rmcp::transport::auth::OAuthTokenResponse;
        let response: &OAuthTokenResponse = credentials.token_response.as_ref().unwrap();
        serde_json::to_value(response).unwrap()["access_token"]
            .as_str()
            .unwrap()
            .to_string()
    }

    #[test]
    fn a_token_is_returned_only_for_the_url_it_was_issued_for() {
        let dir = tempfile::tempdir().unwrap();
        let file = CredentialsFile::new(dir.path());
        file.save(None, "gh", "https://a.example/mcp", credentials("t1"))
            .unwrap();
        assert_eq!(
            token_of(&file.load("gh", "https://a.example/mcp").unwrap().unwrap()),
            "t1"
        );
        assert!(file.load("gh", "https://evil.example/mcp").unwrap().is_none());
        assert!(file.load("other", "https://a.example/mcp").unwrap().is_none());
    }

    #[test]
    fn the_file_is_owner_only_and_removed_when_empty() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("config");
        let file = CredentialsFile::new(&config);
        file.save(None, "a", "https://a.example/mcp", credentials("t1"))
            .unwrap();
        assert_eq!(std::fs::metadata(file.path()).unwrap().mode() & 0o777, 0o600);
        assert_eq!(std::fs::metadata(&config).unwrap().mode() & 0o777, 0o700);
        file.save(None, "b", "https://b.example/mcp", credentials("t2"))
            .unwrap();
        assert!(file.remove("a").unwrap());
        assert!(!file.remove("a").unwrap(), "nothing left to remove");
        assert!(file.has("b").unwrap());
        assert!(file.remove("b").unwrap());
        assert!(!file.path().exists());
    }

    #[test]
    fn a_malformed_file_is_an_error_that_names_it() {
        let dir = tempfile::tempdir().unwrap();
        let file = CredentialsFile::new(dir.path());
        std::fs::write(file.path(), "{not json").unwrap();
        let error = file.load("a", "u").unwrap_err().to_string();
        assert!(error.contains(&file.path().display().to_string()), "{error}");
        assert!(error.contains("elph mcp login"), "{error}");
    }

    #[tokio::test]
    async fn a_save_inside_a_refresh_does_not_wait_for_its_own_lock() {
        let dir = tempfile::tempdir().unwrap();
        let file = CredentialsFile::new(dir.path());
        let store = file.for_server("a", "https://a.example/mcp");
        let guard = store.acquire_refresh_guard().await.unwrap();
        let saved = tokio::time::timeout(
            std::time::Duration::from_secs(20),
            store.save(credentials("fresh")),
        )
        .await;
        assert!(
            matches!(saved, Ok(Ok(()))),
            "the save finished under the refresh lock"
        );
        drop(guard);
        // Released: another writer gets the lock.
        file.save(None, "b", "https://b.example/mcp", credentials("t"))
            .unwrap();
        assert_eq!(token_of(&store.load().await.unwrap().unwrap()), "fresh");
    }
}
