//! The loopback redirect of `elph mcp login`: a small HTTP server on 127.0.0.1 at a port the
//! system picks, where the browser lands after the user approves, with `code` and `state`.
//!
//! Only the loopback interface is bound (RFC 8252 §7.3), so no other machine can reach it. Another
//! program of the machine could still call it: a request with a `state` other than this login's is
//! answered 400 and the wait goes on, so such a request can neither inject its own code nor end the
//! login; the PKCE verifier makes a stolen code worthless besides.

use std::convert::Infallible;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

/// The path of the redirect URI.
const CALLBACK_PATH: &str = "/callback";

/// A page for the browser.
pub(crate) struct Page {
    status: StatusCode,
    text: String,
}

impl Page {
    pub(crate) fn success(text: impl Into<String>) -> Page {
        Page {
            status: StatusCode::OK,
            text: text.into(),
        }
    }

    pub(crate) fn failure(text: impl Into<String>) -> Page {
        Page {
            status: StatusCode::BAD_REQUEST,
            text: text.into(),
        }
    }

    fn into_response(self) -> Response<Full<Bytes>> {
        let mut response = Response::new(Full::new(Bytes::from(format!("Elph: {}\n", self.text))));
        *response.status_mut() = self.status;
        response.headers_mut().insert(
            hyper::header::CONTENT_TYPE,
            hyper::header::HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        // Closed once answered, so that the end of the connection says the page was written.
        response.headers_mut().insert(
            hyper::header::CONNECTION,
            hyper::header::HeaderValue::from_static("close"),
        );
        response
    }
}

/// How long the browser's page may take to be written once the login has ended.
const PAGE_WRITE_LIMIT: Duration = Duration::from_secs(5);

/// What the authorization server sent back.
pub(crate) struct Arrival {
    pub code: String,
    pub issuer: Option<String>,
    reply: oneshot::Sender<Page>,
    /// Cancelled when the browser's connection has closed (after its page was written).
    closed: CancellationToken,
}

impl Arrival {
    /// Answers the browser's request with `page` (it says how the login ended), and waits until
    /// the page is written: the login's runtime ends right after, and would cut it off.
    pub(crate) async fn answer(self, page: Page) {
        if self.reply.send(page).is_ok() {
            let _ = tokio::time::timeout(PAGE_WRITE_LIMIT, self.closed.cancelled()).await;
        }
    }
}

/// One request of the browser, handed from its connection to the wait.
struct Incoming {
    request: Request<hyper::body::Incoming>,
    reply: oneshot::Sender<Page>,
    closed: CancellationToken,
}

/// Why the wait ended without a code.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CallbackError {
    #[error("the authorization server refused: {0}")]
    Refused(String),
    #[error("no answer from the browser within {} minutes", .0.as_secs() / 60)]
    TimedOut(Duration),
    #[error("the loopback listener failed: {0}")]
    Listener(std::io::Error),
}

/// The listening redirect endpoint.
pub(crate) struct Redirect {
    listener: TcpListener,
    uri: String,
}

impl Redirect {
    /// Listens on 127.0.0.1 at a port the system picks.
    pub(crate) async fn bind() -> std::io::Result<Redirect> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let port = listener.local_addr()?.port();
        Ok(Redirect {
            listener,
            uri: format!("http://127.0.0.1:{port}{CALLBACK_PATH}"),
        })
    }

    /// The redirect URI registered with the authorization server.
    pub(crate) fn uri(&self) -> &str {
        &self.uri
    }

    /// Waits (at most `limit`) for the redirect that carries `state`; other requests are
    /// answered and ignored. The caller answers the returned arrival's browser request.
    pub(crate) async fn wait(self, state: &str, limit: Duration) -> Result<Arrival, CallbackError> {
        let (tx, mut rx) = mpsc::channel::<Incoming>(8);
        let listener = self.listener;
        let accept = async move {
            loop {
                let (stream, _) = listener.accept().await?;
                let tx = tx.clone();
                tokio::spawn(async move {
                    let closed = CancellationToken::new();
                    let on_close = closed.clone();
                    let service = hyper::service::service_fn(move |request| {
                        let tx = tx.clone();
                        let closed = closed.clone();
                        async move {
                            let (reply, page) = oneshot::channel();
                            let incoming = Incoming {
                                request,
                                reply,
                                closed,
                            };
                            if tx.send(incoming).await.is_err() {
                                return Ok::<_, Infallible>(
                                    Page::failure("this login has ended").into_response(),
                                );
                            }
                            let page = page
                                .await
                                .unwrap_or_else(|_| Page::failure("this login has ended"));
                            Ok(page.into_response())
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                    on_close.cancel();
                });
            }
        };
        let base = self.uri;
        let requests = async move {
            while let Some(Incoming {
                request,
                reply,
                closed,
            }) = rx.recv().await
            {
                let uri = request.uri();
                if uri.path() != CALLBACK_PATH {
                    let _ = reply.send(Page {
                        status: StatusCode::NOT_FOUND,
                        text: "not found".into(),
                    });
                    continue;
                }
                let pairs = query_pairs(&base, uri.query().unwrap_or_default());
                let find = |key: &str| {
                    pairs
                        .iter()
                        .find(|(name, _)| name == key)
                        .map(|(_, value)| value.clone())
                };
                if find("state").as_deref() != Some(state) {
                    let _ = reply.send(Page::failure(
                        "this answer does not belong to the login in progress (its state differs); ignored",
                    ));
                    continue;
                }
                if let Some(error) = find("error") {
                    let description = find("error_description")
                        .map(|text| format!(" ({})", crate::terminal_text::escape(&text)))
                        .unwrap_or_default();
                    let reason = format!("{}{description}", crate::terminal_text::escape(&error));
                    let _ = reply.send(Page::failure(format!("the login failed: {reason}")));
                    return Err(CallbackError::Refused(reason));
                }
                let Some(code) = find("code") else {
                    let _ = reply.send(Page::failure("the answer carries no code; ignored"));
                    continue;
                };
                return Ok(Arrival {
                    code,
                    issuer: find("iss"),
                    reply,
                    closed,
                });
            }
            Err(CallbackError::Listener(std::io::Error::other(
                "the listener stopped",
            )))
        };
        let waited = tokio::time::timeout(limit, async {
            tokio::select! {
                result = accept => match result {
                    Err(error) => Err(CallbackError::Listener(error)),
                    Ok::<(), std::io::Error>(()) => Err(CallbackError::Listener(std::io::Error::other("the listener stopped"))),
                },
                arrival = requests => arrival,
            }
        })
        .await;
        waited.unwrap_or(Err(CallbackError::TimedOut(limit)))
    }
}

/// The decoded pairs of a query string.
fn query_pairs(base: &str, query: &str) -> Vec<(String, String)> {
    let Ok(mut url) = reqwest::Url::parse(base) else {
        return Vec::new();
    };
    url.set_query(Some(query));
    url.query_pairs()
        .map(|(name, value)| (name.into_owned(), value.into_owned()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn get(url: &str) -> (u16, String) {
        let client = elph_ai::http_client_builder().unwrap().build().unwrap();
        let response = client.get(url).send().await.unwrap();
        let status = response.status().as_u16();
        (status, response.text().await.unwrap())
    }

    #[tokio::test]
    async fn requests_of_another_state_or_path_are_ignored_and_the_right_one_is_returned() {
        let redirect = Redirect::bind().await.unwrap();
        let uri = redirect.uri().to_string();
        assert!(uri.starts_with("http://127.0.0.1:"), "{uri}");
        let waiter = tokio::spawn(async move { redirect.wait("s1", Duration::from_secs(60)).await });
        let (status, _) = get(&uri.replace("/callback", "/favicon.ico")).await;
        assert_eq!(status, 404);
        let (status, text) = get(&format!("{uri}?code=evil&state=other")).await;
        assert_eq!(status, 400);
        assert!(text.contains("ignored"), "{text}");
        let browser = tokio::spawn(get_owned(format!(
            "{uri}?code=c%2B1&state=s1&iss=https%3A%2F%2Fas"
        )));
        let arrival = waiter.await.unwrap().unwrap();
        assert_eq!(arrival.code, "c+1");
        assert_eq!(arrival.issuer.as_deref(), Some("https://as"));
        arrival.answer(Page::success("logged in")).await;
        assert_eq!(browser.await.unwrap(), (200, "Elph: logged in\n".to_string()));
    }

    async fn get_owned(url: String) -> (u16, String) {
        get(&url).await
    }

    #[tokio::test]
    async fn an_error_from_the_server_ends_the_wait_with_its_reason() {
        let redirect = Redirect::bind().await.unwrap();
        let uri = redirect.uri().to_string();
        let waiter = tokio::spawn(async move { redirect.wait("s1", Duration::from_secs(60)).await });
        let (status, _) = get(&format!(
            "{uri}?error=access_denied&error_description=no&state=s1"
        ))
        .await;
        assert_eq!(status, 400);
        let Err(error) = waiter.await.unwrap() else {
            panic!("an error was expected");
        };
        let error = error.to_string();
        assert_eq!(error, "the authorization server refused: access_denied (no)");
    }
}
