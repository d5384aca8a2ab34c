//! Completions (`completion/complete`): the values a client may offer for a prompt's
//! argument or a resource template's variable while the user types it.
//!
//! The application gives a completer per argument; an argument without one completes to
//! no values, which is a correct answer (MCP's "nothing to suggest"), not an error.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use rmcp::model::CompletionInfo;

use crate::tool::ToolError;

/// What a completer is asked: the argument, what the user has typed of it so far, and the
/// values already chosen for the others.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct CompletionRequest {
    /// The argument (or template variable) being completed.
    pub argument: String,
    /// What has been typed of it so far.
    pub value: String,
    /// The other arguments' values the client has already resolved.
    pub arguments: HashMap<String, String>,
}

/// A completer: the candidate values for one argument, best first.
pub(crate) type Completer =
    Arc<dyn Fn(CompletionRequest) -> BoxFuture<'static, Result<Vec<String>, ToolError>> + Send + Sync>;

/// The completers of one prompt's arguments or one template's variables, by name.
#[derive(Clone, Default)]
pub(crate) struct Completers(HashMap<String, Completer>);

impl Completers {
    /// Adds `argument`'s completer (a later one for the same argument replaces it).
    pub(crate) fn insert<F, Fut>(&mut self, argument: impl Into<String>, complete: F)
    where
        F: Fn(CompletionRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<String>, ToolError>> + Send + 'static,
    {
        self.0.insert(argument.into(), Arc::new(move |request| complete(request).boxed()));
    }

    /// The names completers were given for, for the checks at build.
    pub(crate) fn names(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    /// `argument`'s completer, if it has one.
    pub(crate) fn get(&self, argument: &str) -> Option<Completer> {
        self.0.get(argument).cloned()
    }
}

/// Values as MCP's answer: at most [`CompletionInfo::MAX_VALUES`], the best ones (the
/// completer gives them best first), with the total and whether more were left out.
pub(crate) fn info(mut values: Vec<String>) -> CompletionInfo {
    let total = u32::try_from(values.len()).unwrap_or(u32::MAX);
    let has_more = values.len() > CompletionInfo::MAX_VALUES;
    values.truncate(CompletionInfo::MAX_VALUES);
    let mut info = CompletionInfo::default();
    info.values = values;
    info.total = Some(total);
    info.has_more = Some(has_more);
    info
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completers_are_found_by_argument_and_long_lists_are_cut_to_the_first_hundred() {
        let mut completers = Completers::default();
        completers.insert("city", |typed: CompletionRequest| async move { Ok(vec![format!("{}aris", typed.value)]) });
        let request = CompletionRequest { argument: "city".into(), value: "P".into(), ..CompletionRequest::default() };
        assert_eq!(completers.get("city").unwrap()(request).now_or_never().unwrap().unwrap(), ["Paris"]);
        assert!(completers.get("country").is_none());
        let many = info((0..150).map(|n| n.to_string()).collect());
        assert_eq!((many.values.len(), many.total, many.has_more), (100, Some(150), Some(true)));
        assert_eq!(many.values[0], "0");
        let few = info(vec!["paris".into()]);
        assert_eq!((few.values, few.total, few.has_more), (vec!["paris".to_owned()], Some(1), Some(false)));
    }
}
