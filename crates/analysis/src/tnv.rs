//! TNV tables ("top N values"), the value profiles of seed 004 §3.3 after
//! Calder et al.: N (value, count) slots; a value not in the table enters a
//! free slot or is discarded; every `interval` observations the lower half of
//! the table (the N/2 least frequent values) is evicted, and the next
//! interval becomes 1000 plus the count of the last entry of the steady
//! (upper) half, so that a value that appears between cleanings can overtake
//! it.

/// The default number of slots (seed 004: "N = 12 works well").
pub const DEFAULT_SLOTS: usize = 12;
/// The first cleaning interval (Calder et al.'s 1000).
pub const BASE_INTERVAL: u64 = 1000;

#[derive(Clone, Debug)]
pub struct Tnv {
    slots: Vec<(i64, u64)>,
    capacity: usize,
    last_hit: usize,
    observations: u64,
    not_held: u64,
    since_clean: u64,
    interval: u64,
}

impl Tnv {
    pub fn new(capacity: usize) -> Tnv {
        let capacity = capacity.max(2);
        Tnv {
            slots: Vec::with_capacity(capacity),
            capacity,
            last_hit: 0,
            observations: 0,
            not_held: 0,
            since_clean: 0,
            interval: BASE_INTERVAL,
        }
    }

    /// Counts one observation of `value`.
    #[inline]
    pub fn observe(&mut self, value: i64) {
        self.observations += 1;
        // Most value streams repeat: try the slot of the previous hit first.
        if let Some(slot) = self.slots.get_mut(self.last_hit) {
            if slot.0 == value {
                slot.1 += 1;
                self.tick();
                return;
            }
        }
        if let Some(i) = self.slots.iter().position(|s| s.0 == value) {
            self.slots[i].1 += 1;
            self.last_hit = i;
        } else if self.slots.len() < self.capacity {
            self.slots.push((value, 1));
            self.last_hit = self.slots.len() - 1;
        } else {
            self.not_held += 1;
        }
        self.tick();
    }

    #[inline]
    fn tick(&mut self) {
        self.since_clean += 1;
        if self.since_clean >= self.interval {
            self.clean();
        }
    }

    /// Evicts the lower half and sets the next interval.
    fn clean(&mut self) {
        self.since_clean = 0;
        self.sort();
        let steady = self.capacity / 2;
        if self.slots.len() > steady {
            for &(_, count) in &self.slots[steady..] {
                self.not_held += count;
            }
            self.slots.truncate(steady);
        }
        let last_steady = self.slots.last().map_or(0, |s| s.1);
        self.interval = BASE_INTERVAL + last_steady;
        self.last_hit = 0;
    }

    fn sort(&mut self) {
        // Ties broken by value so that the result does not depend on arrival order.
        self.slots.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    }

    pub fn observations(&self) -> u64 {
        self.observations
    }

    /// Observations of values the table does not hold.
    pub fn not_held(&self) -> u64 {
        self.not_held
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The held values, most frequent first.
    pub fn top(&self) -> Vec<(i64, u64)> {
        let mut v = self.slots.clone();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        v
    }

    /// Rebuilds a table from a profile's held values (for merging).
    pub fn from_parts(capacity: usize, top: &[(i64, u64)], observations: u64, not_held: u64) -> Tnv {
        let mut t = Tnv::new(capacity);
        t.slots = top.iter().copied().take(t.capacity).collect();
        let dropped: u64 = top.iter().skip(t.capacity).map(|s| s.1).sum();
        t.observations = observations;
        t.not_held = not_held + dropped;
        t
    }

    /// Adds the counts of `other`: shared values add up; the union is cut
    /// back to the capacity, the cut counts becoming not held.
    pub fn merge(&mut self, other: &Tnv) {
        for &(value, count) in &other.slots {
            match self.slots.iter_mut().find(|s| s.0 == value) {
                Some(s) => s.1 += count,
                None => self.slots.push((value, count)),
            }
        }
        self.observations += other.observations;
        self.not_held += other.not_held;
        self.sort();
        if self.slots.len() > self.capacity {
            for &(_, count) in &self.slots[self.capacity..] {
                self.not_held += count;
            }
            self.slots.truncate(self.capacity);
        }
        self.last_hit = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn held(t: &Tnv) -> u64 {
        t.top().iter().map(|s| s.1).sum()
    }

    #[test]
    fn counts_a_constant_exactly() {
        let mut t = Tnv::new(12);
        for _ in 0..10_000 {
            t.observe(8);
        }
        assert_eq!(t.top(), vec![(8, 10_000)]);
        assert_eq!(t.not_held(), 0);
    }

    #[test]
    fn full_table_discards_new_values() {
        let mut t = Tnv::new(4);
        for v in 0..10 {
            t.observe(v);
        }
        assert_eq!(t.top().len(), 4);
        assert_eq!(t.not_held(), 6);
    }

    #[test]
    fn cleaning_lets_a_late_frequent_value_in() {
        // Twelve early values fill the table; then a new value dominates.
        let mut t = Tnv::new(12);
        for v in 0..12 {
            for _ in 0..10 {
                t.observe(v);
            }
        }
        for _ in 0..5000 {
            t.observe(99);
        }
        let top = t.top();
        assert_eq!(top[0].0, 99, "the late value must reach the top: {top:?}");
        assert!(top[0].1 > 3000, "most of its observations are held: {top:?}");
        assert_eq!(held(&t) + t.not_held(), t.observations());
    }

    #[test]
    fn adaptive_interval_grows_with_the_steady_half() {
        let mut t = Tnv::new(4);
        for i in 0..1000u64 {
            t.observe((i % 2) as i64);
        }
        // After the first cleaning the interval is 1000 + the last steady count.
        assert_eq!(t.interval, BASE_INTERVAL + 500);
    }

    #[test]
    fn merge_adds_shared_values() {
        let mut a = Tnv::new(4);
        let mut b = Tnv::new(4);
        for _ in 0..3 {
            a.observe(1);
            b.observe(1);
        }
        b.observe(2);
        a.merge(&b);
        assert_eq!(a.top(), vec![(1, 6), (2, 1)]);
        assert_eq!(a.observations(), 7);
    }

    proptest! {
        #[test]
        fn held_plus_not_held_is_all(values in proptest::collection::vec(0i64..40, 0..5000), n in 2usize..16) {
            let mut t = Tnv::new(n);
            for &v in &values { t.observe(v); }
            prop_assert_eq!(held(&t) + t.not_held(), values.len() as u64);
            prop_assert!(t.top().len() <= n);
            // A held value's count never exceeds its true count.
            for (v, c) in t.top() {
                prop_assert!(c <= values.iter().filter(|&&x| x == v).count() as u64);
            }
        }
    }
}
