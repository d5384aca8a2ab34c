//! Session stores: sessions opened by id are written back after every run and resume, and
//! a waiting session opened by another agent (another process) resumes where it stopped.
// Test code: helpers outside `#[test]` fns unwrap and index too; a panic fails the test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use std::sync::Arc;

use common::*;
use serde_json::json;
use starweaver::store::{MemorySessionStore, SessionStore, SqliteSessionStore};
use starweaver::testing::TestModel;
use starweaver::{Agent, Error, HitlDecisions, ModelResponse, RunStatus, ToolBuilder, ToolContext};

/// An agent whose `deploy` needs approval, with the script starting at `from`, on `store`.
fn agent(from: usize, store: Arc<dyn SessionStore>, runs: &Counter) -> Agent {
    let script = [
        TestModel::tool_call_response([call("c_deploy", "deploy", json!({"env": "prod"}))]),
        ModelResponse::text("deployed"),
    ];
    let runs = runs.clone();
    let deploy = raw_tool(ToolBuilder::new("deploy"), move |_: ToolContext, _: Args| {
        runs.bump();
        async { Ok(json!({"ok": true})) }
    });
    Agent::builder(Arc::new(TestModel::new(script.into_iter().skip(from))))
        .tool(deploy)
        .approval_required_tools(["deploy"])
        .session_store(store)
        .build()
        .unwrap()
}

fn approve_all(hitl: &starweaver::Hitl) -> HitlDecisions {
    hitl.approvals.iter().map(|a| a.approve().decided_by("ops")).collect::<Vec<_>>().into()
}

#[tokio::test]
async fn a_waiting_session_in_sqlite_resumes_from_another_agent_and_store_handle() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let runs = Counter::default();

    let first = agent(0, Arc::new(SqliteSessionStore::open(&path).unwrap()), &runs);
    let mut session = first.open_session("ticket-42").unwrap();
    assert_eq!(session.id(), Some("ticket-42"));
    let waiting = session.run("deploy it").await.unwrap();
    assert_eq!(waiting.status, RunStatus::Waiting);
    drop((session, first));

    // Another process: its own agent, its own connection to the same file.
    let store = Arc::new(SqliteSessionStore::open(&path).unwrap());
    assert_eq!(store.ids().unwrap(), ["ticket-42"]);
    assert_eq!(store.load("ticket-42").unwrap().unwrap().revision, 1);
    let second = agent(1, store.clone(), &runs);
    let mut reopened = second.open_session("ticket-42").unwrap();
    assert_eq!(reopened.pending(), Some(waiting.hitl.clone()));
    let done = reopened.resume(approve_all(&waiting.hitl)).await.unwrap();
    assert_eq!(done.status, RunStatus::Completed);
    assert_eq!(done.text(), Some("deployed"));
    assert_eq!(runs.get(), 1, "the tool ran once, after the approval");

    let stored = store.load("ticket-42").unwrap().unwrap();
    // One write claims the decision before the tool runs, one records the finished run.
    assert_eq!(stored.revision, 3);
    assert_eq!(stored.state["waiting"], json!(null));
    assert_eq!(stored.state["history"], done.messages.to_json());
}

#[tokio::test]
async fn a_second_writer_of_one_session_gets_a_conflict_not_a_lost_update() {
    let store: Arc<dyn SessionStore> = Arc::new(MemorySessionStore::new());
    let runs = Counter::default();
    let mut session = agent(0, store.clone(), &runs).open_session("s").unwrap();
    let waiting = session.run("go").await.unwrap();

    let mut one = agent(1, store.clone(), &runs).open_session("s").unwrap();
    let mut two = agent(1, store.clone(), &runs).open_session("s").unwrap();
    one.resume(approve_all(&waiting.hitl)).await.unwrap();
    assert_eq!(runs.get(), 1);
    let err = two.resume(approve_all(&waiting.hitl)).await.unwrap_err();
    assert!(matches!(err, Error::SessionConflict { ref id, expected: 1, found: 3 } if id == "s"), "{err}");
    assert_eq!(runs.get(), 1, "the loser is refused before its approved tool runs");
    assert_eq!(two.pending(), Some(waiting.hitl.clone()), "the refused handle still shows what it waited for");
    assert!(err.to_string().contains("open it again"), "{err}");
    assert_eq!(store.load("s").unwrap().unwrap().state["waiting"], json!(null), "the first writer's state stays");
}

#[tokio::test]
async fn a_refused_resume_writes_nothing() {
    let store: Arc<dyn SessionStore> = Arc::new(MemorySessionStore::new());
    let runs = Counter::default();
    let mut session = agent(0, store.clone(), &runs).open_session("s").unwrap();
    session.run("go").await.unwrap();
    let before = store.load("s").unwrap().unwrap();
    assert!(session.resume(Vec::<starweaver::ApprovalDecision>::new()).await.is_err());
    assert_eq!(store.load("s").unwrap().unwrap(), before);
}

#[tokio::test]
async fn sessions_without_an_id_are_never_stored() {
    let store: Arc<dyn SessionStore> = Arc::new(MemorySessionStore::new());
    let agent = agent(0, store.clone(), &Counter::default());
    agent.session().run("go").await.unwrap();
    assert_eq!(agent.session().id(), None);
    assert!(store.ids().unwrap().is_empty());
}

#[test]
fn bad_ids_files_and_stored_states_get_named_errors() {
    let store: Arc<dyn SessionStore> = Arc::new(MemorySessionStore::new());
    let agent = agent(0, store.clone(), &Counter::default());
    let err = agent.open_session("").err().unwrap();
    assert_eq!(err.to_string(), "invalid option `session_id`: must not be empty");

    store.save("broken", &json!({"version": 1}), 0).unwrap();
    let err = agent.open_session("broken").err().unwrap().to_string();
    assert_eq!(err, "invalid session state: stored session `broken`: at `.`: missing field `history`");

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("not-a-db");
    std::fs::write(&path, b"this is not a database, just some text that is long enough").unwrap();
    let err = SqliteSessionStore::open(&path).unwrap_err().to_string();
    assert!(err.starts_with(&format!("session store `{}`: open failed", path.display())), "{err}");
    assert!(err.contains("not a database"), "{err}");
}

#[test]
fn sqlite_store_saves_loads_lists_and_deletes() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteSessionStore::open(dir.path().join("s.db")).unwrap();
    assert_eq!(store.load("a").unwrap(), None);
    assert_eq!(store.save("b", &json!({"n": 1}), 0).unwrap(), 1);
    assert_eq!(store.save("a", &json!({"n": 2}), 0).unwrap(), 1);
    assert_eq!(store.save("a", &json!({"n": 3}), 1).unwrap(), 2);
    assert!(matches!(store.save("a", &json!({}), 1), Err(Error::SessionConflict { found: 2, .. })));
    assert_eq!(store.load("a").unwrap().unwrap().state, json!({"n": 3}));
    assert_eq!(store.ids().unwrap(), ["a", "b"]);
    assert!(store.delete("a").unwrap());
    assert!(!store.delete("a").unwrap());
    assert_eq!(store.ids().unwrap(), ["b"]);
}
