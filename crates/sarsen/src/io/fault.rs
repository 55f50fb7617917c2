//! Fault injection and write recording for tests (cargo feature
//! `fault-injection`, off by default; not part of the stable API).
//!
//! A [`FaultPlan`] is attached to one environment with
//! [`EnvOptions::fault_plan`](crate::EnvOptions::fault_plan). Every write
//! (`pwrite`, `pwritev`) and every sync (`fdatasync`) of that environment's
//! data file then goes through it, in `io/file.rs`, the only place they
//! happen in the default mode. The plan can:
//!
//! - fail the n-th write or sync from now with an OS error (`EIO`,
//!   `ENOSPC`, ...), once or for every later one of its kind, optionally
//!   letting the first half of the failing write land (a torn write); the
//!   engine sees the error exactly as if the kernel had returned it;
//! - record every write (offset and bytes) and every sync (with the file
//!   length after it), so that [`crash_image`] can build the file a power
//!   loss would leave: everything written before the last sync, plus a
//!   subset of the writes after it, some of them torn at 512-byte sector
//!   boundaries. The idea is that of SQLite's crash VFS (`test6.c`) and of
//!   redb's crash-testing storage backend.
//!
//! - model the death of the process at an operation ([`FaultPlan::halt_at`],
//!   [`FaultPlan::halt_when`]): from that operation on, every write and sync
//!   of the plan is dropped (not applied, not recorded) and fails, with
//!   `EIO` or by unwinding ([`Kill`]), so the file keeps exactly what the
//!   process had written before it died (the page cache);
//! - share one log between several plans ([`FaultPlan::sharing_log`]): one
//!   plan per process life or per environment of a test, and one log of
//!   the whole boot, from which [`crash_image`] builds the file a power
//!   loss after all of them would leave.
//!
//! Write-map mode writes pages through the map, which no hook sees: only
//! the meta pages and syncs of such an environment pass through here, so
//! crash images are meaningful for the default mode only.
//!
//! Everything is deterministic: the plan counts operations, and the crash
//! image takes a seed.

use std::sync::{Arc, Mutex, MutexGuard};

use crate::error::{Error, Result};

/// Sector size of the simulated disk: a write lands in whole sectors.
pub const SECTOR: u64 = 512;

/// The kind of operation a fault targets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    /// A positioned write (`pwrite` or `pwritev`).
    Write,
    /// A sync (`fdatasync`).
    Sync,
}

/// One recorded operation on the data file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// Bytes that reached the file (the page cache) at `offset`. A vectored
    /// write is recorded as one write of its buffers back to back.
    Write {
        /// File offset, bytes.
        offset: u64,
        /// The bytes written.
        data: Vec<u8>,
    },
    /// A sync that succeeded: every write logged before `started` is
    /// durable.
    Sync {
        /// The file's length after the sync, bytes (its size is durable too).
        len: u64,
        /// The log's length when the sync began. Writes logged between
        /// then and this op finished while it ran (other threads'): it
        /// does not promise them.
        started: usize,
    },
    /// The file was truncated to `len` bytes (`ftruncate`, shrinking):
    /// durable once a sync starts after it; until then a crash image may
    /// keep the longer file.
    SetLen {
        /// The new length, bytes.
        len: u64,
    },
}

/// A programmed failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fault {
    /// Which operations to count.
    pub kind: OpKind,
    /// Fail the operation of that kind with this index, counted from the
    /// moment the fault is armed (0 = the next one).
    pub nth: u64,
    /// The OS error to return (`libc::EIO`, `libc::ENOSPC`, ...).
    pub errno: i32,
    /// For a write: the first half of it (rounded down to whole sectors)
    /// lands before the error.
    pub torn: bool,
    /// Keep failing every later operation of that kind until
    /// [`FaultPlan::disarm`] (a disk that stays full, a device that died).
    pub sticky: bool,
}

/// How an operation dropped by a halted plan ends (see
/// [`FaultPlan::halt_at`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kill {
    /// The operation returns `EIO` (`Error::Io`): the engine runs its
    /// error path (which may try more writes and syncs; they are dropped
    /// too, but changes it makes elsewhere, in the lock file say, stay).
    Eio,
    /// The operation unwinds with a [`Killed`] payload (without calling
    /// the panic hook), so no engine code runs after it but destructors:
    /// closer to a `SIGKILL`. Catch it with [`catch_kill`]. An operation
    /// reached while the thread is already unwinding (a destructor's sync)
    /// returns `EIO` instead.
    Unwind,
}

/// The unwind payload of an operation dropped under [`Kill::Unwind`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Killed;

/// An operation about to run, as a [`FaultPlan::halt_when`] predicate sees
/// it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpInfo {
    /// Writes and syncs this plan has seen before this one (0 = its first).
    pub index: u64,
    /// Write or sync.
    pub kind: OpKind,
    /// A write's file offset, bytes (0 for a sync).
    pub offset: u64,
    /// A write's length, bytes (0 for a sync).
    pub len: u64,
}

type HaltWhen = Box<dyn FnMut(&OpInfo) -> bool + Send>;

/// A programmed process death: the predicate and how dropped operations end.
struct Halt {
    how: Kill,
    when: HaltWhen,
}

impl std::fmt::Debug for Halt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Halt").field("how", &self.how).finish()
    }
}

/// What the plan does with one operation.
enum Verdict {
    Go,
    Fail(Fault),
    Drop(Kill),
}

#[derive(Debug, Default)]
struct State {
    record: bool,
    writes: u64,
    syncs: u64,
    /// Writes and syncs together.
    ops: u64,
    /// The armed fault and the absolute operation index it fires at.
    armed: Option<(Fault, u64)>,
    fired: u64,
    halt: Option<Halt>,
    /// The halt has fired: every later operation is dropped.
    halted: bool,
    dropped: u64,
    /// How long each sync sleeps before it runs (a slow disk).
    sync_delay: std::time::Duration,
}

impl State {
    /// Counts an operation and says what to do with it: a halt first, then
    /// the armed fault.
    fn next(&mut self, kind: OpKind, offset: u64, len: u64) -> Verdict {
        let info = OpInfo {
            index: self.ops,
            kind,
            offset,
            len,
        };
        self.ops += 1;
        let n = match kind {
            OpKind::Write => &mut self.writes,
            OpKind::Sync => &mut self.syncs,
        };
        let index = *n;
        *n += 1;
        if let Some(h) = &mut self.halt {
            if self.halted || (h.when)(&info) {
                self.halted = true;
                self.dropped += 1;
                return Verdict::Drop(h.how);
            }
        }
        let Some((f, at)) = self.armed else {
            return Verdict::Go;
        };
        let hit = f.kind == kind && (index == at || (f.sticky && index > at));
        if hit {
            self.fired += 1;
            Verdict::Fail(f)
        } else {
            Verdict::Go
        }
    }
}

/// The error (or unwind) of an operation dropped by a halted plan.
fn killed(how: Kill, op: &'static str) -> Error {
    if how == Kill::Unwind && !std::thread::panicking() {
        std::panic::resume_unwind(Box::new(Killed));
    }
    Error::io(op, std::io::Error::from_raw_os_error(libc::EIO))
}

/// Runs `f`; `None` if it unwound with [`Killed`] (an operation dropped
/// under [`Kill::Unwind`]), whose destructors have run by then. Any other
/// panic goes on unwinding.
pub fn catch_kill<R>(f: impl FnOnce() -> R) -> Option<R> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => Some(r),
        Err(p) if p.is::<Killed>() => None,
        Err(p) => std::panic::resume_unwind(p),
    }
}

/// A test's handle on the writes and syncs of one environment's data file.
/// Clones share the same state: keep one, give one to
/// [`EnvOptions::fault_plan`](crate::EnvOptions::fault_plan).
/// [`FaultPlan::sharing_log`] makes a plan with its own counters, faults
/// and halt that records into the same log.
#[derive(Clone, Default)]
pub struct FaultPlan {
    inner: Arc<Mutex<State>>,
    log: Arc<Mutex<Vec<Op>>>,
}

impl std::fmt::Debug for FaultPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.state();
        f.debug_struct("FaultPlan")
            .field("record", &s.record)
            .field("logged", &self.log_len())
            .field("writes", &s.writes)
            .field("syncs", &s.syncs)
            .field("armed", &s.armed)
            .field("halt", &s.halt)
            .field("halted", &s.halted)
            .finish()
    }
}

impl FaultPlan {
    /// A plan that records nothing and fails nothing.
    pub fn new() -> FaultPlan {
        FaultPlan::default()
    }

    /// A plan that records every write and sync from the start.
    pub fn recording() -> FaultPlan {
        let p = FaultPlan::new();
        p.set_recording(true);
        p
    }

    /// A plan with fresh counters, no fault and no halt, recording (if
    /// this one does) into this plan's log: the next life of a process
    /// that died, or another environment on the same file. The log then
    /// holds the operations of every such plan in the order they happened
    /// (for operations of one thread; concurrent ones are logged in the
    /// order they finished).
    pub fn sharing_log(&self) -> FaultPlan {
        let record = self.state().record;
        let p = FaultPlan {
            inner: Arc::default(),
            log: Arc::clone(&self.log),
        };
        p.set_recording(record);
        p
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn logged(&self) -> MutexGuard<'_, Vec<Op>> {
        self.log.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Appends `op` to the log if this plan records.
    fn push(&self, op: Op) {
        if self.state().record {
            self.logged().push(op);
        }
    }

    /// Turns recording on or off (the log is kept).
    pub fn set_recording(&self, on: bool) {
        self.state().record = on;
    }

    /// Arms `fault`, replacing any armed one; `nth` counts from now.
    pub fn fail(&self, fault: Fault) {
        let mut s = self.state();
        let now = match fault.kind {
            OpKind::Write => s.writes,
            OpKind::Sync => s.syncs,
        };
        s.armed = Some((fault, now + fault.nth));
    }

    /// Removes the armed fault: later operations succeed.
    pub fn disarm(&self) {
        self.state().armed = None;
    }

    /// How many operations a fault has failed so far (not counting those
    /// a halt dropped).
    pub fn fired(&self) -> u64 {
        self.state().fired
    }

    /// Kills the process at this plan's operation number `n` (writes and
    /// syncs counted together since the plan was made, 0 = its first; see
    /// [`FaultPlan::ops`]): that operation and every later one is dropped,
    /// ending as `how` says. Replaces any earlier halt; an already fired
    /// halt stays fired.
    pub fn halt_at(&self, n: u64, how: Kill) {
        self.halt_when(how, move |o| o.index >= n);
    }

    /// Kills the process at the first operation for which `when` returns
    /// true (called once for each operation before it runs, until then):
    /// that operation and every later one is dropped, not applied to the
    /// file and not logged, and ends as `how` says. Takes precedence over
    /// an armed [`Fault`]. Replaces any earlier halt; an already fired halt
    /// stays fired.
    pub fn halt_when(&self, how: Kill, when: impl FnMut(&OpInfo) -> bool + Send + 'static) {
        self.state().halt = Some(Halt {
            how,
            when: Box::new(when),
        });
    }

    /// Removes a halt that has not fired (one that has stays fired: the
    /// process is dead).
    pub fn cancel_halt(&self) {
        let mut s = self.state();
        if !s.halted {
            s.halt = None;
        }
    }

    /// Whether a halt has fired (the "process" is dead).
    pub fn halted(&self) -> bool {
        self.state().halted
    }

    /// How many operations a halt has dropped.
    pub fn dropped(&self) -> u64 {
        self.state().dropped
    }

    /// Writes and syncs attempted through this plan so far (failed and
    /// dropped ones included).
    pub fn ops(&self) -> u64 {
        self.state().ops
    }

    /// Writes attempted so far (failed ones included).
    pub fn writes(&self) -> u64 {
        self.state().writes
    }

    /// Syncs attempted so far (failed ones included).
    pub fn syncs(&self) -> u64 {
        self.state().syncs
    }

    /// Number of recorded operations (in the log this plan shares).
    pub fn log_len(&self) -> usize {
        self.logged().len()
    }

    /// A copy of the recorded operations, oldest first (of every plan
    /// sharing this one's log).
    pub fn log(&self) -> Vec<Op> {
        self.logged().clone()
    }

    /// Runs a write of `bufs` (back to back) at `offset` through the plan:
    /// `raw` does the real write. `op` names the call in errors.
    pub(crate) fn write(
        &self,
        op: &'static str,
        bufs: &[&[u8]],
        offset: u64,
        raw: impl FnOnce(&[&[u8]], u64) -> Result<()>,
    ) -> Result<()> {
        let total: u64 = bufs.iter().map(|b| b.len() as u64).sum();
        let verdict = self.state().next(OpKind::Write, offset, total);
        let f = match verdict {
            Verdict::Go => {
                raw(bufs, offset)?;
                self.push(Op::Write {
                    offset,
                    data: bufs.concat(),
                });
                return Ok(());
            }
            Verdict::Drop(how) => return Err(killed(how, op)),
            Verdict::Fail(f) => f,
        };
        // A torn write: the first half, up to a sector boundary, lands.
        let end = if f.torn {
            (offset + total / 2) / SECTOR * SECTOR
        } else {
            offset
        };
        if end > offset {
            let keep = bufs.concat()[..(end - offset) as usize].to_vec();
            raw(&[&keep], offset)?;
            self.push(Op::Write { offset, data: keep });
        }
        Err(Error::io(op, std::io::Error::from_raw_os_error(f.errno)))
    }

    /// Runs a truncation of the data file to `len` bytes through the plan:
    /// `raw` truncates. Counted and failed as a write (a dead process
    /// truncates nothing), logged as [`Op::SetLen`].
    pub(crate) fn set_len(&self, len: u64, raw: impl FnOnce() -> Result<()>) -> Result<()> {
        let verdict = self.state().next(OpKind::Write, len, 0);
        match verdict {
            Verdict::Go => {
                raw()?;
                self.push(Op::SetLen { len });
                Ok(())
            }
            Verdict::Drop(how) => Err(killed(how, "ftruncate")),
            Verdict::Fail(f) => Err(Error::io(
                "ftruncate",
                std::io::Error::from_raw_os_error(f.errno),
            )),
        }
    }

    /// Makes every sync sleep `delay` before it runs, as a slow disk
    /// would: writes of other threads meanwhile land after its start, so
    /// they are not covered by it.
    pub fn set_sync_delay(&self, delay: std::time::Duration) {
        self.state().sync_delay = delay;
    }

    /// Runs a sync through the plan: `raw` syncs and returns the file
    /// length afterwards.
    ///
    /// The sync is logged when it ends, with the log's length when it
    /// began: writes that finished while it ran (other threads') are not
    /// covered by it.
    pub(crate) fn sync(&self, raw: impl FnOnce() -> Result<u64>) -> Result<()> {
        let (verdict, delay) = {
            let mut s = self.state();
            (s.next(OpKind::Sync, 0, 0), s.sync_delay)
        };
        match verdict {
            Verdict::Go => {}
            Verdict::Drop(how) => return Err(killed(how, "fdatasync")),
            Verdict::Fail(f) => {
                let e = std::io::Error::from_raw_os_error(f.errno);
                return Err(Error::io("fdatasync", e));
            }
        }
        let started = self.log_len();
        std::thread::sleep(delay);
        let len = raw()?;
        self.push(Op::Sync { len, started });
        Ok(())
    }
}

/// Which of the writes since the last sync land in a crash image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Landing {
    /// None of them.
    Nothing,
    /// All of them, whole.
    Everything,
    /// Each is lost, lands whole, or is torn (each of its sectors lands or
    /// not), chosen by this seed.
    Random(u64),
    /// Those that start below this offset (the meta pages, when it is
    /// three pages) are lost, every other lands whole: the worst case for
    /// a commit that relied on an unsynced meta.
    LostBelow(u64),
    /// Those logged before this index in the log are lost, every later
    /// one lands whole: the worst case for a commit of a group-commit
    /// chain, whose own writes land while those of the unsynced commits it
    /// builds on do not.
    LostBefore(usize),
}

/// splitmix64 step.
fn mix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A crash image: the file a power loss would leave.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CrashImage {
    /// The file's bytes from offset 0, up to the end of the last write that
    /// landed; the rest of the file is zeros.
    pub data: Vec<u8>,
    /// The file's length, bytes (at least `data.len()`).
    pub len: u64,
}

impl CrashImage {
    /// Writes the image to a new file at `path` (its zero tail sparse).
    ///
    /// # Errors
    ///
    /// The `std::io::Error` of creating, writing or extending the file.
    pub fn write_to(&self, path: &std::path::Path) -> std::io::Result<()> {
        let f = std::fs::File::create(path)?;
        std::io::Write::write_all(&mut &f, &self.data)?;
        f.set_len(self.len.max(self.data.len() as u64))
    }

    fn set_len(&mut self, len: u64) {
        self.data.truncate(len as usize);
        self.len = len;
    }

    fn put(&mut self, offset: u64, data: &[u8]) {
        let end = offset as usize + data.len();
        if self.data.len() < end {
            self.data.resize(end, 0);
        }
        self.data[offset as usize..end].copy_from_slice(data);
        self.len = self.len.max(end as u64);
    }
}

/// The data file a power loss would leave if it struck after the first
/// `upto` operations of `log` (a log that starts with the file empty).
///
/// Every write before the last sync in `log[..upto]` is there, and the file
/// is at least as long as that sync found it. The writes after it land as
/// `landing` says, in their order; a torn write lands in whole sectors
/// ([`SECTOR`], aligned to the file). A write that lands past the end
/// extends the file. A crash just before the sync at index `i` is
/// `crash_image(log, i, ..)`.
pub fn crash_image(log: &[Op], upto: usize, landing: Landing) -> CrashImage {
    crash_image_over(&CrashImage::default(), log, upto, landing)
}

/// As [`crash_image`], for a log that began with the file holding `base`
/// (durable): a second power loss after a first one, say.
pub fn crash_image_over(
    base: &CrashImage,
    log: &[Op],
    upto: usize,
    landing: Landing,
) -> CrashImage {
    let ops = &log[..upto.min(log.len())];
    let mut image = base.clone();
    // Writes before the latest start of a completed sync are durable; a
    // write logged while a sync ran is pending, even if a sync after it
    // completed only later than the cut.
    let mut durable_to = 0;
    for (i, o) in ops.iter().enumerate() {
        if let Op::Sync { started, .. } = *o {
            durable_to = durable_to.max(started.min(i));
        }
    }
    // In log order, so a durable truncation cuts what was written before
    // it and not what came after.
    for (i, o) in ops.iter().enumerate() {
        match o {
            Op::Sync { len, .. } => image.len = image.len.max(*len),
            Op::Write { offset, data } if i < durable_to => image.put(*offset, data),
            Op::SetLen { len } if i < durable_to => image.set_len(*len),
            _ => {}
        }
    }
    let pending_from = durable_to;
    let mut rng = match landing {
        Landing::Random(seed) => seed,
        _ => 0,
    };
    for (i, o) in ops.iter().enumerate().skip(pending_from) {
        let (offset, data) = match o {
            Op::Write { offset, data } => (offset, data),
            Op::SetLen { len } => {
                let lands = match landing {
                    Landing::Nothing => false,
                    Landing::Random(_) => mix(&mut rng) & 1 == 1,
                    _ => true,
                };
                if lands {
                    image.set_len(*len);
                }
                continue;
            }
            Op::Sync { .. } => continue,
        };
        let choice = match landing {
            Landing::Nothing => 0,
            Landing::Everything => 1,
            Landing::Random(_) => mix(&mut rng) % 4,
            Landing::LostBelow(below) => u64::from(*offset >= below),
            Landing::LostBefore(k) => u64::from(i >= k),
        };
        match choice {
            0 => {}
            1 => image.put(*offset, data),
            _ => {
                // Torn: sector by sector, each lands or not.
                let mut at = *offset;
                let end = offset + data.len() as u64;
                while at < end {
                    let next = ((at / SECTOR + 1) * SECTOR).min(end);
                    if mix(&mut rng) & 1 == 1 {
                        let piece = &data[(at - offset) as usize..(next - offset) as usize];
                        image.put(at, piece);
                    }
                    at = next;
                }
            }
        }
    }
    image
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(offset: u64, byte: u8, len: usize) -> Op {
        Op::Write {
            offset,
            data: vec![byte; len],
        }
    }

    #[test]
    fn synced_writes_stay_later_ones_land_by_landing() {
        let log = vec![
            w(0, 1, 1024),
            Op::Sync {
                len: 4096,
                started: 1,
            },
            w(512, 2, 1536),
        ];
        let none = crash_image(&log, 3, Landing::Nothing);
        assert_eq!(none.len, 4096);
        assert_eq!(none.data, vec![1; 1024]);
        let all = crash_image(&log, 3, Landing::Everything);
        assert_eq!(&all.data[..512], &[1; 512][..]);
        assert_eq!(&all.data[512..2048], &[2; 1536][..]);
        // Cut before the sync: nothing is durable, the length is not either.
        let early = crash_image(&log, 1, Landing::Nothing);
        assert_eq!((early.len, early.data.len()), (0, 0));
    }

    #[test]
    fn torn_writes_land_in_whole_sectors() {
        let log = vec![
            Op::Sync { len: 0, started: 0 },
            w(0, 7, 8 * SECTOR as usize),
        ];
        let mut torn = 0;
        for seed in 0..64 {
            let img = crash_image(&log, 2, Landing::Random(seed));
            let data = &img.data;
            for s in data.chunks(SECTOR as usize) {
                assert!(s.iter().all(|b| *b == 7) || s.iter().all(|b| *b == 0));
            }
            let landed = data.chunks(SECTOR as usize).filter(|s| s[0] == 7).count();
            torn += usize::from(landed > 0 && landed < 8);
        }
        assert!(torn > 0, "no seed tore the write");
    }

    #[test]
    fn faults_fire_at_the_nth_operation_of_their_kind() {
        let plan = FaultPlan::recording();
        let ok = |_: &[&[u8]], _: u64| Ok(());
        plan.fail(Fault {
            kind: OpKind::Write,
            nth: 1,
            errno: libc::ENOSPC,
            torn: false,
            sticky: false,
        });
        assert!(plan.sync(|| Ok(0)).is_ok());
        assert!(plan.write("pwrite", &[b"a"], 0, ok).is_ok());
        let e = plan.write("pwrite", &[b"b"], 0, ok).unwrap_err();
        assert!(matches!(e, Error::DiskFull { .. }));
        assert!(plan.write("pwrite", &[b"c"], 0, ok).is_ok());
        assert_eq!((plan.fired(), plan.writes(), plan.syncs()), (1, 3, 1));
        assert_eq!(plan.log_len(), 3); // the sync and two writes
    }

    #[test]
    fn a_halt_drops_every_later_operation_and_shares_the_log() {
        let root = FaultPlan::recording();
        let life = root.sharing_log();
        let applied = std::cell::Cell::new(0);
        let ok = |_: &[&[u8]], _: u64| {
            applied.set(applied.get() + 1);
            Ok(())
        };
        life.halt_at(2, Kill::Eio);
        assert!(life.write("pwrite", &[b"a"], 0, ok).is_ok());
        assert!(life.sync(|| Ok(1)).is_ok());
        let e = life.write("pwrite", &[b"b"], 512, ok).unwrap_err();
        assert!(matches!(e, Error::Io { .. }), "{e:?}");
        assert!(life.sync(|| panic!("a dropped sync ran")).is_err());
        assert!(life.halted());
        assert_eq!((applied.get(), life.ops(), life.dropped()), (1, 4, 2));
        // The next life records into the same log, after the first's ops.
        let next = root.sharing_log();
        assert!(next.write("pwrite", &[b"c"], 1024, ok).is_ok());
        assert_eq!(root.log_len(), 3);
        assert!(matches!(root.log()[2], Op::Write { offset: 1024, .. }));
    }

    #[test]
    fn an_unwinding_halt_is_caught_by_catch_kill() {
        let plan = FaultPlan::recording();
        // Kill at the first sync after a write below 1024.
        let mut seen = false;
        plan.halt_when(Kill::Unwind, move |o| {
            let hit = seen && o.kind == OpKind::Sync;
            seen |= o.kind == OpKind::Write && o.offset < 1024;
            hit
        });
        let ok = |_: &[&[u8]], _: u64| Ok(());
        let r = catch_kill(|| {
            plan.sync(|| Ok(0)).unwrap();
            plan.write("pwrite", &[b"m"], 512, ok).unwrap();
            plan.sync(|| Ok(0)).unwrap();
            unreachable!("the sync after the meta write unwinds");
        });
        assert!(r.is_none());
        assert_eq!((plan.log_len(), plan.dropped()), (2, 1));
        assert_eq!(catch_kill(|| 7), Some(7));
    }

    #[test]
    fn lost_below_drops_the_meta_writes_only() {
        let log = vec![
            Op::Sync { len: 0, started: 0 },
            w(512, 1, 320),
            w(4096, 2, 512),
        ];
        let img = crash_image(&log, 3, Landing::LostBelow(1536));
        assert_eq!(&img.data[512..832], &[0; 320][..]);
        assert_eq!(&img.data[4096..], &[2; 512][..]);
    }
}
