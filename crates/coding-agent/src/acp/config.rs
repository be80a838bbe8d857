//! Session config options (ACP's `configOptions`): the agent mode and the model, as two selects of
//! the `mode` and `model` categories. `session/set_config_option` changes them as `set_mode` and
//! `/model` do; the answer and every `config_option_update` carry both options whole.

use std::collections::HashSet;
use std::path::Path;
use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::schema::{
    SessionConfigOption, SessionConfigOptionCategory, SessionConfigOptionValue, SessionConfigSelectOption,
};
use agent_client_protocol::{Error, ErrorCode};
use elph_agent::harness::AgentMode;

use super::session::lock;
use crate::session::{Op, OpId, SessionHandle};

/// The id of the mode option.
pub(super) const MODE: &str = "mode";
/// The id of the model option.
pub(super) const MODEL: &str = "model";

/// A session's current mode and model, and the models it offers; shared by the connection's
/// handlers (which answer `set_config_option`) and the session's forwarder (which hears what the
/// session really switched to).
#[derive(Clone, Debug)]
pub(crate) struct ConfigState(Arc<Mutex<Current>>);

#[derive(Clone, Debug)]
struct Current {
    mode: AgentMode,
    model: String,
    /// `provider/model` choices: the session's model, and every model a provider file names.
    models: Vec<String>,
    /// Operations submitted for a `set_config_option`: answered already, so their outcome is only
    /// reflected in the options, never said as a message.
    quiet: HashSet<OpId>,
}

/// What a `set_config_option` asks for.
pub(super) enum Change {
    Mode(AgentMode),
    Model(String),
}

impl ConfigState {
    pub(crate) fn new(mode: AgentMode, model: &str, config_dir: &Path) -> Self {
        let mut models = vec![model.to_string()];
        let catalog = elph_ai::Catalog::load(config_dir);
        for provider in catalog.providers() {
            for declared in &provider.models {
                let name = format!("{}/{}", provider.name, declared.id);
                if !models.contains(&name) {
                    models.push(name);
                }
            }
        }
        ConfigState(Arc::new(Mutex::new(Current {
            mode,
            model: model.to_string(),
            models,
            quiet: HashSet::new(),
        })))
    }

    /// Submits `op`, a config change the client has had its answer for. The state is held while
    /// submitting, so the session cannot finish the operation (and the forwarder ask whether it
    /// was quiet) before it is marked.
    pub(super) fn submit_quietly(&self, session: &SessionHandle, op: Op) {
        let mut current = lock(&self.0);
        let id = session.submit(op);
        current.quiet.insert(id);
    }

    /// Whether `op` was a config change (forgetting it: each outcome comes once).
    pub(super) fn was_quiet(&self, op: OpId) -> bool {
        lock(&self.0).quiet.remove(&op)
    }

    /// The model the session uses now.
    pub(super) fn model(&self) -> String {
        lock(&self.0).model.clone()
    }

    pub(super) fn set_mode(&self, mode: AgentMode) {
        lock(&self.0).mode = mode;
    }

    /// The session uses `model` now (a switch, or a failed one that left it there).
    pub(super) fn set_model(&self, model: &str) {
        let mut current = lock(&self.0);
        if !current.models.iter().any(|known| known == model) {
            current.models.push(model.to_string());
        }
        current.model = model.to_string();
    }

    /// Reads a request's option and value: an unknown option, a value of the wrong kind or one the
    /// option does not offer is refused with what would be accepted.
    pub(super) fn parse(&self, config_id: &str, value: &SessionConfigOptionValue) -> Result<Change, Error> {
        let SessionConfigOptionValue::ValueId { value } = value else {
            return Err(invalid(format!(
                "{config_id} takes one of its option values, not a boolean"
            )));
        };
        let value = &*value.0;
        match config_id {
            MODE => value.parse::<AgentMode>().map(Change::Mode).map_err(invalid),
            MODEL => {
                let current = lock(&self.0);
                if current.models.iter().any(|known| known == value) {
                    Ok(Change::Model(value.to_string()))
                } else {
                    Err(invalid(format!(
                        "{value} is not one of the models offered: {}",
                        current.models.join(", ")
                    )))
                }
            }
            other => Err(invalid(format!(
                "no config option {other:?}; this agent has \"{MODE}\" and \"{MODEL}\""
            ))),
        }
    }

    /// Both options, with their current values.
    pub(crate) fn options(&self) -> Vec<SessionConfigOption> {
        let current = lock(&self.0).clone();
        let modes: Vec<SessionConfigSelectOption> = AgentMode::ALL
            .into_iter()
            .map(|mode| {
                SessionConfigSelectOption::new(mode.as_str(), mode_name(mode))
                    .description(mode.description().to_string())
            })
            .collect();
        let models: Vec<SessionConfigSelectOption> = current
            .models
            .iter()
            .map(|model| SessionConfigSelectOption::new(model.clone(), model.clone()))
            .collect();
        vec![
            SessionConfigOption::select(MODE, "Mode", current.mode.as_str(), modes)
                .category(SessionConfigOptionCategory::Mode)
                .description("build changes files and runs commands; plan only reads".to_string()),
            SessionConfigOption::select(MODEL, "Model", current.model, models)
                .category(SessionConfigOptionCategory::Model),
        ]
    }
}

pub(super) fn mode_name(mode: AgentMode) -> &'static str {
    match mode {
        AgentMode::Build => "Build",
        AgentMode::Plan => "Plan",
    }
}

fn invalid(message: impl Into<String>) -> Error {
    Error::new(ErrorCode::INVALID_PARAMS, message.into())
}
