//! Latency histograms: one shape for every metric (microseconds, 1 µs to one
//! hour, 3 significant digits), their serialised form, and the order
//! statistics the reports need, read from the buckets (samples are never kept).
//!
//! With 3 significant digits every value below 2048 µs is stored exactly and
//! larger ones within 0.1 %, so ab's integer-millisecond figures come out the
//! same as from sorted samples except when a value sits within 0.1 % of a
//! rounding edge.

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer as _, V2DeflateSerializer};
use hdrhistogram::Histogram;

/// Highest value kept, in µs (one hour); larger values are clamped to it.
pub const MAX_US: u64 = 3_600_000_000;

/// A fresh histogram of the one shape all metrics use.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_US, 3).expect("constant histogram bounds are valid")
}

/// Order statistics of a histogram, as if its samples were sorted.
#[derive(Debug, Clone, Copy)]
pub struct Stats<'a> {
    hist: &'a Histogram<u64>,
}

impl<'a> Stats<'a> {
    /// Statistics of `hist`.
    pub fn of(hist: &'a Histogram<u64>) -> Stats<'a> {
        Stats { hist }
    }

    /// Number of samples.
    pub fn count(&self) -> u64 {
        self.hist.len()
    }

    /// The `k`-th smallest sample (0-based), clamped to the last one; 0 when
    /// empty. A value is reported as the highest value of its bucket, like
    /// `value_at_quantile`.
    pub fn nth(&self, k: u64) -> u64 {
        let n = self.count();
        if n == 0 {
            return 0;
        }
        let k = k.min(n - 1);
        let mut seen = 0;
        for v in self.hist.iter_recorded() {
            seen += v.count_at_value();
            if seen > k {
                return self.hist.highest_equivalent(v.value_iterated_to());
            }
        }
        self.hist.max()
    }

    /// Smallest sample.
    pub fn min(&self) -> u64 {
        self.nth(0)
    }

    /// Largest sample.
    pub fn max(&self) -> u64 {
        self.nth(u64::MAX)
    }

    /// Sum of the samples.
    pub fn sum(&self) -> u128 {
        self.hist
            .iter_recorded()
            .map(|v| {
                u128::from(self.hist.highest_equivalent(v.value_iterated_to()))
                    * u128::from(v.count_at_value())
            })
            .sum()
    }

    /// Mean as a real number (0 when empty).
    pub fn mean(&self) -> f64 {
        match self.count() {
            0 => 0.0,
            n => self.sum() as f64 / n as f64,
        }
    }

    /// Sample standard deviation (divides by n − 1, as ab does); 0 for fewer
    /// than two samples.
    pub fn sd_sample(&self, around: f64) -> f64 {
        let n = self.count();
        if n < 2 {
            return 0.0;
        }
        let squares: f64 = self
            .hist
            .iter_recorded()
            .map(|v| {
                let d = self.hist.highest_equivalent(v.value_iterated_to()) as f64 - around;
                d * d * v.count_at_value() as f64
            })
            .sum();
        (squares / (n - 1) as f64).sqrt()
    }

    /// The value at percentile `p` (0..=100): the smallest sample with at
    /// least `p` % of the samples at or below it.
    pub fn percentile(&self, p: f64) -> u64 {
        if self.count() == 0 {
            return 0;
        }
        self.hist.value_at_quantile(p / 100.0)
    }
}

/// Serde for histograms: HdrHistogram V2 + DEFLATE, base64 (the `.hlog`
/// encoding, readable by every HdrHistogram implementation).
pub(crate) mod serde_v2 {
    use super::*;
    use serde::de::Error as _;
    use serde::{Deserialize, Serializer};

    pub(crate) fn encode(h: &Histogram<u64>) -> String {
        let mut bytes = Vec::new();
        V2DeflateSerializer::new()
            .serialize(h, &mut bytes)
            .expect("serialising into a Vec cannot fail");
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    pub(crate) fn decode(text: &str) -> Result<Histogram<u64>, String> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text.trim())
            .map_err(|e| format!("histogram: bad base64: {e}"))?;
        let mut h: Histogram<u64> = Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .map_err(|e| format!("histogram: {e:?}"))?;
        // Decoded histograms keep the encoder's bounds; let them take any
        // value when merged.
        h.auto(true);
        Ok(h)
    }

    pub(crate) fn serialize<S: Serializer>(h: &Histogram<u64>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&encode(h))
    }

    pub(crate) fn deserialize<'de, D: serde::Deserializer<'de>>(
        d: D,
    ) -> Result<Histogram<u64>, D::Error> {
        let text = String::deserialize(d)?;
        decode(&text).map_err(D::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ab's sorted-array statistics, for comparison.
    fn sorted(values: &[u64]) -> Vec<u64> {
        let mut v = values.to_vec();
        v.sort_unstable();
        v
    }

    #[test]
    fn order_statistics_match_sorted_samples_below_2048us() {
        let mut x: u64 = 12345;
        let values: Vec<u64> = (0..5000)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (x >> 33) % 2048
            })
            .collect();
        let mut h = new_histogram();
        for &v in &values {
            h.record(v).unwrap();
        }
        let s = sorted(&values);
        let stats = Stats::of(&h);
        for k in [0, 1, 2499, 2500, 4998, 4999, 10_000] {
            assert_eq!(stats.nth(k), s[(k as usize).min(4999)], "k={k}");
        }
        assert_eq!(stats.sum(), s.iter().map(|&v| u128::from(v)).sum::<u128>());
        let mean = stats.mean();
        let sd = (s.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / 4999.0).sqrt();
        assert!((stats.sd_sample(mean) - sd).abs() < 1e-6);
    }

    #[test]
    fn serialised_form_round_trips() {
        let mut h = new_histogram();
        for v in [0, 1, 17, 2047, 2048, 123_456, MAX_US] {
            h.record(v).unwrap();
        }
        let back = serde_v2::decode(&serde_v2::encode(&h)).unwrap();
        assert_eq!(back, h);
        assert!(serde_v2::decode("not base64!").is_err());
        assert!(serde_v2::decode("aGVsbG8=").is_err());
    }

    #[test]
    fn empty_histogram_stats_are_zero() {
        let h = new_histogram();
        let s = Stats::of(&h);
        assert_eq!(
            (s.count(), s.min(), s.max(), s.percentile(99.0)),
            (0, 0, 0, 0)
        );
        assert_eq!(s.mean(), 0.0);
    }
}
