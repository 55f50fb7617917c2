//! openraft's storage conformance suite (`openraft::testing::Suite`, the
//! suite of the 0.9 line) against the Sarsen log store and state machine,
//! each test on fresh stores in a new temporary directory.

use openraft::testing::{StoreBuilder, Suite};
use openraft::StorageError;
use sarsen::merge::Append;
use sarsen_raft::{LogStore, NodeId, StateMachine, StateMachineOptions, TypeConfig};
use tempfile::TempDir;

struct SarsenBuilder;

impl StoreBuilder<TypeConfig, LogStore, StateMachine, TempDir> for SarsenBuilder {
    async fn build(&self) -> Result<(TempDir, LogStore, StateMachine), StorageError<NodeId>> {
        let dir = tempfile::tempdir().map_err(|e| {
            StorageError::from_io_error(
                openraft::ErrorSubject::Store,
                openraft::ErrorVerb::Write,
                e,
            )
        })?;
        let (log, sm) = sarsen_raft::open(
            dir.path(),
            StateMachineOptions::new().merge_operator(Append::new()),
        )
        .map_err(|e| e.into_storage(openraft::ErrorSubject::Store, openraft::ErrorVerb::Write))?;
        Ok((dir, log, sm))
    }
}

#[test]
fn openraft_storage_suite() {
    Suite::test_all(SarsenBuilder).expect("conformance suite");
}
