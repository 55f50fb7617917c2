//! Per-operation latency histograms (HdrHistogram) and their percentiles.

use std::time::Duration;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Latencies of one thread's operations, in nanoseconds, with 3 significant digits.
pub struct Latency {
    hist: Histogram<u64>,
}

impl Default for Latency {
    fn default() -> Self {
        Self::new()
    }
}

impl Latency {
    /// An empty histogram that grows to any value.
    pub fn new() -> Self {
        // 3 significant digits with auto-resize cannot fail.
        let hist = Histogram::new(3).unwrap_or_else(|_| unreachable!("3 sigfigs is valid"));
        Latency { hist }
    }

    /// Records `ops` operations that took `elapsed` in all (a batch or transaction):
    /// each counts as `elapsed / ops`.
    #[inline]
    pub fn record(&mut self, elapsed: Duration, ops: u64) {
        if ops == 0 {
            return;
        }
        let each = (elapsed.as_nanos() / u128::from(ops)).max(1);
        let each = u64::try_from(each).unwrap_or(u64::MAX);
        // Auto-resizing histograms accept every value.
        let _ = self.hist.record_n(each, ops);
    }

    /// Adds another thread's latencies.
    pub fn merge(&mut self, other: &Latency) {
        let _ = self.hist.add(&other.hist);
    }

    /// The percentiles, or None when nothing was recorded.
    pub fn summary(&self) -> Option<LatencySummary> {
        if self.hist.is_empty() {
            return None;
        }
        let us = |q: f64| self.hist.value_at_quantile(q) as f64 / 1e3;
        Some(LatencySummary {
            p50_us: us(0.5),
            p99_us: us(0.99),
            p999_us: us(0.999),
            max_us: self.hist.max() as f64 / 1e3,
        })
    }
}

/// Latency percentiles of one workload's operations, in microseconds per operation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    /// Median.
    pub p50_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile.
    pub p999_us: f64,
    /// Slowest.
    pub max_us: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_follow_the_recorded_distribution() {
        let mut a = Latency::new();
        assert!(a.summary().is_none());
        for i in 1..=1000u64 {
            a.record(Duration::from_nanos(i * 1000), 1);
        }
        let mut b = Latency::new();
        // One batch of 10 ops taking 100 ms: 10 ms each.
        b.record(Duration::from_millis(100), 10);
        a.merge(&b);
        let s = a.summary().expect("non-empty");
        // 1010 samples: 1..=1000 us, then ten at 10 000 us (0.1% of 1010 is one sample,
        // so the 99.9th percentile is among the ten).
        assert!((s.p50_us - 505.0).abs() < 2.0, "{s:?}");
        // The 99th percentile of 1010 samples is the 1000th: 1000 us.
        assert!((s.p99_us - 1000.0).abs() < 3.0, "{s:?}");
        assert!((s.p999_us - 10_000.0).abs() < 10.0, "{s:?}");
        assert!((s.max_us - 10_000.0).abs() < 10.0, "{s:?}");
    }
}
