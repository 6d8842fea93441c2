//! The kernel's `trace` text, as the decoder tests read it.

use trbox::abi::Endian;
use trbox::format::EventFormat;

/// `[CPU] FLAGS SECS.USECS: REST` from one line of `trace`: (cpu, µs, the
/// text after the timestamp). COMM may hold anything, so each `[digits]`
/// followed by flags and a timestamp is tried.
pub fn parse(line: &str) -> Option<(u32, u64, &str)> {
    let mut i = 0;
    while let Some(off) = line[i..].find('[') {
        let s = i + off;
        i = s + 1;
        let Some(close) = line[s..].find(']') else { break };
        let cpu = &line[s + 1..s + close];
        if cpu.is_empty() || !cpu.bytes().all(|c| c.is_ascii_digit()) {
            continue;
        }
        let rest = line[s + close + 1..].trim_start();
        let Some((_flags, tail)) = rest.split_once(' ') else { continue };
        let Some((ts, after)) = tail.trim_start().split_once(": ") else { continue };
        let Some((sec, usec)) = ts.split_once('.') else { continue };
        let (Ok(sec), Ok(usec)) = (sec.parse::<u64>(), usec.parse::<u64>()) else { continue };
        return Some((cpu.parse().ok()?, sec * 1_000_000 + usec, after));
    }
    None
}

/// `name: body` (or just the body for ftrace's own events) of a `trace`
/// line, with its CPU.
pub fn split_line(line: &str) -> Option<(u32, &str)> {
    let b = line.as_bytes();
    let mut i = 0;
    while let Some(o) = line[i..].find('[') {
        let s = i + o + 1;
        let n = b[s..].iter().take_while(|c| c.is_ascii_digit()).count();
        if n > 0 && b.get(s + n) == Some(&b']') {
            let cpu = line[s..s + n].parse().ok()?;
            let rest = &line[s + n + 1..];
            let colon = rest.find(": ")?;
            return Some((cpu, &rest[colon + 2..]));
        }
        i = s;
    }
    None
}

/// (cpu, µs, event name) of one line of `trace`.
pub fn parse_event(line: &str) -> Option<(u32, u64, String)> {
    let (cpu, us, after) = parse(line)?;
    Some((cpu, us, after.split(':').next()?.to_string()))
}

/// Check a few fields read through the parsed format against the kernel's
/// text of the same record (fixed fields, arrays and `__data_loc` strings).
pub fn check_fields(ev: &EventFormat, p: &[u8], line: &str, e: Endian) -> Result<bool, String> {
    let s = |n: &str| -> String {
        let b = ev.field(n).and_then(|f| f.bytes(p, e)).unwrap_or(b"?");
        String::from_utf8_lossy(b.split(|&c| c == 0).next().unwrap_or(b"")).into_owned()
    };
    let i = |n: &str| -> String { ev.field(n).and_then(|f| f.int(p, e)).map_or("?".into(), |v| v.to_string()) };
    let want = match ev.name.as_str() {
        "sched_switch" => vec![
            format!("prev_comm={} prev_pid={} prev_prio={} ", s("prev_comm"), i("prev_pid"), i("prev_prio")),
            format!("next_comm={} next_pid={} next_prio={}", s("next_comm"), i("next_pid"), i("next_prio")),
        ],
        "sched_wakeup" | "sched_wakeup_new" => vec![format!("comm={} pid={} prio={} ", s("comm"), i("pid"), i("prio"))],
        "sched_process_exec" => vec![format!("filename={} pid={} old_pid={}", s("filename"), i("pid"), i("old_pid"))],
        "sched_process_fork" => vec![format!(
            "comm={} pid={} child_comm={} child_pid={}",
            ev.field("parent_comm").map_or_else(|| s("comm"), |_| s("parent_comm")),
            ev.field("parent_pid").map_or_else(|| i("pid"), |_| i("parent_pid")),
            s("child_comm"),
            i("child_pid")
        )],
        "irq_handler_entry" => vec![format!("irq={} name={}", i("irq"), s("name"))],
        "task_newtask" => vec![format!("pid={} comm={} ", i("pid"), s("comm"))],
        _ => vec![],
    };
    for w in &want {
        if !line.contains(w.as_str()) {
            return Err(format!("{w:?} not in {line:?}"));
        }
    }
    Ok(!want.is_empty())
}
