//! `fork()` after open: a child shares its parent's open file descriptions,
//! and so the lock file's OFD locks and shared mapping. A `pthread_atfork`
//! child handler bumps a generation counter (so an environment notices it
//! is used in a child and refuses: `Error::Forked`) and lets go of every
//! lock file this process has open, so a child that outlives its parent
//! holds none of the parent's locks.

use std::sync::atomic::{AtomicI32, AtomicU64, AtomicUsize, Ordering};

/// Incremented in the child of every `fork()` (a `pthread_atfork` handler),
/// so an environment can tell, with one relaxed load and no system call,
/// that it is being used by a child of the process that opened it.
static FORK_GENERATION: AtomicU64 = AtomicU64::new(0);

/// This process's open lock files (descriptor -1 = unused, -2 = being
/// filled), so a `fork` child can let go of them: a child shares its
/// parent's open file description, through the descriptor and through the
/// shared mapping, and with it every lock the parent holds, which would
/// outlive the parent's death for as long as the child lives (a writer
/// lock no one can take, reader slots that pin pages). Lock files past this
/// many at once are not released in children.
struct LockRef {
    fd: AtomicI32,
    ptr: AtomicUsize,
    len: AtomicUsize,
}

static LOCK_REFS: [LockRef; 64] = [const {
    LockRef {
        fd: AtomicI32::new(-1),
        ptr: AtomicUsize::new(0),
        len: AtomicUsize::new(0),
    }
}; 64];
/// `/dev/null`, opened once, that the child puts in place of each lock
/// file descriptor (-1 if it could not be opened).
static DEV_NULL: AtomicI32 = AtomicI32::new(-1);

extern "C" fn after_fork_in_child() {
    FORK_GENERATION.fetch_add(1, Ordering::Relaxed);
    let null = DEV_NULL.load(Ordering::Relaxed);
    for r in &LOCK_REFS {
        let fd = r.fd.load(Ordering::Acquire);
        if fd < 0 {
            continue;
        }
        let (ptr, len) = (r.ptr.load(Ordering::Relaxed), r.len.load(Ordering::Relaxed));
        // SAFETY: plain system calls (async-signal-safe, as a fork child
        // handler must be), on this child's copies only. The anonymous
        // mapping replaces the lock file's at the same address and length,
        // so the inherited `LockFile`'s drop unmaps exactly what is there;
        // its views read zeros, and the child's `Env` refuses every use
        // (`Error::Forked`). dup3 makes `fd` name /dev/null, keeping the
        // number valid for the drop's close.
        unsafe {
            if ptr != 0 && len != 0 {
                libc::mmap(
                    ptr as *mut libc::c_void,
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                    -1,
                    0,
                );
            }
            if null >= 0 {
                libc::dup3(null, fd, libc::O_CLOEXEC);
            }
        }
    }
}

/// Records the lock file open on `fd` and mapped at `ptr` (`len` bytes),
/// to release in `fork` children.
pub(super) fn register_lock(fd: libc::c_int, ptr: *mut u8, len: usize) {
    if DEV_NULL.load(Ordering::Acquire) < 0 {
        // SAFETY: opening a path from a NUL-terminated literal.
        let null = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
        if null >= 0
            && DEV_NULL
                .compare_exchange(-1, null, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
        {
            // SAFETY: closing the descriptor just opened, which lost the race.
            unsafe { libc::close(null) };
        }
    }
    for r in &LOCK_REFS {
        if r.fd
            .compare_exchange(-1, -2, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            r.ptr.store(ptr as usize, Ordering::Relaxed);
            r.len.store(len, Ordering::Relaxed);
            r.fd.store(fd, Ordering::Release);
            return;
        }
    }
}

/// Forgets the lock file on `fd` (before it is unmapped and closed).
pub(super) fn unregister_lock(fd: libc::c_int) {
    for r in &LOCK_REFS {
        if r.fd
            .compare_exchange(fd, -1, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            return;
        }
    }
}

/// The current fork generation of this process; registers the `fork`
/// handler on first use. An environment records it at open and compares
/// it at every begin, sync and drop ([`Error::Forked`]).
pub(crate) fn fork_generation() -> u64 {
    static REGISTER: std::sync::Once = std::sync::Once::new();
    REGISTER.call_once(|| {
        // SAFETY: registers a handler that only increments an atomic,
        // which is async-signal-safe as a fork child handler must be. A
        // failure (ENOMEM) leaves detection to the pid check at drop.
        unsafe {
            libc::pthread_atfork(None, None, Some(after_fork_in_child));
        }
    });
    FORK_GENERATION.load(Ordering::Relaxed)
}
