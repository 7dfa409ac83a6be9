//! The [`Elicitor`] of a task that an `after_input` operation
//! (`#[operation(mcp(task = "after_input"))]`) becomes: the operation runs again from the start,
//! and each question it reaches gets the answer the input-required rounds gathered for it
//! (by position and key, as in a round); a question they did not answer is asked the task's
//! way (`tasks/get` `input_required`, `tasks/update`).

use super::elicitation::{Rounds, response_of};
use futures::future::BoxFuture;
use opkit::CallError;
use opkit::elicit::{ClientRequest, ElicitRequest, ElicitResponse, Elicitor};
use serde_json::Value;
use std::sync::Arc;

/// The answers of the rounds first, then `then` (the task's elicitor).
pub(crate) struct AnsweredElicitor {
    rounds: Arc<Rounds>,
    then: Arc<dyn Elicitor>,
}

impl AnsweredElicitor {
    pub(crate) fn new(rounds: Arc<Rounds>, then: Arc<dyn Elicitor>) -> Self {
        Self { rounds, then }
    }
}

impl Elicitor for AnsweredElicitor {
    fn elicit(
        &self,
        mut request: ElicitRequest,
    ) -> BoxFuture<'static, Result<ElicitResponse, CallError>> {
        const METHOD: &str = "elicitation/create";
        let (index, key) = self.rounds.place(METHOD, request.key.take());
        match self.rounds.given(index, &key, METHOD) {
            Ok(Some(answer)) => Box::pin(std::future::ready(Ok(response_of(&answer)))),
            Ok(None) => {
                request.key = Some(key);
                self.then.elicit(request)
            }
            Err(error) => Box::pin(std::future::ready(Err(error))),
        }
    }

    fn request(&self, mut request: ClientRequest) -> BoxFuture<'static, Result<Value, CallError>> {
        let (index, key) = self.rounds.place(&request.method, request.key.take());
        match self.rounds.given(index, &key, &request.method) {
            Ok(Some(answer)) => Box::pin(std::future::ready(Ok(answer))),
            Ok(None) => {
                request.key = Some(key);
                self.then.request(request)
            }
            Err(error) => Box::pin(std::future::ready(Err(error))),
        }
    }
}
