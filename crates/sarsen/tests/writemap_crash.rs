//! Power-loss images of write-map mode (`EnvOptions::write_map`, LMDB's
//! `MDB_WRITEMAP`), whose pages are written through a shared writable map
//! that the fault seam (`io/fault.rs`) cannot see.
//!
//! **Where the disk state comes from.** The workload runs in a child
//! process (this test binary, re-run with `SARSEN_WMAP_DIR` set) on a
//! database in `/dev/shm`, so the file's contents at any instant are the
//! page cache, which is what a killed process leaves. The binary defines
//! its own `fdatasync`, which the linker binds in place of libc's for every
//! caller in the binary (std's `File::sync_data`, through which Sarsen
//! syncs). In the child it stops the process (`SIGSTOP`, after printing
//! `@wm presync`), runs the real system call, and stops again (`@wm sync`).
//! At each stop the parent copies the file and continues the child
//! (`SIGCONT`); the copy after a sync is exactly the disk after it. So
//! every sync the engine does (a commit's, `Env::sync`'s two, the meta
//! repair at open) is a snapshot point, not only the points where the API
//! promises durability: a sync the engine skips or does too early shows.
//! The child also stops at random points between syncs (in the middle of a
//! transaction, after a commit, inside a transaction it then aborts), so
//! the parent samples values sectors held in between. The parent kills the
//! child with `SIGKILL` at a random stop (1 to 60), while it is stopped or
//! 0–2 ms after continuing it, and takes the final file. A kill at a
//! `presync` stop leaves what a power loss during that sync can leave,
//! such as a `Durable` commit's meta without some of its pages.
//!
//! **Images.** A power-loss image starts from the copy at the last sync;
//! each 512-byte sector (the unit of atomicity: the 320-byte meta lies in
//! one) takes a value it held since: the synced one, a sampled one, or the
//! final one (all old, all new, random mixes, or a random pick from the
//! sampled history). Its length is the synced or the final length; sectors
//! past the synced length that did not land read as zeros. Each image goes
//! to its own directory and is opened with a new boot id, as after a system
//! crash. It must open, `Env::check` must find nothing, and it must hold
//! exactly the model state of one commit (commit `t` applies changes
//! derived from `t` alone, so every state can be rebuilt), where that
//! commit is
//! * no older than the newest one the API promised durable: each returned
//!   `Durable` commit; on a `NoMetaSync` commit's return, the one before it
//!   when that one's meta was steady; the commit a returned `Env::sync`
//!   covered;
//! * no newer than the commit in flight;
//! * steady: an unsynced `SafeNoSync` commit from the crashed boot must
//!   not be trusted.
//!
//! The final file itself, opened with the child's boot id (a process
//! crash only), must hold every acknowledged commit. The next cycle starts
//! from the final file or from one of the images, after one more commit.
//!
//! Workloads: `Durable`, `NoMetaSync`, `SafeNoSync` (with `Env::sync` now
//! and then, in every mode), and mixed (three write-map `Env`s on the file
//! in the child, one per mode, committing in random turn, so a `Durable`
//! commit lands on unsynced ones and syncs twice), at 512- and 4096-byte
//! pages; the main and a named database, puts, deletes and overflow values
//! over 400 keys per database (rewrites and deletes free pages the GC
//! reuses), now and then a large transaction that makes the file grow, and
//! aborted transactions whose pages were written through the map.
//! `SARSEN_TEST_CASES` sets the cycles per test (default 40),
//! `SARSEN_TEST_SCALE` multiplies the images per kill (default 6).
//!
//! **Not covered.** Values a sector held only between two stops (a sector
//! may be written back with any value it held since the sync; only sampled
//! ones are tried). A sector torn inside (512-byte sectors are atomic
//! here). File-length changes other than "the synced length or the final
//! one" (an `fallocate` whose blocks survive but whose size does not, or
//! the reverse, is not modelled separately).
//! Write-back errors (a failed `fdatasync` that drops dirty map pages), a
//! full disk, `SIGBUS` on sparse space. Real file systems: the images come
//! from tmpfs and assume Linux's rule that `fdatasync` writes back pages
//! dirtied through a shared map (other systems need `msync`). Syncs by
//! any call other than `fdatasync` (`fsync`, `msync`, `sync_file_range`)
//! would not be seen: the test checks that each returned `Durable` commit
//! was preceded by a seen sync. `NoSync` (may corrupt, as LMDB's), the
//! creation of the file (the parent creates it), write-map and default-mode
//! processes on one file.

mod common;
mod crash_common;
mod writemap_common;

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crash_common::{apply_model, apply_txn, changes, diff, try_contents, Change, Model};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sarsen::{Durability, Env, EnvOptions};
use writemap_common::{image, picks, Proc, Snap};

/// The unit a power loss keeps or loses whole.
const SECTOR: usize = 512;
/// How long the parent waits for any one thing the child does.
const TIMEOUT: Duration = Duration::from_secs(60);
/// Growth step: small, so the file's blocks are allocated in many steps.
const GROWTH: u64 = 64 << 10;
/// Sampled contents kept between two syncs (older ones are dropped, which
/// only makes the images less varied).
const MAX_HISTORY: usize = 12;
/// Stops (syncs and samples) before the kill: 1 to this many.
const MAX_STOPS: u32 = 60;

// ---------------------------------------------------------------------------
// The `fdatasync` interposer.

/// Set in the child: each `fdatasync` then reports and stops the process.
static CHILD: AtomicBool = AtomicBool::new(false);

/// Replaces libc's `fdatasync` for this test binary (the linker binds the
/// binary's own definition before the shared library's). In the parent it
/// is the plain system call. In the child the process stops before the
/// call (the file then holds what this sync is to make durable) and after
/// a successful one (the file is then exactly what the disk holds), so
/// that the parent can copy the file.
#[no_mangle]
pub extern "C" fn fdatasync(fd: libc::c_int) -> libc::c_int {
    let child = CHILD.load(Ordering::Relaxed);
    if child {
        stop("presync");
    }
    // SAFETY: the system call libc's fdatasync makes, on the caller's
    // descriptor; it touches no memory of this process.
    let r = unsafe { libc::syscall(libc::SYS_fdatasync, fd) } as libc::c_int;
    if r == 0 && child {
        stop("sync");
    }
    r
}

/// Child: prints one protocol line.
fn say(msg: &str) {
    let mut out = std::io::stdout().lock();
    writeln!(out, "@wm {msg}").expect("stdout");
    out.flush().expect("stdout");
}

/// Child: reports `msg` and stops until the parent continues it.
fn stop(msg: &str) {
    say(msg);
    // SAFETY: raise(3) with SIGSTOP stops this process (every thread) until
    // the parent sends SIGCONT; no memory is involved.
    unsafe { libc::raise(libc::SIGSTOP) };
}

// ---------------------------------------------------------------------------
// The workload and its model.

/// The changes of commit `t`: mostly small transactions, one in eight a
/// large one (the file grows), and a put of `t` under `last`.
fn changes_of(base: u64, page_size: u32, t: u64) -> Vec<Change> {
    let seed = common::mix(base ^ t);
    let n = if seed & 7 == 0 {
        100 + (seed >> 8) % 200
    } else {
        1 + (seed >> 8) % 40
    };
    let mut c = changes(seed, page_size, n as usize);
    c.push(Change::Put(0, b"last".to_vec(), t.to_le_bytes().to_vec()));
    c
}

/// The changes of a transaction that is aborted at txnid `t`.
fn aborted_changes(base: u64, page_size: u32, t: u64) -> Vec<Change> {
    let seed = common::mix(base ^ t ^ 0xab07_7ed0);
    changes(seed, page_size, 1 + (seed % 80) as usize)
}

/// The committed state of every txnid (txnid 1 is the empty new file),
/// rebuilt from checkpoints.
struct States {
    base: u64,
    page_size: u32,
    cache: BTreeMap<u64, Model>,
}

impl States {
    fn new(base: u64, page_size: u32) -> States {
        let mut cache = BTreeMap::new();
        cache.insert(1, Model::default());
        States {
            base,
            page_size,
            cache,
        }
    }

    fn get(&mut self, t: u64) -> Model {
        assert!(t >= 1, "txnid 0");
        let (from, mut m) = self
            .cache
            .range(..=t)
            .next_back()
            .map(|(k, v)| (*k, v.clone()))
            .expect("txnid 1 is cached");
        for u in from + 1..=t {
            apply_model(&mut m, &changes_of(self.base, self.page_size, u));
            if u & 15 == 0 {
                self.cache.insert(u, m.clone());
            }
        }
        m
    }
}

/// A durability mode and its letter in the protocol.
fn mode(letter: char) -> Durability {
    match letter {
        'D' => Durability::Durable,
        'M' => Durability::NoMetaSync,
        'S' => Durability::SafeNoSync,
        _ => panic!("mode {letter}"),
    }
}

fn options(d: Durability, page_size: u32, boot: [u8; 16]) -> EnvOptions {
    EnvOptions::new()
        .write_map(true)
        .durability(d)
        .page_size(page_size)
        .max_size(if page_size == 512 { 16 << 20 } else { 64 << 20 })
        .growth_step(GROWTH)
        .assume_boot_id(boot)
}

fn hex(b: &[u8; 16]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> [u8; 16] {
    let mut b = [0u8; 16];
    for (i, x) in b.iter_mut().enumerate() {
        *x = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).expect("hex");
    }
    b
}

// ---------------------------------------------------------------------------
// The child.

/// Child side: commits, aborts and syncs until it is killed.
#[test]
#[ignore = "helper: run by the writemap_crash tests in a child process"]
fn writemap_crash_child() {
    let Some(dir) = std::env::var_os("SARSEN_WMAP_DIR") else {
        return;
    };
    let var = |k: &str| std::env::var(k).unwrap_or_else(|_| panic!("{k}"));
    let modes: Vec<char> = var("SARSEN_WMAP_MODES").chars().collect();
    let page_size: u32 = var("SARSEN_WMAP_PS").parse().unwrap();
    let base: u64 = var("SARSEN_WMAP_BASE").parse().unwrap();
    let mut rng = StdRng::seed_from_u64(var("SARSEN_WMAP_SEED").parse().unwrap());
    let boot = unhex(&var("SARSEN_WMAP_BOOT"));
    CHILD.store(true, Ordering::Relaxed);
    let envs: Vec<(char, Env)> = modes
        .iter()
        .map(|&m| {
            // SAFETY: the parent's directory; only Sarsen maps the file, and
            // the parent touches it only while this process is stopped or dead.
            let env = unsafe { options(mode(m), page_size, boot).open(Path::new(&dir)) }
                .expect("child open");
            (m, env)
        })
        .collect();
    say("ready");
    let p_sync = if modes == ['S'] { 0.2 } else { 0.08 };
    loop {
        let (m, env) = &envs[rng.random_range(0..envs.len())];
        if rng.random_bool(0.08) {
            // Pages written through the map by a transaction that is then
            // dropped: free space, which may reach the disk in any state.
            let mut w = env.write_txn().unwrap();
            let t = w.txnid();
            apply_txn(&mut w, &aborted_changes(base, page_size, t)).unwrap();
            if rng.random_bool(0.5) {
                stop("snap");
            }
            drop(w);
            continue;
        }
        let mut w = env.write_txn().unwrap();
        let t = w.txnid();
        say(&format!("begin {t} {m}"));
        let c = changes_of(base, page_size, t);
        let half = c.len() / 2;
        apply_txn(&mut w, &c[..half]).unwrap();
        if rng.random_bool(0.2) {
            stop("snap");
        }
        apply_txn(&mut w, &c[half..]).unwrap();
        w.commit().unwrap();
        say(&format!("ack {t} {m}"));
        if rng.random_bool(0.2) {
            stop("snap");
        }
        if rng.random_bool(p_sync) {
            say(&format!("syncing {t}"));
            env.sync().unwrap();
            say(&format!("synced {t}"));
        }
    }
}

// ---------------------------------------------------------------------------
// The parent: the child process.

/// The acknowledged commits of one cycle and the durability they were
/// promised.
struct Track {
    /// Newest acknowledged commit (the start state if none).
    last: u64,
    /// Newest commit the API promised durable.
    durable: u64,
    /// Commits whose meta is steady (trusted after a system crash).
    steady: BTreeSet<u64>,
    /// The mode of the commit in progress (begun, not acknowledged).
    in_flight: Option<char>,
    /// The commit an `Env::sync` in progress covers.
    syncing: Option<u64>,
    /// A `sync` stop is the last thing the child did.
    sync_last: bool,
    acks: u64,
    durable_acks: u64,
    /// Durable commits acknowledged with no sync seen since they began
    /// (the interposer must see every commit's sync).
    unsynced_durable: Vec<u64>,
    synced_since_ack: bool,
}

impl Track {
    fn new(start: u64) -> Track {
        Track {
            last: start,
            durable: start,
            steady: BTreeSet::from([start]),
            in_flight: None,
            syncing: None,
            sync_last: false,
            acks: 0,
            durable_acks: 0,
            unsynced_durable: Vec::new(),
            synced_since_ack: false,
        }
    }

    /// Takes one protocol line other than a stop.
    fn line(&mut self, l: &str) {
        let mut f = l.split_whitespace();
        let word = f.next().unwrap_or_default();
        let num = |f: &mut std::str::SplitWhitespace| -> u64 { f.next().unwrap().parse().unwrap() };
        match word {
            "ready" => {}
            "begin" => {
                assert_eq!(num(&mut f), self.last + 1, "a commit begins at {l}");
                self.in_flight = Some(f.next().unwrap().parse().unwrap());
                self.synced_since_ack = false;
            }
            "ack" => {
                let t = num(&mut f);
                let m = f.next().unwrap();
                assert_eq!(t, self.last + 1, "acknowledged commits are consecutive");
                assert_eq!(self.in_flight.take(), m.parse().ok(), "{l}: not begun");
                self.last = t;
                self.acks += 1;
                match m {
                    "D" => {
                        self.durable = t;
                        self.steady.insert(t);
                        self.durable_acks += 1;
                        if !self.synced_since_ack {
                            self.unsynced_durable.push(t);
                        }
                    }
                    "M" => {
                        if self.steady.contains(&(t - 1)) {
                            self.durable = self.durable.max(t - 1);
                        }
                        self.steady.insert(t);
                    }
                    "S" => {}
                    _ => panic!("bad line {l}"),
                }
            }
            "syncing" => self.syncing = Some(num(&mut f)),
            "synced" => {
                let t = num(&mut f);
                self.durable = self.durable.max(t);
                self.steady.insert(t);
                self.syncing = None;
            }
            _ => panic!("bad line {l}"),
        }
    }

    /// Whether the final file (a process crash) may open at `t`.
    fn final_ok(&self, t: u64) -> bool {
        t == self.last || (t == self.last + 1 && self.in_flight.is_some())
    }

    /// Whether a power-loss image (a system crash) may open at `t`.
    fn image_ok(&self, t: u64) -> bool {
        let in_flight_steady = matches!(self.in_flight, Some('D' | 'M'));
        t >= self.durable
            && t <= self.last + 1
            && (self.steady.contains(&t)
                || (t == self.last + 1 && in_flight_steady)
                || self.syncing == Some(t))
    }
}

// ---------------------------------------------------------------------------
// The test driver.

/// One test's configuration and running totals.
struct Run {
    name: String,
    modes: &'static str,
    page_size: u32,
    base: u64,
    rng: StdRng,
    states: States,
    root: tempfile::TempDir,
    images: usize,
    // Totals for the summary.
    cycles: usize,
    acks: u64,
    stops: u64,
    syncs: u64,
    durable_acks: u64,
    opened: usize,
    rolled_back: usize,
    behind: usize,
    torn: usize,
    kills_unsynced: usize,
    max_extent: usize,
}

fn temp_root(name: &str) -> tempfile::TempDir {
    let b = tempfile::Builder::new()
        .prefix(&format!("sarsen-{name}-"))
        .tempdir_in("/dev/shm");
    b.or_else(|_| tempfile::tempdir()).unwrap()
}

impl Run {
    fn new(name: &str, modes: &'static str, page_size: u32) -> Run {
        let (base, _) = common::base_seed(name);
        Run {
            name: name.to_string(),
            modes,
            page_size,
            base,
            rng: StdRng::seed_from_u64(base),
            states: States::new(base, page_size),
            root: temp_root(name),
            images: 6 * common::scale(),
            cycles: 0,
            acks: 0,
            stops: 0,
            syncs: 0,
            durable_acks: 0,
            opened: 0,
            rolled_back: 0,
            behind: 0,
            torn: 0,
            kills_unsynced: 0,
            max_extent: 0,
        }
    }

    fn boot(&mut self) -> [u8; 16] {
        self.rng.random()
    }

    /// A durability mode of this test for opens in the parent.
    fn parent_mode(&mut self) -> Durability {
        let m: Vec<char> = self.modes.chars().collect();
        mode(m[self.rng.random_range(0..m.len())])
    }

    /// Opens `dir` (a copy of a crashed file) and checks it against the
    /// model; returns the environment and its txnid, or what is wrong.
    fn open_checked(
        &mut self,
        dir: &Path,
        boot: [u8; 16],
        ok: &dyn Fn(u64) -> bool,
    ) -> Result<(Env, u64), String> {
        let d = self.parent_mode();
        // SAFETY: the test's own directory; no other process has it open.
        let env = unsafe { options(d, self.page_size, boot).open(dir) }
            .map_err(|e| format!("open failed: {e}"))?;
        let r = env
            .check()
            .map_err(|e| format!("check failed to run: {e}"))?;
        if !r.is_ok() {
            return Err(format!(
                "check found {} problems: {:?}",
                r.problems_total,
                &r.problems[..r.problems.len().min(5)]
            ));
        }
        let (t, got) = try_contents(&env).map_err(|e| format!("reading failed: {e}"))?;
        if !ok(t) {
            return Err(format!("opened at txnid {t}, not allowed here"));
        }
        let want = self.states.get(t);
        if got != want {
            return Err(format!("txnid {t}: contents differ: {}", diff(&got, &want)));
        }
        Ok((env, t))
    }

    /// Keeps a failed image for inspection and panics.
    fn fail(&self, dir: &Path, what: &str) -> ! {
        let keep = std::env::temp_dir().join(format!(
            "sarsen-wmap-fail-{}-{}",
            self.name,
            std::process::id()
        ));
        let _ = std::fs::create_dir_all(&keep);
        let _ = std::fs::copy(dir.join("data.sdb"), keep.join("data.sdb"));
        panic!(
            "{}: {what} (image kept in {}; SARSEN_SEED={})",
            self.name,
            keep.display(),
            self.base
        );
    }

    /// Makes `dir` durable in the parent and returns its contents.
    fn settle(dir: &Path) -> Snap {
        File::open(dir.join("data.sdb"))
            .unwrap()
            .sync_data()
            .unwrap();
        Snap::read(&dir.join("data.sdb"), false)
    }

    fn run(mut self, cycles: usize) {
        let _f = common::OnFail(format!("{}: SEED={}", self.name, self.base));
        // The parent creates the file: its creation is not under test.
        let mut dir = self.root.path().join("start");
        let mut boot = self.boot();
        {
            let d = self.parent_mode();
            // SAFETY: the test's own new directory.
            let env = unsafe { options(d, self.page_size, boot).open(&dir) }.unwrap();
            drop(env);
        }
        let mut floor = Run::settle(&dir);
        let mut at = 1; // the durable txnid the next cycle starts from
        for cycle in 0..cycles {
            if self.rng.random_bool(0.5) {
                boot = self.boot(); // a reboot before the child starts
            }
            let (next_dir, next_boot, next_at) = self.cycle(cycle, &dir, boot, floor, at);
            if next_dir != dir {
                std::fs::remove_dir_all(&dir).unwrap();
            }
            (dir, boot, at) = (next_dir, next_boot, next_at);
            floor = Run::settle(&dir);
            self.cycles += 1;
        }
        eprintln!(
            "[{}] {} cycles ({} killed with unsynced changes), {} commits acknowledged \
             ({} durable), {} stops ({} syncs), {} images opened ({} mixing old and new \
             sectors; {} behind the final file, {} before the last acknowledged commit), \
             largest file extent {} KiB, last txnid {at}",
            self.name,
            self.cycles,
            self.kills_unsynced,
            self.acks,
            self.durable_acks,
            self.stops,
            self.syncs,
            self.opened,
            self.torn,
            self.behind,
            self.rolled_back,
            self.max_extent >> 10,
        );
        assert!(self.acks > 0, "no commit was ever acknowledged");
        assert!(
            self.syncs > 0,
            "no sync was seen: the interposer does not work"
        );
    }

    /// One cycle on `dir` (at durable txnid `start`, contents `floor`):
    /// run the child, kill it, check the final file and the images.
    /// Returns the directory, boot id and txnid to continue from.
    fn cycle(
        &mut self,
        cycle: usize,
        dir: &Path,
        boot: [u8; 16],
        mut floor: Snap,
        start: u64,
    ) -> (PathBuf, [u8; 16], u64) {
        let seed = self.rng.random();
        let proc = Proc::spawn(dir, self.modes, self.page_size, self.base, seed, boot);
        let data = dir.join("data.sdb");
        let mut track = Track::new(start);
        let mut hist: Vec<Snap> = Vec::new();
        let kill_at = self.rng.random_range(1..=MAX_STOPS);
        let mut stops = 0;
        let leftover = loop {
            let l = proc.next();
            if !matches!(l.as_str(), "sync" | "presync" | "snap") {
                track.line(&l);
                continue;
            }
            proc.wait_stopped();
            let s = Snap::read(&data, false);
            if l == "sync" {
                floor = s;
                hist.clear();
                self.syncs += 1;
                track.synced_since_ack = true;
            } else {
                hist.push(s);
                if hist.len() > MAX_HISTORY {
                    hist.remove(0);
                }
            }
            stops += 1;
            if stops >= kill_at {
                if self.rng.random_bool(0.5) {
                    proc.cont();
                    let us = self.rng.random_range(0..2000);
                    std::thread::sleep(Duration::from_micros(us));
                }
                break proc.kill();
            }
            proc.cont();
        };
        // Lines the child printed before it died. At most one stop: it
        // stopped there and was killed while stopped, so the final file
        // is its contents at that point.
        for l in &leftover {
            match l.as_str() {
                "sync" => track.sync_last = true,
                "presync" | "snap" => {}
                l => track.line(l),
            }
        }
        self.stops += stops as u64;
        self.acks += track.acks;
        self.durable_acks += track.durable_acks;
        let last = Snap::read(&data, false);
        if cycle & 7 == 0 {
            assert!(
                last == Snap::read(&data, true),
                "{}: cycle {cycle}: data past the file's allocated blocks",
                self.name
            );
        }
        if track.sync_last {
            self.syncs += 1;
            floor = last.clone();
            hist.clear();
        }
        self.max_extent = self.max_extent.max(last.data.len());
        assert!(
            track.unsynced_durable.is_empty(),
            "{}: cycle {cycle}: Durable commits {:?} returned with no sync seen",
            self.name,
            track.unsynced_durable
        );
        let when = format!(
            "cycle {cycle} (started at {start}, last acknowledged {}, durable {}, {} stops)",
            track.last, track.durable, stops
        );

        // The final file, after a process crash only: every acknowledged
        // commit is there.
        let child_boot = boot;
        let ok = |t| track.final_ok(t);
        let (env, final_t) = match self.open_checked(dir, child_boot, &ok) {
            Ok(r) => r,
            Err(e) => self.fail(dir, &format!("{when}: the final file: {e}")),
        };
        drop(env);

        // The power-loss images.
        self.kills_unsynced += usize::from(last != floor);
        let mut survivors = Vec::new();
        for (i, pick) in picks(self.images).into_iter().enumerate() {
            let img = image(&floor, &hist, &last, pick, &mut self.rng);
            self.torn += usize::from(img != floor && img != last);
            let idir = self.root.path().join(format!("c{cycle}i{i}"));
            img.write(&idir);
            let iboot = self.boot();
            let ok = |t| track.image_ok(t);
            match self.open_checked(&idir, iboot, &ok) {
                Ok((env, t)) => {
                    drop(env);
                    self.opened += 1;
                    self.behind += usize::from(t < final_t);
                    self.rolled_back += usize::from(t < track.last);
                    survivors.push((idir, iboot, t));
                }
                Err(e) => self.fail(&idir, &format!("{when}: image {i} ({pick:?}): {e}")),
            }
        }
        let t = final_t;
        let (cont_dir, cont_boot, t) = if self.rng.random_bool(0.5) {
            (dir.to_path_buf(), child_boot, t)
        } else {
            survivors.swap_remove(self.rng.random_range(0..survivors.len()))
        };
        for (d, _, _) in &survivors {
            if *d != cont_dir {
                std::fs::remove_dir_all(d).unwrap();
            }
        }
        // One more commit on the chosen state, then everything synced.
        let ok = |u| u == t;
        let env = match self.open_checked(&cont_dir, cont_boot, &ok) {
            Ok((env, _)) => env,
            Err(e) => self.fail(&cont_dir, &format!("{when}: reopening: {e}")),
        };
        let mut w = env.write_txn().unwrap();
        assert_eq!(w.txnid(), t + 1, "{when}: the next commit's txnid");
        apply_txn(&mut w, &changes_of(self.base, self.page_size, t + 1)).unwrap();
        w.commit().unwrap();
        env.sync().unwrap();
        common::assert_check(&env, &when);
        drop(env);
        (cont_dir, cont_boot, t + 1)
    }
}

fn cycles() -> usize {
    common::cases(40)
}

#[test]
fn writemap_crash_durable_512() {
    Run::new("writemap_crash_durable_512", "D", 512).run(cycles());
}

#[test]
fn writemap_crash_durable_4096() {
    Run::new("writemap_crash_durable_4096", "D", 4096).run(cycles());
}

#[test]
fn writemap_crash_no_meta_sync_512() {
    Run::new("writemap_crash_no_meta_sync_512", "M", 512).run(cycles());
}

#[test]
fn writemap_crash_no_meta_sync_4096() {
    Run::new("writemap_crash_no_meta_sync_4096", "M", 4096).run(cycles());
}

#[test]
fn writemap_crash_safe_no_sync_512() {
    Run::new("writemap_crash_safe_no_sync_512", "S", 512).run(cycles());
}

#[test]
fn writemap_crash_safe_no_sync_4096() {
    Run::new("writemap_crash_safe_no_sync_4096", "S", 4096).run(cycles());
}

#[test]
fn writemap_crash_mixed_512() {
    Run::new("writemap_crash_mixed_512", "DMS", 512).run(cycles());
}

#[test]
fn writemap_crash_mixed_4096() {
    Run::new("writemap_crash_mixed_4096", "DMS", 4096).run(cycles());
}
