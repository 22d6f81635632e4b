//! TinyLFU's frequency sketch (Einziger, Friedman and Manes, 2017), as
//! Caffeine builds it: a count-min sketch of 4-bit counters, four rows,
//! sixteen counters to a 64-bit word; a doorkeeper (a Bloom filter) takes
//! the first request of each track so one-hit wonders never reach the
//! counters; after a sample of 10 × the cache's entries, every counter is
//! halved and the doorkeeper cleared, so old popularity fades.

use super::idmap::mix64;

const DEPTH: usize = 4;
const SEEDS: [u64; DEPTH] = [
    0x97CB_3127_4E6D_9A2B,
    0xC2B2_AE3D_27D4_EB4F,
    0x1656_67B1_9E37_79F9,
    0x27D4_EB2F_1656_67C5,
];

/// A count-min sketch of 4-bit counters with a doorkeeper and periodic
/// halving.
#[derive(Debug, Clone)]
pub struct FrequencySketch {
    /// `DEPTH` rows of `width` counters, sixteen to a word.
    table: Vec<u64>,
    width_mask: u64,
    /// The doorkeeper's bits.
    door: Vec<u64>,
    door_mask: u64,
    additions: u64,
    sample: u64,
    resets: u64,
}

impl FrequencySketch {
    /// A sketch for a cache of about `entries` tracks.
    pub fn new(entries: usize) -> Self {
        let width = (entries.max(16) * 4).next_power_of_two();
        let door_bits = (entries.max(16) * 8).next_power_of_two();
        FrequencySketch {
            table: vec![0; DEPTH * width / 16],
            width_mask: width as u64 - 1,
            door: vec![0; door_bits / 64],
            door_mask: door_bits as u64 - 1,
            additions: 0,
            sample: 10 * entries.max(1) as u64,
            resets: 0,
        }
    }

    /// How many requests make one sample (then every count is halved).
    pub fn sample_size(&self) -> u64 {
        self.sample
    }

    /// How many times the counts were halved.
    pub fn resets(&self) -> u64 {
        self.resets
    }

    fn counter(&self, row: usize, h: u64) -> (usize, u32) {
        let col = (mix64(h, SEEDS[row]) & self.width_mask) as usize;
        let idx = row * (self.width_mask as usize + 1) + col;
        (idx / 16, ((idx % 16) * 4) as u32)
    }

    fn door_bits(&self, h: u64) -> [(usize, u64); 2] {
        let a = mix64(h, 0x5851_F42D_4C95_7F2D) & self.door_mask;
        let b = mix64(h, 0x1405_7B7E_F767_814F) & self.door_mask;
        [
            ((a / 64) as usize, 1 << (a % 64)),
            ((b / 64) as usize, 1 << (b % 64)),
        ]
    }

    fn in_door(&self, h: u64) -> bool {
        self.door_bits(h)
            .iter()
            .all(|&(w, m)| self.door[w] & m != 0)
    }

    /// The estimated number of requests of `id` in the recent sample
    /// (0–16).
    pub fn frequency(&self, id: u64) -> u32 {
        let mut min = 15;
        for row in 0..DEPTH {
            let (w, s) = self.counter(row, id);
            min = min.min(((self.table[w] >> s) & 15) as u32);
        }
        min + u32::from(self.in_door(id))
    }

    /// Counts one request of `id`.
    pub fn increment(&mut self, id: u64) {
        if !self.in_door(id) {
            for (w, m) in self.door_bits(id) {
                self.door[w] |= m;
            }
        } else {
            for row in 0..DEPTH {
                let (w, s) = self.counter(row, id);
                if (self.table[w] >> s) & 15 < 15 {
                    self.table[w] += 1 << s;
                }
            }
        }
        self.additions += 1;
        if self.additions >= self.sample {
            self.reset();
        }
    }

    /// Ages the sketch: halves every counter, clears the doorkeeper.
    pub fn reset(&mut self) {
        for w in &mut self.table {
            *w = (*w >> 1) & 0x7777_7777_7777_7777;
        }
        self.door.iter_mut().for_each(|w| *w = 0);
        self.additions /= 2;
        self.resets += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_requests_after_the_doorkeeper_and_saturates_at_fifteen() {
        let mut s = FrequencySketch::new(1000);
        assert_eq!(s.frequency(42), 0);
        s.increment(42);
        assert_eq!(s.frequency(42), 1, "the doorkeeper holds the first");
        for _ in 0..4 {
            s.increment(42);
        }
        assert_eq!(s.frequency(42), 5);
        for _ in 0..30 {
            s.increment(42);
        }
        assert_eq!(s.frequency(42), 16, "15 in the counters + the doorkeeper");
        // Other ids are (almost all) untouched: count-min only overestimates.
        let wrong = (0..1000u64)
            .filter(|&id| id != 42 && s.frequency(id) > 0)
            .count();
        assert!(wrong < 5, "{wrong} ids collide");
    }

    #[test]
    fn halves_counts_after_a_sample_of_ten_times_the_entries() {
        let mut s = FrequencySketch::new(100);
        assert_eq!(s.sample_size(), 1000);
        for _ in 0..9 {
            s.increment(7);
        }
        assert_eq!(s.frequency(7), 9);
        // Fill the rest of the sample with other ids, each seen once.
        for id in 1000..1000 + 990 {
            s.increment(id);
        }
        assert_eq!(s.resets(), 0);
        s.increment(1_000_000);
        assert_eq!(s.resets(), 1);
        // 8 in the counters halved to 4; the doorkeeper was cleared.
        assert_eq!(s.frequency(7), 4);
    }
}
