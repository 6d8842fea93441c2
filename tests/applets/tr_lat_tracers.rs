//! tr-lat timerlat and osnoise on a synthetic copy of a tracefs tree (this
//! machine's kernel has neither tracer; the 6.1-rt boards do): raw pages
//! of `ftrace/timerlat` and `ftrace/osnoise` entries, written through the
//! real format files of a 6.18 kernel, give per-CPU tables whose counts,
//! minima, maxima and sums are those of the values written.

use super::common;
use common::*;
use std::collections::BTreeMap;
use std::path::Path;
use trbox::abi::Endian;
use trbox::format::{EventFormat, HeaderPage};
use trbox::page::build::{Ev, PageBuilder};
use trbox::page::{Missed, PageLayout};

const HEADER_PAGE: &str = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";

const COMMON: &str = "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n";

const TIMERLAT: &str = "\tfield:unsigned int seqnum;\toffset:8;\tsize:4;\tsigned:0;\n\tfield:int context;\toffset:12;\tsize:4;\tsigned:1;\n\tfield:u64 timer_latency;\toffset:16;\tsize:8;\tsigned:0;\n\nprint fmt: \"seq:%u\\tcontext:%d\\ttimer_latency:%llu\\n\", REC->seqnum, REC->context, REC->timer_latency\n";

const OSNOISE: &str = "\tfield:u64 noise;\toffset:8;\tsize:8;\tsigned:0;\n\tfield:u64 runtime;\toffset:16;\tsize:8;\tsigned:0;\n\tfield:u64 max_sample;\toffset:24;\tsize:8;\tsigned:0;\n\tfield:unsigned int hw_count;\toffset:32;\tsize:4;\tsigned:0;\n\tfield:unsigned int nmi_count;\toffset:36;\tsize:4;\tsigned:0;\n\tfield:unsigned int irq_count;\toffset:40;\tsize:4;\tsigned:0;\n\tfield:unsigned int softirq_count;\toffset:44;\tsize:4;\tsigned:0;\n\tfield:unsigned int thread_count;\toffset:48;\tsize:4;\tsigned:0;\n\nprint fmt: \"noise:%llu\\tmax_sample:%llu\\thw:%u\\tnmi:%u\\tirq:%u\\tsoftirq:%u\\tthread:%u\\n\", REC->noise, REC->max_sample, REC->hw_count, REC->nmi_count, REC->irq_count, REC->softirq_count, REC->thread_count\n";

fn format(name: &str, id: u32, fields: &str) -> String {
    format!("name: {name}\nID: {id}\nformat:\n{COMMON}{fields}")
}

/// A tree with the two events and `records(cpu)` payloads per CPU in
/// pages (1 µs apart).
fn tree(dir: &Path, tracer: &str, records: &dyn Fn(&EventFormat, u32) -> Vec<Vec<u8>>) {
    let w = |rel: &str, text: &str| {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    w("events/header_page", HEADER_PAGE);
    w(
        "events/header_event",
        "# compressed entry header\n\ttype_len    :    5 bits\n\ttime_delta  :   27 bits\n\tarray       :   32 bits\n",
    );
    let tl = format("timerlat", 18, TIMERLAT);
    let on = format("osnoise", 17, OSNOISE);
    w("events/ftrace/timerlat/format", &tl);
    w("events/ftrace/osnoise/format", &on);
    w("trace_clock", "[local] global counter\n");
    w("current_tracer", &format!("{tracer}\n"));
    w("saved_cmdlines", "");
    w("printk_formats", "");
    w("tracing_on", "0\n");
    let ev = EventFormat::parse(if tracer == "timerlat" { &tl } else { &on }, "ftrace", 8).unwrap();
    let layout = PageLayout::from(&HeaderPage::parse(HEADER_PAGE).unwrap());
    for cpu in 0..2u32 {
        let mut out = Vec::new();
        let recs = records(&ev, cpu);
        let mut it = recs.iter().peekable();
        let mut ts = 1_000_000_000u64;
        while it.peek().is_some() {
            let mut pb = PageBuilder::new(layout, Endian::Little, ts);
            while let Some(p) = it.peek() {
                if pb.data_len() + p.len() + 8 > layout.subbuf_size() - 64 {
                    break;
                }
                pb.push(Ev::Data { delta: 1000, payload: p, force_long: false });
                ts += 1000;
                it.next();
            }
            out.extend(pb.finish(Missed::None, None));
        }
        w(&format!("per_cpu/cpu{cpu}/stats"), "entries: 0\n");
        std::fs::write(dir.join(format!("per_cpu/cpu{cpu}/trace_pipe_raw")), out).unwrap();
    }
}

fn payload(ev: &EventFormat, vals: &[(&str, u64)]) -> Vec<u8> {
    let mut b = vec![0u8; ev.fields.iter().map(|f| (f.offset + f.size) as usize).max().unwrap()];
    b[..2].copy_from_slice(&(ev.id as u16).to_le_bytes());
    for (n, v) in vals {
        let f = ev.field(n).unwrap();
        let (o, s) = (f.offset as usize, f.size as usize);
        b[o..o + s].copy_from_slice(&v.to_le_bytes()[..s]);
    }
    b
}

/// `"key":VALUE` of a JSON line.
fn field<'a>(line: &'a str, key: &str) -> &'a str {
    let pat = format!("\"{key}\":");
    let rest = &line[line.find(&pat).unwrap_or_else(|| panic!("{key} in {line}")) + pat.len()..];
    rest.trim_start_matches('"').split([',', '}', '"']).next().unwrap()
}

/// The kernel numbers every timer IRQ (seqnum) whether or not its entry
/// reaches the buffer: IRQs the tables miss are counted and said.
#[test]
fn timerlat_says_the_timer_irqs_it_did_not_read() {
    let d = TempDir::new("tr-lat-timerlat-gaps");
    // Every other seqnum is missing: 1, 3, ... 199 per CPU.
    tree(d.path(), "timerlat", &|ev, _| {
        (0..100u64).map(|i| payload(ev, &[("seqnum", 2 * i + 1), ("context", 0), ("timer_latency", 1000)])).collect()
    });
    let o = run(&["tr-lat", "timerlat", "-T", d.path().to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let l = out.lines().find(|l| l.contains("\"timerlat_samples\"")).unwrap_or_else(|| panic!("{out}"));
    assert_eq!((field(l, "taken"), field(l, "read")), ("398", "200"), "{l}");
    assert!(
        stderr(&o).contains("198 of the 398 timer IRQs the kernel counted (seqnum) are not in the tables"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn timerlat_tables_are_the_entries_per_cpu_and_context() {
    let d = TempDir::new("tr-lat-timerlat");
    // Per CPU: 500 periods, each an IRQ then a thread sample, latencies
    // from a fixed formula (ns); every 97th thread sample is a spike.
    let lat = |cpu: u32, i: u64, ctx: u64| -> u64 {
        let base = 1000 + (i * 37 + u64::from(cpu) * 11) % 900 + ctx * 2500;
        if ctx == 1 && i % 97 == 0 {
            base + 40_000
        } else {
            base
        }
    };
    tree(d.path(), "timerlat", &|ev, cpu| {
        (0..500u64)
            .flat_map(|i| (0..2u64).map(move |ctx| (i, ctx)))
            .map(|(i, ctx)| payload(ev, &[("seqnum", i + 1), ("context", ctx), ("timer_latency", lat(cpu, i, ctx))]))
            .collect()
    });
    let p = d.path().to_str().unwrap();
    let o = run(&["tr-lat", "timerlat", "-T", p, "--json", "--ns"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // A copy is only read: what would act on a run is refused, by name.
    for (opt, want) in
        [(&["--priority", "f:10"][..], "--priority sets up a tracer"), (&["--on-end", "trace"][..], "no --on-end")]
    {
        let o = run(&[&["tr-lat", "timerlat", "-T", p][..], opt].concat());
        assert_eq!(o.status.code(), Some(1), "{opt:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(want), "{opt:?}: {}", stderr(&o));
    }
    let out = stdout(&o);
    let mut seen = BTreeMap::new();
    for l in out.lines() {
        if field(l, "table") == "timerlat_samples" {
            assert_eq!((field(l, "taken"), field(l, "read")), ("1000", "1000"), "{l}");
            continue;
        }
        let (table, cpu) = (field(l, "table").to_string(), field(l, "key").parse::<u32>().unwrap());
        let ctx = if table == "timerlat_irq" { 0 } else { 1 };
        let v: Vec<u64> = (0..500).map(|i| lat(cpu, i, ctx)).collect();
        let want = [
            ("count", v.len() as u64),
            ("min", *v.iter().min().unwrap()),
            ("max", *v.iter().max().unwrap()),
            ("sum", v.iter().sum()),
            ("avg", v.iter().sum::<u64>() / 500),
        ];
        for (k, w) in want {
            assert_eq!(field(l, k).parse::<u64>().unwrap(), w, "{table} cpu {cpu} {k}: {l}");
        }
        seen.insert((table, cpu), ());
    }
    assert_eq!(seen.len(), 4, "IRQ and thread rows of 2 CPUs:\n{out}");
    // The table, in µs: titled with its unit, one row per CPU.
    let o = run(&["tr-lat", "timerlat", "-T", p]);
    let out = stdout(&o);
    assert!(out.contains("# timerlat IRQ latency per CPU, us\n"), "{out}");
    assert!(out.contains("# timerlat thread latency per CPU, us\n"), "{out}");
    let max1: u64 = (0..500).map(|i| lat(1, i, 1)).max().unwrap();
    assert!(
        out.lines().any(|l| l.starts_with("1 ") && l.contains(&format!(" {}.{:03} ", max1 / 1000, max1 % 1000))),
        "{out}"
    );
    // --hist: the buckets and the overflow row add up to the count.
    let o = run(&["tr-lat", "timerlat", "-T", p, "--hist", "--bucket", "1", "-E", "10"]);
    let out = stdout(&o);
    let blocks: Vec<&str> = out.split("\n\n").collect();
    assert_eq!(blocks.len(), 4, "{out}");
    for b in blocks {
        let n: u64 = b.lines().skip(1).map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap()).sum();
        assert_eq!(n, 500, "{b}");
        assert!(b.lines().last().unwrap().trim_start().starts_with(">= 10.000"), "{b}");
    }
}

#[test]
fn osnoise_table_sums_the_periods_per_cpu() {
    let d = TempDir::new("tr-lat-osnoise");
    // 50 periods per CPU: runtime 1 s (µs), noise and counts by formula.
    let noise = |cpu: u32, i: u64| 3 + (i * 7 + u64::from(cpu)) % 20;
    tree(d.path(), "osnoise", &|ev, cpu| {
        (0..50u64)
            .map(|i| {
                payload(
                    ev,
                    &[
                        ("runtime", 1_000_000),
                        ("noise", noise(cpu, i)),
                        ("max_sample", noise(cpu, i) / 2 + 1),
                        ("hw_count", i % 2),
                        ("nmi_count", 0),
                        ("irq_count", 10),
                        ("softirq_count", 3),
                        ("thread_count", 1),
                    ],
                )
            })
            .collect()
    });
    let p = d.path().to_str().unwrap();
    let o = run(&["tr-lat", "osnoise", "-T", p, "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    for cpu in 0..2u32 {
        let l = out.lines().find(|l| l.contains("\"osnoise_cpu\"") && field(l, "key") == cpu.to_string()).unwrap();
        let total: u64 = (0..50).map(|i| noise(cpu, i)).sum();
        let single = (0..50).map(|i| noise(cpu, i) / 2 + 1).max().unwrap();
        for (k, w) in [
            ("periods", 50),
            ("runtime", 50_000_000),
            ("noise", total),
            ("max_single", single),
            ("hw", 25),
            ("irq", 500),
            ("softirq", 150),
            ("thread", 50),
        ] {
            assert_eq!(field(l, k).parse::<u64>().unwrap(), w, "cpu {cpu} {k}: {l}");
        }
        let avail = (50_000_000 - total) as f64 * 100.0 / 50_000_000.0;
        let got: f64 = field(l, "available_pct").parse().unwrap();
        assert!((got - avail).abs() < 0.001, "{got} {avail}");
    }
    let o = run(&["tr-lat", "osnoise", "-T", p]);
    let out = stdout(&o);
    assert!(out.contains("# osnoise per CPU: runtime, noise and max single noise in us"), "{out}");
}

/// The timerlat entries as text (tr-cat, and tr-lat's records before a
/// stop): one line each, as the kernel's trace_timerlat_print writes them,
/// not the format's print fmt (which ends in "\n"). The kernel's text of
/// real entries is compared in tests/core/decode_fixtures.rs (6.1-rt).
#[test]
fn timerlat_entries_render_one_line_each() {
    let d = TempDir::new("tr-lat-timerlat-text");
    tree(d.path(), "timerlat", &|ev, _| {
        (1..=3u64).map(|i| payload(ev, &[("seqnum", i), ("context", i % 2), ("timer_latency", 1000 * i)])).collect()
    });
    let o = run(&["tr-cat", "--raw", "-T", d.path().to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().filter(|l| !l.starts_with('#')).collect();
    // The same three records on each of the tree's two CPUs.
    assert_eq!(lines.len(), 6, "{out}");
    for (l, want) in lines.iter().zip([
        "#1     context thread timer_latency      1000 ns",
        "#1     context thread timer_latency      1000 ns",
        "#2     context    irq timer_latency      2000 ns",
        "#2     context    irq timer_latency      2000 ns",
        "#3     context thread timer_latency      3000 ns",
        "#3     context thread timer_latency      3000 ns",
    ]) {
        assert!(l.ends_with(&format!(": {want}")), "{l:?} does not end in {want:?}");
    }
}

/// osnoise/options words (hwnoise's OSNOISE_IRQ_DISABLE, -u's
/// NO_OSNOISE_WORKLOAD) through the undo log: written only when needed,
/// the old word written back at the end, None for a word the kernel lacks.
#[test]
fn osnoise_options_are_set_and_put_back() {
    use trbox::sys::state::State;
    use trbox::sys::Tracefs;
    let d = TempDir::new("osnoise-options");
    std::fs::create_dir_all(d.0.join("events")).unwrap();
    std::fs::create_dir_all(d.0.join("osnoise")).unwrap();
    let opts = d.0.join("osnoise/options");
    let v72 = "DEFAULTS OSNOISE_WORKLOAD NO_PANIC_ON_STOP NO_OSNOISE_PREEMPT_DISABLE NO_OSNOISE_IRQ_DISABLE NO_TIMERLAT_ALIGN \n";
    std::fs::write(&opts, v72).unwrap();
    let t = Tracefs::open(Some(d.0.to_str().unwrap())).unwrap();
    {
        let mut st = State::new(&t);
        assert_eq!(st.set_osnoise_option("OSNOISE_IRQ_DISABLE", true).unwrap(), Some(true));
        assert_eq!(std::fs::read_to_string(&opts).unwrap(), "OSNOISE_IRQ_DISABLE\n");
        std::fs::write(&opts, v72).unwrap();
        assert_eq!(st.set_osnoise_option("OSNOISE_WORKLOAD", true).unwrap(), Some(false));
        assert_eq!(st.set_osnoise_option("NO_SUCH_OPTION", true).unwrap(), None);
        assert_eq!(st.set_osnoise_option("OSNOISE_WORKLOAD", false).unwrap(), Some(true));
    }
    // Put back in reverse order: the last write is the first change's undo.
    assert_eq!(std::fs::read_to_string(&opts).unwrap(), "NO_OSNOISE_IRQ_DISABLE\n");
}
