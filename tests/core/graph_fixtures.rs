//! The function_graph renderer (src/graph/) against the kernel's own
//! `trace` text of the same buffer, for the trees recorded in the qemu boards
//! (tests/fixtures/ARCH/function_graph{,_depth}): arm64, armv7 (32-bit) and
//! x86_64 Debian 6.1 kernels. Also checks the folded/top aggregations on the
//! same records.

use std::path::Path;

use trbox::abi::Endian;
use trbox::graph::stats::{GraphStats, TopBy};
use trbox::graph::{render_streams, GraphEvents, GraphOpts, GraphRec, GraphRenderer, IrqText};
use trbox::page::{Page, PageItem};
use trbox::Trace;

struct Tree {
    trace: Trace,
    opts: GraphOpts,
    /// Per CPU: (ts, payload).
    cpus: Vec<Vec<(u64, Vec<u8>)>>,
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_default()
}

fn load(dir: &Path) -> Tree {
    let trace = trbox::sys::trace::open_parsed(dir).unwrap();
    let sb = trace.layout.subbuf_size();
    let mut cpus = Vec::new();
    for n in 0.. {
        let f = dir.join(format!("per_cpu/cpu{n}/trace_pipe_raw"));
        if !f.exists() {
            break;
        }
        let bytes = std::fs::read(&f).unwrap();
        let mut recs = Vec::new();
        for page in bytes.chunks(sb) {
            let Ok(p) = Page::parse(page, &trace.layout, Endian::Little) else { continue };
            for it in p.items() {
                if let Ok(PageItem::Record(r)) = it {
                    recs.push((r.ts, r.payload.to_vec()));
                }
            }
        }
        cpus.push(recs);
    }
    Tree { trace, opts: GraphOpts::from_trace_options(&read(&dir.join("trace_options"))), cpus }
}

/// The tree's graph renderer, default options.
fn renderer(t: &Tree) -> GraphRenderer<'_> {
    let tr = &t.trace;
    GraphRenderer::new(
        &tr.events,
        &tr.cmdlines,
        trbox::abi::Abi::new(Endian::Little, tr.long_size()),
        Some(&tr.symbols),
    )
}

/// Records in the kernel's order (graph::render_streams: smallest
/// timestamp first, lowest CPU on ties, next record of the same CPU peeked).
fn render(t: &Tree) -> String {
    let mut g = renderer(t)
        .with_strings(&t.trace.printk)
        .with_opts(t.opts)
        .with_cpu_count(t.cpus.len() as u32)
        .with_irq_text(IrqText::from_kallsyms(&t.trace.symbols));
    let mut streams: Vec<_> = t.cpus.iter().map(|c| c.iter().map(|(ts, p)| (*ts, p.as_slice())).peekable()).collect();
    let mut out = String::new();
    // The fixtures hold no function/kernel_stack records; the applet renders
    // those with render::Renderer.
    render_streams(&mut g, &mut out, &mut streams, |w, _, _, _| {
        w.push_str("<not a graph record>\n");
        Ok(())
    })
    .unwrap();
    out
}

fn compare(dir: &Path) -> (usize, Vec<String>) {
    let t = load(dir);
    let ours = render(&t);
    let kernel = read(&dir.join("trace"));
    let k: Vec<&str> = kernel.lines().filter(|l| !l.starts_with('#')).collect();
    let o: Vec<&str> = ours.lines().collect();
    let mut bad = Vec::new();
    for i in 0..k.len().max(o.len()) {
        let (a, b) = (k.get(i).copied().unwrap_or("<none>"), o.get(i).copied().unwrap_or("<none>"));
        if a != b {
            let ctx: Vec<String> =
                (i.saturating_sub(3)..i).map(|j| format!("      {}", k.get(j).unwrap_or(&""))).collect();
            bad.push(format!("{}:{}:\n{}\n  kernel: {a}\n  trbox:  {b}", dir.display(), i + 1, ctx.join("\n")));
        }
    }
    (k.len(), bad)
}

fn fixtures() -> Vec<std::path::PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut v = Vec::new();
    for arch in ["aarch64", "armv7", "x86_64"] {
        for s in ["function_graph", "function_graph_depth"] {
            let d = root.join(arch).join(s);
            assert!(d.join("trace").exists(), "fixture missing: {}", d.display());
            v.push(d);
        }
    }
    v
}

#[test]
fn graph_text_matches_the_kernel() {
    let mut failures = Vec::new();
    for d in fixtures() {
        let (n, bad) = compare(&d);
        println!(
            "{:<45} {n:>6} lines, {} differ",
            d.display().to_string().rsplit("fixtures/").next().unwrap_or(""),
            bad.len()
        );
        failures.extend(bad.into_iter().take(5));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Folded weights add up to the roots' inclusive time; top totals agree
/// with the exit records (the durations the graph prints).
#[test]
fn folded_and_top_agree_with_the_graph() {
    for d in fixtures() {
        let t = load(&d);
        let ev = GraphEvents::new(&t.trace.events, trbox::abi::Abi::new(Endian::Little, t.trace.long_size()));
        let mut per_func: std::collections::BTreeMap<String, (u64, u64)> = Default::default();
        // The per-task stacks need the records in time order across CPUs
        // (tasks migrate).
        let mut all: Vec<(u64, usize, &Vec<u8>)> = Vec::new();
        for (c, recs) in t.cpus.iter().enumerate() {
            all.extend(recs.iter().map(|(ts, p)| (*ts, c, p)));
        }
        all.sort_by_key(|x| (x.0, x.1));
        let mut s = GraphStats::new(&t.trace.events, trbox::abi::Abi::new(Endian::Little, t.trace.long_size()), true);
        for (_, _, p) in &all {
            s.record(p, &t.trace.cmdlines);
            if let Some(GraphRec::Exit { func, calltime, rettime, .. }) = ev.decode(p) {
                let name = t.trace.symbols.lookup(func).map_or(format!("0x{func:x}"), |s| s.name.to_string());
                let e = per_func.entry(name).or_default();
                e.0 += 1;
                e.1 += rettime - calltime;
            }
        }
        let folded = s.folded(Some(&t.trace.symbols));
        let sum: u64 = folded.iter().map(|x| x.1).sum();
        assert_eq!(sum, s.roots_total(), "{}", d.display());
        assert!(s.calls() > 50, "{}: {} calls", d.display(), s.calls());
        let mut text = String::new();
        s.write_folded(&mut text, Some(&t.trace.symbols)).unwrap();
        let parsed: u64 = text.lines().map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap()).sum();
        assert_eq!(parsed, s.roots_total());
        let rows = s.functions(Some(&t.trace.symbols), TopBy::Total);
        assert_eq!(rows.len(), per_func.len());
        for r in &rows {
            let (count, total) = per_func[&r.name];
            assert_eq!((r.stat.count, r.stat.total), (count, total), "{} {}", d.display(), r.name);
            assert!(r.stat.self_ <= r.stat.total && r.stat.max <= r.stat.total);
        }
        // Self times summed per function equal the folded weights of the
        // paths ending in it.
        let self_sum: u64 = rows.iter().map(|r| r.stat.self_).sum();
        assert_eq!(self_sum, sum, "{}", d.display());
        let mut top = String::new();
        s.write_top(&mut top, Some(&t.trace.symbols), 10, TopBy::Total).unwrap();
        println!("{}\n{top}", d.display());
    }
}

/// Real records cut short, corrupted and shuffled: the renderer and the
/// aggregations never panic.
#[test]
fn damaged_fixture_records_never_panic() {
    let d = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/armv7/function_graph");
    let t = load(&d);
    let recs: Vec<&[u8]> = t.cpus.iter().flatten().take(600).map(|(_, p)| p.as_slice()).collect();
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut rnd = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for round in 0..4 {
        let mut g = renderer(&t).with_opts(GraphOpts {
            irqs: round % 2 == 0,
            proc_: round > 1,
            abstime: round > 1,
            ..GraphOpts::default()
        });
        let mut s = GraphStats::new(&t.trace.events, trbox::abi::Abi::new(Endian::Little, t.trace.long_size()), true);
        let mut out = String::new();
        let damaged: Vec<Vec<u8>> = recs
            .iter()
            .map(|p| {
                let mut v = p.to_vec();
                match rnd() % 4 {
                    0 => v.truncate((rnd() % (v.len() as u64 + 1)) as usize),
                    1 => {
                        for _ in 0..3 {
                            let i = (rnd() % v.len().max(1) as u64) as usize;
                            if let Some(b) = v.get_mut(i) {
                                *b = rnd() as u8;
                            }
                        }
                    }
                    _ => {}
                }
                v
            })
            .collect();
        for (i, p) in damaged.iter().enumerate() {
            let next = damaged.get(i + 1).map(|n| (0u64, n.as_slice()));
            let _ = g.record(&mut out, (rnd() % 3) as u32, i as u64, p, next);
            s.record(p, &t.trace.cmdlines);
        }
        let sum = s.folded(Some(&t.trace.symbols)).iter().fold(0u64, |a, x| a.saturating_add(x.1));
        assert_eq!(sum, s.roots_total());
    }
}
