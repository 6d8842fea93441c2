//! tr-lat's `irq` mode: `irq_handler_entry` → `irq_handler_exit` of the
//! same IRQ on the same CPU (hard IRQs do not nest), per IRQ, and
//! `softirq_entry` → `softirq_exit` per vector.

use alloc::vec::Vec;

use super::{find, require, Ev, Missing, Rec, Rows, Sample, Table, MAX_OPEN};
use crate::format::EventTable;

/// The events; the softirq ones are optional.
pub(super) const ENTRY: &str = "irq:irq_handler_entry";
pub(super) const EXIT: &str = "irq:irq_handler_exit";
pub(super) const SOFT_ENTRY: &str = "?irq:softirq_entry";
pub(super) const SOFT_EXIT: &str = "?irq:softirq_exit";

/// irq_handler_entry's and irq_handler_exit's fields read, and their
/// indexes in [`Ev`].
const ENTRY_FIELDS: &[&str] = &["irq", "name"];
const EXIT_FIELDS: &[&str] = &["irq"];
const IRQ: usize = 0;
const NAME: usize = 1;
/// The softirq events' one field.
const VEC_FIELDS: &[&str] = &["vec"];
const VEC: usize = 0;

/// An open begin: (IRQ or vector, entry time).
type Open = Option<(i64, u64)>;

/// One CPU's open hard IRQ and softirq.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Slot {
    hard: Open,
    soft: Open,
}

/// The irq mode's events and open handlers.
pub(super) struct Irq {
    entry: Ev,
    exit: Ev,
    soft_entry: Option<Ev>,
    soft_exit: Option<Ev>,
    /// Per CPU.
    open: Vec<Slot>,
}

impl Irq {
    pub(super) fn new(events: &EventTable) -> Result<Irq, Missing> {
        Ok(Irq {
            entry: require(events, ENTRY, ENTRY_FIELDS)?,
            exit: require(events, EXIT, EXIT_FIELDS)?,
            soft_entry: find(events, SOFT_ENTRY, VEC_FIELDS, false)?,
            soft_exit: find(events, SOFT_EXIT, VEC_FIELDS, false)?,
            open: Vec::new(),
        })
    }

    /// Feed one record; `unpaired` counts the begins and ends without
    /// their other half.
    pub(super) fn record(&mut self, rows: &mut Rows, unpaired: &mut u64, r: &Rec) -> Option<Sample> {
        let is = |ev: &Option<Ev>| ev.as_ref().is_some_and(|ev| ev.id == r.id);
        if r.id == self.entry.id {
            let n = r.int(&self.entry, IRQ)?;
            // Name it now: the exit carries no name.
            rows.name(Table::HardIrq, n, &r.text(&self.entry, NAME));
            self.begin(unpaired, r, n, true)
        } else if r.id == self.exit.id {
            let n = r.int(&self.exit, IRQ)?;
            self.end(rows, unpaired, r, n, true)
        } else if is(&self.soft_entry) {
            let n = r.int(self.soft_entry.as_ref()?, VEC)?;
            self.begin(unpaired, r, n, false)
        } else if is(&self.soft_exit) {
            let n = r.int(self.soft_exit.as_ref()?, VEC)?;
            self.end(rows, unpaired, r, n, false)
        } else {
            None
        }
    }

    fn begin(&mut self, unpaired: &mut u64, r: &Rec, n: i64, hard: bool) -> Option<Sample> {
        let slot = self.slot(r.cpu)?;
        let open = if hard { &mut slot.hard } else { &mut slot.soft };
        if open.replace((n, r.ts)).is_some() {
            *unpaired += 1;
        }
        None
    }

    fn end(&mut self, rows: &mut Rows, unpaired: &mut u64, r: &Rec, n: i64, hard: bool) -> Option<Sample> {
        let slot = self.slot(r.cpu)?;
        let open = if hard { &mut slot.hard } else { &mut slot.soft };
        match open.take() {
            Some((m, begin)) if m == n => {
                let table = if hard { Table::HardIrq } else { Table::SoftIrq };
                let s = r.sample(table, n, begin);
                rows.add(table, n, None, s.ns);
                Some(s)
            }
            _ => {
                *unpaired += 1;
                None
            }
        }
    }

    fn slot(&mut self, cpu: u32) -> Option<&mut Slot> {
        let i = usize::try_from(cpu).ok().filter(|&i| i < MAX_OPEN)?;
        if self.open.len() <= i {
            self.open.resize(i + 1, Slot::default());
        }
        self.open.get_mut(i)
    }

    /// A loss: forget every open handler; how many there were.
    pub(super) fn forget(&mut self) -> u64 {
        let n = self.open.iter().map(|s| u64::from(s.hard.is_some()) + u64::from(s.soft.is_some())).sum();
        self.open.iter_mut().for_each(|s| *s = Slot::default());
        n
    }
}
