//! The parent's side of `writemap_crash.rs`: the child process it drives
//! (spawned, continued, killed, reaped), snapshots of the database file,
//! and the power-loss images built from them.

use super::*;
/// A running child; killed and reaped when dropped (also on a failure).
pub(crate) struct Proc {
    child: Child,
    rx: Receiver<String>,
    reader: Option<JoinHandle<()>>,
}

impl Proc {
    pub(crate) fn spawn(
        dir: &Path,
        modes: &str,
        page_size: u32,
        base: u64,
        seed: u64,
        boot: [u8; 16],
    ) -> Proc {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "writemap_crash_child",
                "--exact",
                "--ignored",
                "--nocapture",
            ])
            .env("SARSEN_WMAP_DIR", dir)
            .env("SARSEN_WMAP_MODES", modes)
            .env("SARSEN_WMAP_PS", page_size.to_string())
            .env("SARSEN_WMAP_BASE", base.to_string())
            .env("SARSEN_WMAP_SEED", seed.to_string())
            .env("SARSEN_WMAP_BOOT", hex(&boot))
            .env("RUST_TEST_THREADS", "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        let (tx, rx) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            for line in out.lines().map_while(Result::ok) {
                // libtest prints its own lines, and may put its "test ..."
                // in front of the first of ours.
                if let Some(i) = line.find("@wm ") {
                    if tx.send(line[i + 4..].trim().to_string()).is_err() {
                        break;
                    }
                }
            }
        });
        Proc {
            child,
            rx,
            reader: Some(reader),
        }
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The next protocol line; panics if the child hangs or dies.
    pub(crate) fn next(&self) -> String {
        match self.rx.recv_timeout(TIMEOUT) {
            Ok(l) => l,
            Err(RecvTimeoutError::Timeout) => panic!("the child said nothing for {TIMEOUT:?}"),
            Err(RecvTimeoutError::Disconnected) => panic!("the child died on its own"),
        }
    }

    /// Waits until every thread of the child is stopped.
    pub(crate) fn wait_stopped(&self) {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            match stopped(self.pid()) {
                Some(true) => return,
                Some(false) => {}
                None => panic!("the child died instead of stopping"),
            }
            assert!(Instant::now() < deadline, "the child did not stop");
            std::thread::sleep(Duration::from_micros(20));
        }
    }

    pub(crate) fn cont(&self) {
        // SAFETY: kill(2) on our own child, which is not reaped yet (so the
        // pid cannot have been reused); no memory is involved.
        let r = unsafe { libc::kill(self.pid() as libc::pid_t, libc::SIGCONT) };
        assert_eq!(r, 0, "SIGCONT: {}", std::io::Error::last_os_error());
    }

    /// Kills the child (`SIGKILL`: nothing of it runs after this), reaps
    /// it, and returns the protocol lines it printed but that were not read.
    pub(crate) fn kill(mut self) -> Vec<String> {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        self.reader.take().unwrap().join().unwrap();
        self.rx.try_iter().collect()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether every thread of process `pid` is stopped; `None` if it is gone.
pub(crate) fn stopped(pid: u32) -> Option<bool> {
    let state = |stat: &str| {
        stat.rsplit_once(')')
            .and_then(|(_, r)| r.trim_start().chars().next())
    };
    let main = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    if matches!(state(&main), Some('Z' | 'X') | None) {
        return None;
    }
    for t in std::fs::read_dir(format!("/proc/{pid}/task")).ok()? {
        let Ok(t) = t else { continue };
        let Ok(stat) = std::fs::read_to_string(t.path().join("stat")) else {
            continue;
        };
        if !matches!(state(&stat), Some('T' | 't')) {
            return Some(false);
        }
    }
    Some(true)
}

// ---------------------------------------------------------------------------
// File contents and images.

/// A file's contents: the bytes up to its last non-zero sector, and its
/// length (zeros from `data.len()` to `len`).
#[derive(Clone, PartialEq)]
pub(crate) struct Snap {
    pub(crate) data: Vec<u8>,
    pub(crate) len: u64,
}

static ZERO: [u8; 1 << 16] = [0; 1 << 16];

impl Snap {
    /// Reads the file at `path`. Unless `full`, only its first
    /// `st_blocks × 512` bytes: in write-map mode the allocated blocks are
    /// one run from the start of the file (each `fallocate` continues the
    /// last), and the rest is a hole left by sparse growth, which reads as
    /// zeros (every eighth cycle checks this with a `full` read of the
    /// final file).
    pub(crate) fn read(path: &Path, full: bool) -> Snap {
        let f = File::open(path).unwrap();
        let md = f.metadata().unwrap();
        let len = md.len();
        let upto = if full {
            len
        } else {
            len.min(md.blocks().saturating_mul(512))
        };
        let mut data = Vec::with_capacity(upto as usize);
        f.take(upto).read_to_end(&mut data).unwrap();
        assert_eq!(data.len() as u64, upto, "the file changed while read");
        let mut end = data.len();
        while end > 0 {
            let from = end.saturating_sub(ZERO.len());
            if data[from..end] != ZERO[..end - from] {
                break;
            }
            end = from;
        }
        while end > 0 && data[end - 1] == 0 {
            end -= 1;
        }
        data.truncate(end.div_ceil(SECTOR) * SECTOR);
        data.resize(end.div_ceil(SECTOR) * SECTOR, 0);
        data.shrink_to_fit();
        Snap { data, len }
    }

    pub(crate) fn sectors(&self) -> usize {
        self.data.len() / SECTOR
    }

    /// Sector `s`; zeros past the data (and past the end of the file).
    pub(crate) fn sector(&self, s: usize) -> &[u8] {
        self.data
            .get(s * SECTOR..(s + 1) * SECTOR)
            .unwrap_or(&ZERO[..SECTOR])
    }

    pub(crate) fn write(&self, dir: &Path) {
        std::fs::create_dir_all(dir).unwrap();
        let mut f = File::create(dir.join("data.sdb")).unwrap();
        f.write_all(&self.data[..self.data.len().min(self.len as usize)])
            .unwrap();
        f.set_len(self.len).unwrap();
    }
}

/// How an image picks each sector that changed since the last sync.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Pick {
    /// Nothing after the sync landed.
    Old,
    /// Everything landed.
    New,
    /// Each sector is the final one with this probability, else the synced one.
    Mix(f64),
    /// Each sector is one of the synced, sampled or final values, at random.
    Any,
}

/// A power-loss image: `floor` (the disk at the last sync) with each
/// sector replaced as `pick` says by a value it held later (`hist`, then
/// `last`).
pub(crate) fn image(
    floor: &Snap,
    hist: &[Snap],
    last: &Snap,
    pick: Pick,
    rng: &mut StdRng,
) -> Snap {
    let len = match pick {
        Pick::Old => floor.len,
        Pick::New => last.len,
        _ if rng.random_bool(0.5) => floor.len,
        _ => last.len,
    };
    let n = hist
        .iter()
        .chain([floor, last])
        .map(Snap::sectors)
        .max()
        .unwrap()
        .min((len as usize).div_ceil(SECTOR));
    let mut data = Vec::with_capacity(n * SECTOR);
    for s in 0..n {
        let src = match pick {
            Pick::Old => floor,
            Pick::New => last,
            Pick::Mix(p) if rng.random_bool(p) => last,
            Pick::Mix(_) => floor,
            Pick::Any => match rng.random_range(0..hist.len() + 2) {
                0 => floor,
                i if i <= hist.len() => &hist[i - 1],
                _ => last,
            },
        };
        data.extend_from_slice(src.sector(s));
    }
    data.truncate((len as usize).min(data.len()));
    Snap { data, len }
}

/// The picks of the images made at each kill.
pub(crate) fn picks(n: usize) -> Vec<Pick> {
    let mix = [0.5, 0.1, 0.9, 0.3, 0.7];
    (0..n)
        .map(|i| match i {
            0 => Pick::Old,
            1 => Pick::New,
            _ if i % 4 == 3 => Pick::Any,
            _ => Pick::Mix(mix[i % mix.len()]),
        })
        .collect()
}

// ---------------------------------------------------------------------------
// What the child acknowledged.
