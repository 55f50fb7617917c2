//! Read and write transactions: [`RoTxn`] (`read.rs`), [`RwTxn`] (`write.rs`)
//! and its nested children (`nested.rs`), over the state they share with
//! the environment. The write transaction's own state is `writer.rs`;
//! named databases, `catalog.rs`; finding a tree and running one change on
//! it, `change.rs`; page reuse, `gc.rs`; commit, `commit.rs`.

mod canary;
mod catalog;
mod change;
pub(crate) mod commit;
pub(crate) mod compact;
mod cursor;
mod dup;
pub(crate) mod group;
mod info;
mod modes;
mod nested;
mod place;
mod read;
pub(crate) mod shrink;
mod slow;
mod write;

pub use canary::Canary;
pub use cursor::RwCursor;
pub use info::TxnInfo;
pub use nested::NestedTxn;
pub use read::{InactiveRoTxn, RoTxn};
pub use write::RwTxn;
