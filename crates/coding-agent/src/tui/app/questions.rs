//! MCP servers' questions in the app: one form at a time (the others wait, in order, until the
//! open modal closes), closed with a notice when nobody waits for the answer any more.

use crossterm::event::KeyEvent;

use super::super::elicitation::ElicitationForm;
use super::super::worker::Level;
use super::{App, Modal};
use crate::mcp::elicitation::ElicitationAnswer;
use crate::session::PendingElicitation;

impl App {
    /// Shows an MCP server's question now, or after the modal that is open.
    pub(crate) fn ask(&mut self, question: PendingElicitation) {
        if self.modal.is_some() {
            self.questions.push_back(question);
            return;
        }
        self.set_label(format!(
            "MCP server '{}' waits for your answer",
            question.request.server
        ));
        self.modal = Some(Modal::Elicitation(Box::new(ElicitationForm::new(question))));
        self.scroll = 0;
    }

    /// The next waiting question, if the modal closed.
    pub(super) fn next_question(&mut self) {
        while self.modal.is_none()
            && let Some(question) = self.questions.pop_front()
        {
            if !question.is_withdrawn() {
                self.ask(question);
            }
        }
    }

    /// Closes a question nobody waits for any more, and says so.
    pub(super) fn drop_withdrawn_question(&mut self) {
        if let Some(Modal::Elicitation(form)) = &self.modal
            && form.is_withdrawn()
        {
            let server = form.server().to_string();
            self.modal = None;
            self.push_notice(
                Level::Info,
                format!(
                    "MCP server '{server}''s question was withdrawn (its call ended or it ran out of time)"
                ),
            );
            self.set_label("working");
            self.next_question();
        }
    }

    /// A key for the open form; an answer closes it and shows the next waiting question.
    pub(super) fn question_key(&mut self, key: KeyEvent) {
        let Some(Modal::Elicitation(form)) = &mut self.modal else {
            return;
        };
        let Some(answer) = form.key(key) else {
            return;
        };
        let server = form.server().to_string();
        self.modal = None;
        let said = match answer {
            ElicitationAnswer::Accept(_) => "sent your answer to",
            ElicitationAnswer::Decline => "declined the question of",
            ElicitationAnswer::Cancel => "cancelled the question of",
        };
        self.push_notice(Level::Info, format!("{said} MCP server '{server}'"));
        self.set_label("working");
        self.next_question();
    }
}
