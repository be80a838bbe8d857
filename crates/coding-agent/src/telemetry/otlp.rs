//! Spans as OTLP/HTTP with the JSON encoding (the OpenTelemetry protocol's `/v1/traces`), sent by
//! a background task in batches.
//!
//! Written by hand rather than with the OpenTelemetry SDK (and its exporter on tonic): one export
//! request of a few span fields is a small serde_json document, where the SDK would add dozens of
//! crates to a cold build for nothing Elph uses. The JSON encoding is part of the OTLP spec; its
//! two quirks are kept: ids are hex (not base64), and 64-bit integers are strings.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

/// How long one export request may take.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(5);
/// The most spans one request carries.
const BATCH: usize = 256;
/// How long a finished span may wait for others before it is sent.
const LINGER: Duration = Duration::from_secs(2);

/// One finished span.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Span {
    pub(crate) trace_id: [u8; 16],
    pub(crate) span_id: [u8; 8],
    pub(crate) parent: Option<[u8; 8]>,
    pub(crate) name: String,
    pub(crate) start_ns: u64,
    pub(crate) end_ns: u64,
    pub(crate) attributes: Vec<(&'static str, Attribute)>,
    /// `Some(message)`: the span failed.
    pub(crate) error: Option<String>,
    /// Spans of the same trace this one follows from without being their child (an async hook
    /// run and the tool call whose event queued it).
    pub(crate) links: Vec<[u8; 8]>,
}

/// A span attribute's value.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Attribute {
    Text(String),
    Int(i64),
    Bool(bool),
}

impl From<&str> for Attribute {
    fn from(text: &str) -> Self {
        Attribute::Text(text.to_string())
    }
}

impl From<String> for Attribute {
    fn from(text: String) -> Self {
        Attribute::Text(text)
    }
}

impl From<bool> for Attribute {
    fn from(flag: bool) -> Self {
        Attribute::Bool(flag)
    }
}

impl From<u64> for Attribute {
    fn from(number: u64) -> Self {
        Attribute::Int(i64::try_from(number).unwrap_or(i64::MAX))
    }
}

/// Nanoseconds since the Unix epoch.
pub(crate) fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| u64::try_from(since.as_nanos()).unwrap_or(u64::MAX))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

fn attribute(key: &str, value: &Attribute) -> Value {
    let value = match value {
        Attribute::Text(text) => json!({ "stringValue": text }),
        Attribute::Int(number) => json!({ "intValue": number.to_string() }),
        Attribute::Bool(flag) => json!({ "boolValue": flag }),
    };
    json!({ "key": key, "value": value })
}

/// One `ExportTraceServiceRequest` of `spans`, from the service `service`.
pub(crate) fn export_request(service: &str, spans: &[Span]) -> Value {
    let spans: Vec<Value> = spans
        .iter()
        .map(|span| {
            let mut encoded = json!({
                "traceId": hex(&span.trace_id),
                "spanId": hex(&span.span_id),
                "name": span.name,
                // SPAN_KIND_INTERNAL: work inside Elph, neither a server's nor a client's call.
                "kind": 1,
                "startTimeUnixNano": span.start_ns.to_string(),
                "endTimeUnixNano": span.end_ns.max(span.start_ns).to_string(),
                "attributes": span.attributes.iter().map(|(key, value)| attribute(key, value)).collect::<Vec<_>>(),
                "status": match &span.error {
                    // STATUS_CODE_ERROR
                    Some(message) => json!({ "code": 2, "message": message }),
                    // STATUS_CODE_OK
                    None => json!({ "code": 1 }),
                },
            });
            if let Some(parent) = span.parent {
                encoded["parentSpanId"] = json!(hex(&parent));
            }
            if !span.links.is_empty() {
                encoded["links"] = span
                    .links
                    .iter()
                    .map(|link| json!({ "traceId": hex(&span.trace_id), "spanId": hex(link) }))
                    .collect();
            }
            encoded
        })
        .collect();
    json!({
        "resourceSpans": [{
            "resource": { "attributes": [attribute("service.name", &Attribute::from(service))] },
            "scopeSpans": [{
                "scope": { "name": "elph", "version": env!("CARGO_PKG_VERSION") },
                "spans": spans,
            }],
        }],
    })
}

/// Where and how spans go, from the standard variables.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Endpoint {
    /// The full `/v1/traces` URL.
    pub(crate) url: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) service: String,
}

impl Endpoint {
    /// From `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (the URL as it is) or `OTEL_EXPORTER_OTLP_ENDPOINT`
    /// (a base, `/v1/traces` appended), with `OTEL_EXPORTER_OTLP_HEADERS` and `OTEL_SERVICE_NAME`.
    /// `None` when neither endpoint is set, or `OTEL_SDK_DISABLED` is `true`: off by default.
    pub(crate) fn from_env(var: &dyn Fn(&str) -> Option<String>) -> Option<Endpoint> {
        let set = |name: &str| var(name).filter(|value| !value.trim().is_empty());
        if set("OTEL_SDK_DISABLED").is_some_and(|value| value.trim().eq_ignore_ascii_case("true")) {
            return None;
        }
        let url = match set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
            Some(url) => url.trim().to_string(),
            None => format!(
                "{}/v1/traces",
                set("OTEL_EXPORTER_OTLP_ENDPOINT")?.trim().trim_end_matches('/')
            ),
        };
        let headers = set("OTEL_EXPORTER_OTLP_TRACES_HEADERS")
            .or_else(|| set("OTEL_EXPORTER_OTLP_HEADERS"))
            .map(|list| parse_headers(&list))
            .unwrap_or_default();
        Some(Endpoint {
            url,
            headers,
            service: set("OTEL_SERVICE_NAME").unwrap_or_else(|| "elph".to_string()),
        })
    }
}

/// `key1=value1,key2=value2`, values percent-encoded (W3C baggage style, as the spec says).
fn parse_headers(list: &str) -> Vec<(String, String)> {
    list.split(',')
        .filter_map(|pair| pair.split_once('='))
        .map(|(name, value)| (name.trim().to_string(), percent_decode(value.trim())))
        .filter(|(name, _)| !name.is_empty())
        .collect()
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let decoded = (bytes[index] == b'%')
            .then(|| bytes.get(index + 1..index + 3))
            .flatten()
            .and_then(|pair| std::str::from_utf8(pair).ok())
            .and_then(|pair| u8::from_str_radix(pair, 16).ok());
        match decoded {
            Some(byte) => {
                out.push(byte);
                index += 3;
            }
            None => {
                out.push(bytes[index]);
                index += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// What the exporting task is sent.
pub(crate) enum Message {
    Span(Span),
    /// Send what is waiting now, then answer.
    Flush(oneshot::Sender<()>),
}

/// The exporting task: batches spans and posts them; a failed export is logged and dropped (the
/// session never waits on a collector).
pub(crate) async fn export(endpoint: Endpoint, mut messages: mpsc::UnboundedReceiver<Message>) {
    let client = match elph_ai::http_client_builder()
        .map_err(|error| error.to_string())
        .and_then(|builder| {
            builder
                .timeout(EXPORT_TIMEOUT)
                .build()
                .map_err(|error| error.to_string())
        }) {
        Ok(client) => client,
        Err(error) => {
            tracing::warn!(%error, "OpenTelemetry export is off: no HTTP client");
            return;
        }
    };
    let mut pending: Vec<Span> = Vec::new();
    loop {
        let message = if pending.is_empty() {
            messages.recv().await
        } else {
            match tokio::time::timeout(LINGER, messages.recv()).await {
                Ok(message) => message,
                Err(_) => {
                    send(&client, &endpoint, &mut pending).await;
                    continue;
                }
            }
        };
        match message {
            Some(Message::Span(span)) => {
                pending.push(span);
                if pending.len() >= BATCH {
                    send(&client, &endpoint, &mut pending).await;
                }
            }
            Some(Message::Flush(done)) => {
                send(&client, &endpoint, &mut pending).await;
                let _ = done.send(());
            }
            None => {
                send(&client, &endpoint, &mut pending).await;
                return;
            }
        }
    }
}

async fn send(client: &reqwest::Client, endpoint: &Endpoint, pending: &mut Vec<Span>) {
    if pending.is_empty() {
        return;
    }
    let spans = std::mem::take(pending);
    let body = export_request(&endpoint.service, &spans).to_string();
    let mut request = client
        .post(&endpoint.url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body);
    for (name, value) in &endpoint.headers {
        request = request.header(name.as_str(), value.as_str());
    }
    match request.send().await {
        Ok(response) if response.status().is_success() => {}
        Ok(response) => tracing::warn!(
            url = %endpoint.url,
            status = %response.status(),
            spans = spans.len(),
            "OpenTelemetry export refused; spans dropped"
        ),
        Err(error) => tracing::warn!(
            url = %endpoint.url,
            %error,
            spans = spans.len(),
            "OpenTelemetry export failed; spans dropped"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_endpoint_comes_from_the_standard_variables_and_is_off_without_them() {
        let vars = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(key, _)| *key == name)
                    .map(|(_, value)| value.to_string())
            }
        };
        assert_eq!(Endpoint::from_env(&vars(&[])), None);
        let base = Endpoint::from_env(&vars(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318/"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=a%20b, tenant=t1"),
        ]))
        .unwrap();
        assert_eq!(base.url, "http://127.0.0.1:4318/v1/traces");
        assert_eq!(
            base.headers,
            [("x-api-key".into(), "a b".into()), ("tenant".into(), "t1".into())]
        );
        assert_eq!(base.service, "elph");
        let traces = Endpoint::from_env(&vars(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:1"),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://b:2/custom"),
        ]))
        .unwrap();
        assert_eq!(traces.url, "http://b:2/custom");
        let off = Endpoint::from_env(&vars(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:1"),
            ("OTEL_SDK_DISABLED", "true"),
        ]));
        assert_eq!(off, None);
    }

    #[test]
    fn spans_are_encoded_as_otlp_json() {
        let span = Span {
            trace_id: [0xab; 16],
            span_id: [1, 2, 3, 4, 5, 6, 7, 8],
            parent: Some([9; 8]),
            name: "hook guard".into(),
            start_ns: 10,
            end_ns: 20,
            attributes: vec![
                ("elph.hook.id", "guard".into()),
                ("elph.hook.duration_ms", Attribute::from(7u64)),
                ("elph.hook.fail_closed", true.into()),
            ],
            error: Some("timed out".into()),
            links: vec![[7; 8]],
        };
        let request = export_request("elph", &[span]);
        let encoded = &request["resourceSpans"][0]["scopeSpans"][0]["spans"][0];
        assert_eq!(encoded["traceId"], "abababababababababababababababab");
        assert_eq!(encoded["spanId"], "0102030405060708");
        assert_eq!(encoded["parentSpanId"], "0909090909090909");
        assert_eq!(encoded["startTimeUnixNano"], "10");
        assert_eq!(encoded["attributes"][1]["value"]["intValue"], "7");
        assert_eq!(encoded["status"]["code"], 2);
        assert_eq!(
            encoded["links"],
            json!([{"traceId": "abababababababababababababababab", "spanId": "0707070707070707"}])
        );
        assert_eq!(
            request["resourceSpans"][0]["resource"]["attributes"][0]["value"]["stringValue"],
            "elph"
        );
    }
}
