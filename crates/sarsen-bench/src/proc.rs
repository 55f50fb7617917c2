//! The parent side of a measurement: one child process per (engine, workload), its
//! resource usage collected with `wait4(2)`.

use std::ffi::c_int;
use std::io::{self, Read};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, ExitStatus, Stdio};
use std::time::Instant;

use crate::cli::Allocator;
use crate::engines::Result;
use crate::exec::{Measurement, Spec};

/// Resource usage of a finished child process (from `struct rusage`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Usage {
    /// User CPU seconds.
    pub user_s: f64,
    /// System CPU seconds.
    pub sys_s: f64,
    /// Peak resident set size in bytes.
    pub max_rss_bytes: u64,
    /// Voluntary context switches.
    pub vol_ctx_sw: u64,
    /// Involuntary context switches.
    pub invol_ctx_sw: u64,
    /// Blocks (512 bytes) the file systems read for the process.
    pub in_blocks: u64,
    /// Blocks (512 bytes) the file systems wrote for the process.
    pub out_blocks: u64,
}

/// A child's measurement with its resource usage.
#[derive(Clone, Debug)]
pub struct ChildRun {
    /// What the child measured.
    pub m: Measurement,
    /// Its resource usage over its whole life.
    pub usage: Usage,
    /// Seconds from spawn to exit.
    pub process_wall_s: f64,
}

/// Re-executes this binary with the hidden `__child` subcommand to run `spec`, with
/// `alloc`'s library preloaded (`LD_PRELOAD`) if it has one.
pub fn run_child(spec: &Spec, alloc: Option<Allocator>) -> Result<ChildRun> {
    let exe = std::env::current_exe()?;
    let json = serde_json::to_string(spec)?;
    let start = Instant::now();
    let mut cmd = Command::new(exe);
    if let Some((lib, _)) = alloc.and_then(Allocator::library) {
        cmd.env("LD_PRELOAD", lib);
    }
    let mut child = cmd
        .arg("__child")
        .arg(json)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()?;
    let mut out = String::new();
    let read = match child.stdout.take() {
        Some(mut stdout) => stdout.read_to_string(&mut out).map(drop),
        None => Err(io::Error::other("child has no stdout")),
    };
    // The std handle is never waited on: wait4 reaps the child and returns its rusage.
    let (status, usage) = wait4(child.id())?;
    let process_wall_s = start.elapsed().as_secs_f64();
    read?;
    if !status.success() {
        return Err(format!("child process failed: {status}").into());
    }
    let line = out
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .ok_or("child printed no result")?;
    let m: Measurement =
        serde_json::from_str(line).map_err(|e| format!("bad child result {line:?}: {e}"))?;
    Ok(ChildRun {
        m,
        usage,
        process_wall_s,
    })
}

fn timeval_s(t: libc::timeval) -> f64 {
    t.tv_sec as f64 + t.tv_usec as f64 * 1e-6
}

fn count(x: libc::c_long) -> u64 {
    u64::try_from(x).unwrap_or(0)
}

/// Waits for child `pid` to exit; returns its status and resource usage.
fn wait4(pid: u32) -> Result<(ExitStatus, Usage)> {
    let pid = libc::pid_t::try_from(pid)?;
    let mut status: c_int = 0;
    // SAFETY: `rusage` is plain integers and timevals, for which all-zero is valid.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `pid` is our own child, not yet reaped (std's handle never waits);
        // `status` and `ru` are valid for writes.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
        if r == pid {
            break;
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err.into());
        }
    }
    let usage = Usage {
        user_s: timeval_s(ru.ru_utime),
        sys_s: timeval_s(ru.ru_stime),
        // Linux reports ru_maxrss in KiB.
        max_rss_bytes: count(ru.ru_maxrss) * 1024,
        vol_ctx_sw: count(ru.ru_nvcsw),
        invol_ctx_sw: count(ru.ru_nivcsw),
        in_blocks: count(ru.ru_inblock),
        out_blocks: count(ru.ru_oublock),
    };
    Ok((ExitStatus::from_raw(status), usage))
}
