//! Names as people type them: shell-style globs over event and function
//! names, and the closest names for a "did you mean" when one is unknown.

use alloc::vec::Vec;

/// Shell-style glob match with `*` and `?` (what `set_event` and
/// `available_events` users type).
pub(crate) fn glob_match(pat: &str, text: &str) -> bool {
    let (p, t) = (pat.as_bytes(), text.as_bytes());
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        match p.get(pi) {
            Some(b'*') => {
                star = Some((pi, ti));
                pi += 1;
            }
            Some(&c) if c == b'?' || c == t[ti] => {
                pi += 1;
                ti += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    pi = sp + 1;
                    ti = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

/// Edit distance (insert, delete, substitute), for "did you mean".
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = alloc::vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The names closest to `wanted` (at most `n`, close enough to be a typo),
/// best first. Matching on the part after `:` counts too.
pub(crate) fn closest<'a>(wanted: &str, mut names: impl Iterator<Item = &'a str>, n: usize) -> Vec<&'a str> {
    closest_of(wanted, &mut names, n)
}

/// [`closest`] for any iterator, compiled once.
fn closest_of<'a>(wanted: &str, names: &mut dyn Iterator<Item = &'a str>, n: usize) -> Vec<&'a str> {
    let w_event = wanted.rsplit(':').next().unwrap_or(wanted);
    let mut scored: Vec<(usize, &str)> = names
        .map(|name| {
            let ev = name.rsplit(':').next().unwrap_or(name);
            let d = edit_distance(wanted, name).min(edit_distance(w_event, ev));
            let d = if ev.contains(w_event) && !w_event.is_empty() { d.min(1) } else { d };
            (d, name)
        })
        .filter(|(d, _)| *d <= (w_event.len() / 3).max(2))
        .collect();
    scored.sort_unstable();
    scored.into_iter().take(n).map(|(_, s)| s).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_match("sched:*", "sched:sched_switch"));
        assert!(glob_match("*switch", "sched:sched_switch"));
        assert!(glob_match("s?hed:*wak*", "sched:sched_wakeup"));
        assert!(!glob_match("irq:*", "sched:sched_switch"));
        assert!(glob_match("*", ""));
        assert!(!glob_match("a", ""));
        assert!(glob_match("a*b*c", "aXbYbZc"));
    }

    #[test]
    fn suggestions() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        let names = ["sched:sched_switch", "sched:sched_wakeup", "irq:irq_handler_entry"];
        assert_eq!(closest("sched:sched_swich", names.iter().copied(), 3), ["sched:sched_switch"]);
        assert_eq!(closest("sched_switch", names.iter().copied(), 3)[0], "sched:sched_switch");
        assert!(closest("zzzzzz", names.iter().copied(), 3).is_empty());
    }
}
