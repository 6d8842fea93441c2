//! The library's pull reader (`sys::read::Reader`) on recorded files: the
//! metadata, the kernel's text of each record (tr-cat's of a trace.dat,
//! the kernel's own `trace` file of a tracefs copy), a choice of buffer
//! and CPUs, and a cut file's problems as values.

use super::common;
use std::path::Path;
use trbox::format::Value;
use trbox::page::PageErrorKind;
use trbox::sys::read::{Entry, ReadOptions, Reader};

fn open(file: &str, o: &ReadOptions) -> Reader {
    Reader::trace_dat(Path::new(file), o).unwrap_or_else(|e| panic!("{file}: {e}"))
}

#[test]
fn reader_metadata_of_a_trace_dat() {
    let r = open("tests/data/tracedat/v6-inst.dat", &ReadOptions::default());
    let s = r.session();
    assert_eq!(s.cpus(), 2);
    assert_eq!(s.clock(), "local");
    assert_eq!(s.page_size(), 4096);
    assert_eq!(s.buffers(), ["", "inst1"], "both buffers hold data: both are read");
    assert!(s.events().get_by_name("sched", "sched_switch").is_some());
    assert_eq!(s.comm(0), "<idle>");
}

/// `kernel` reads a trace as of another release, in place of the one the
/// file names (tr-cat's `--kernel`), for this reader only: a reader opened
/// next, without it, sees the file's own again (no process-wide state).
#[test]
fn reader_kernel_option_is_per_reader() {
    let file = "tests/data/tracedat/v6-inst.dat";
    let own = open(file, &ReadOptions::default()).session().kernel().version;
    let o = ReadOptions { kernel: Some("4.19.0".into()), ..Default::default() };
    let k = open(file, &o).session().kernel().clone();
    assert_eq!(k.version, Some((4, 19)));
    assert!(k.source.contains("--kernel 4.19.0"), "{}", k.source);
    assert_ne!(own, Some((4, 19)), "pick a release the file is not of");
    assert_eq!(open(file, &ReadOptions::default()).session().kernel().version, own);
}

/// Every record's line is tr-cat's line of it, in the same order, for
/// each buffer alone (tr-cat puts trace-cmd's buffer label before the
/// lines of several).
#[test]
fn reader_text_is_tr_cat_text() {
    for (file, buffer) in [
        ("tests/data/tracedat/v6-inst.dat", ""),
        ("tests/data/tracedat/v6-inst.dat", "inst1"),
        ("tests/data/tracedat/lisa-arm64-sched-load.dat", ""),
        ("tests/data/tracedat/v7-3.4-record.dat", "t34"),
    ] {
        let mut r = open(file, &ReadOptions { buffer: Some(buffer.into()), ..Default::default() });
        let (session, mut entries) = r.split();
        let mut text = session.text();
        let (mut ours, mut line, mut body) = (String::new(), String::new(), String::new());
        while let Some(e) = entries.next_entry() {
            let Entry::Event(ev) = e else { panic!("{file}: {e:?}") };
            line.clear();
            text.line(&ev, &mut line);
            ours.push_str(&line);
            // The body is the line after its prefix (`… TIME: `).
            body.clear();
            text.body(&ev, &mut body);
            let at = line.len() - body.len() - 1;
            assert!(
                line.get(at..) == Some(&format!("{body}\n")) && line.get(..at).is_some_and(|p| p.ends_with(": ")),
                "{file}: body {body:?} of line {line:?}"
            );
        }
        let o = common::run(&["tr-cat", file, "-B", buffer]);
        assert!(o.status.success(), "tr-cat {file} -B '{buffer}': {}", String::from_utf8_lossy(&o.stderr));
        let theirs = String::from_utf8_lossy(&o.stdout);
        assert!(ours.lines().count() > 100, "{file} '{buffer}': {} lines", ours.lines().count());
        assert!(ours == theirs, "{file} buffer '{buffer}': the reader's text is not tr-cat's");
    }
}

/// Fields by name with their types; the CPUs asked for and no other.
#[test]
fn reader_fields_and_cpus() {
    let o = ReadOptions { cpus: Some(vec![1]), buffer: Some(String::new()), ..Default::default() };
    let mut r = open("tests/data/tracedat/v6-inst.dat", &o);
    let mut switches = 0;
    while let Some(e) = r.next_entry() {
        let Entry::Event(ev) = e else { continue };
        assert_eq!(ev.cpu(), 1);
        if ev.name() != "sched_switch" {
            continue;
        }
        switches += 1;
        assert_eq!(ev.system(), "sched");
        let Some(Value::Str(comm)) = ev.field("prev_comm") else { panic!("prev_comm: {:?}", ev.field("prev_comm")) };
        let Some(Value::Signed(pid)) = ev.field("prev_pid") else { panic!("prev_pid: {:?}", ev.field("prev_pid")) };
        // The writer of a switch is the task switched out.
        assert_eq!(pid, i64::from(ev.pid()));
        assert!(!comm.is_empty() && !comm.contains(&0));
        assert!(matches!(ev.field("common_pid"), Some(Value::Signed(p)) if p == pid));
        assert_eq!(ev.field("no_such_field"), None);
        let names: Vec<&str> = ev.fields().map(|(n, _)| n).collect();
        assert_eq!(names.first(), Some(&"prev_comm"));
    }
    assert!(switches > 0, "no sched_switch on cpu1");
    assert_eq!(r.lost(), (0, 0));
    assert!(r.problems().is_empty());
}

/// A file cut in the middle of its pages: what can be read is, and the
/// cut comes as a value, not text on stderr.
#[test]
fn reader_cut_file_problems_are_values() {
    let whole = std::fs::read("tests/data/tracedat/v6-inst.dat").expect("fixture");
    let dir = std::env::temp_dir().join(format!("trbox-reader-cut-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let cut = dir.join("cut.dat");
    // (The last 6000 bytes: inside the last CPU's pages.)
    std::fs::write(&cut, &whole[..whole.len() - 6000]).expect("write the cut file");
    let r = Reader::trace_dat(&cut, &ReadOptions::default());
    let mut r = match r {
        Ok(r) => r,
        Err(e) => panic!("a cut file opens (its pages up to the cut are read): {e}"),
    };
    let (mut events, mut damaged) = (0, 0);
    while let Some(e) = r.next_entry() {
        match e {
            Entry::Event(_) => events += 1,
            Entry::Damaged { error, .. } => {
                assert_eq!(error.kind, PageErrorKind::Truncated, "{error}");
                damaged += 1
            }
            _ => {}
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(events > 0, "records before the cut");
    assert!(damaged > 0 || !r.problems().is_empty(), "the cut is told: {damaged} entries, no problem counted");
}

/// A copy of a tracefs tree: the reader's text of its raw pages is the
/// kernel's own `trace` file of the same buffer (without its `#` header),
/// on a 32-bit and a 64-bit board.
#[test]
fn reader_tree_text_is_the_kernels() {
    for dir in ["tests/fixtures/armv7-7.2/events", "tests/fixtures/aarch64-6.12/events"] {
        let mut r = Reader::tree(Path::new(dir), &ReadOptions::default()).unwrap_or_else(|e| panic!("{dir}: {e}"));
        assert_eq!(r.session().cpus(), 2, "{dir}");
        let (session, mut entries) = r.split();
        let mut text = session.text();
        let mut ours = String::new();
        while let Some(e) = entries.next_entry() {
            match e {
                Entry::Event(ev) => text.line(&ev, &mut ours),
                other => panic!("{dir}: {other:?}"),
            }
        }
        let o = common::run(&["tr-cat", "-T", dir]);
        assert!(o.status.success(), "tr-cat -T {dir}: {}", String::from_utf8_lossy(&o.stderr));
        let theirs: String = String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| format!("{l}\n"))
            .collect();
        assert!(ours.lines().count() > 100, "{dir}: {} lines", ours.lines().count());
        assert!(ours == theirs, "{dir}: the reader's text is not the kernel's");
    }
}

/// The live tracefs is no copy: reading it would consume its buffers.
#[test]
fn reader_tree_refuses_the_live_tracefs() {
    let live = Path::new(common::LIVE);
    if !live.join("trace_pipe").exists() {
        return common::skip_absent("no tracefs mounted at /sys/kernel/tracing");
    }
    match Reader::tree(live, &ReadOptions::default()) {
        Err(e) => assert!(e.to_string().contains("the live tracefs"), "{e}"),
        Ok(_) => panic!("the live tracefs read as a copy"),
    }
}

/// A copy's instance is named as a trace.dat's buffer is: `""` is the
/// top buffer, a name the copy has no `instances/NAME` of is an error.
#[test]
fn reader_tree_buffer_names_an_instance() {
    let dir = Path::new("tests/fixtures/armv7-7.2/events");
    let count = |o: &ReadOptions| {
        let mut r = Reader::tree(dir, o).unwrap_or_else(|e| panic!("{e}"));
        std::iter::from_fn(|| r.next_entry().map(|_| ())).count()
    };
    let top = ReadOptions { buffer: Some(String::new()), ..Default::default() };
    assert_eq!(count(&top), count(&ReadOptions::default()));
    let absent = ReadOptions { buffer: Some("absent".into()), ..Default::default() };
    assert!(matches!(Reader::tree(dir, &absent), Err(trbox::sys::Error::NoInstance { .. })));
}

/// The bodies (after `EVENT: `) of the kernel's `trace` lines of `event`
/// in tracefs copy `dir`, sorted.
fn kernel_bodies(dir: &str, event: &str) -> Vec<String> {
    let text = std::fs::read_to_string(format!("{dir}/trace")).unwrap_or_else(|e| panic!("{dir}/trace: {e}"));
    let tag = format!(" {event}: ");
    let mut v: Vec<String> =
        text.lines().filter(|l| !l.starts_with('#')).filter_map(|l| Some(l.split_once(&tag)?.1.to_string())).collect();
    v.sort();
    v
}

/// `sys_enter`'s `args` (`unsigned long args[6]`) is an array of integers
/// of the board's long, unsigned, in the record's byte order: each element
/// is the record's bytes at its place, and the kernel's text of the same
/// records (`NR %ld (%lx, …)`) is made of them, on a 32-bit and two 64-bit
/// boards.
#[test]
fn reader_integer_array_is_the_records_and_the_kernels() {
    for (dir, long) in [
        ("tests/fixtures/armv7/lat_tracepoints", 4),
        ("tests/fixtures/aarch64/lat_tracepoints", 8),
        ("tests/fixtures/x86_64-6.12/lat_tracepoints", 8),
    ] {
        let mut r = Reader::tree(Path::new(dir), &ReadOptions::default()).unwrap_or_else(|e| panic!("{dir}: {e}"));
        let at = r.session().events().get_by_name("raw_syscalls", "sys_enter").expect("sys_enter's format");
        let at = at.field("args").expect("args").offset as usize;
        let mut ours = Vec::new();
        while let Some(e) = r.next_entry() {
            let Entry::Event(ev) = e else { continue };
            if ev.name() != "sys_enter" {
                continue;
            }
            let Some(Value::Ints(args)) = ev.field("args") else { panic!("{dir}: args {:?}", ev.field("args")) };
            assert_eq!((args.elem_size(), args.signed(), args.len()), (long, false, 6), "{dir}");
            assert_eq!(args.endian(), trbox::abi::Endian::Little, "{dir}: the boards are little endian");
            let size = long as usize;
            for i in 0..6 {
                let b = &ev.payload()[at + i * size..at + (i + 1) * size];
                let word = if size == 4 {
                    u64::from(u32::from_le_bytes(b.try_into().unwrap()))
                } else {
                    u64::from_le_bytes(b.try_into().unwrap())
                };
                assert_eq!(args.get(i), Some(word as i64), "{dir}: args[{i}]");
            }
            assert_eq!(args.get(6), None);
            assert_eq!(args.iter().map(|v| v as u64).collect::<Vec<_>>(), args.uints().collect::<Vec<_>>());
            let Some(Value::Signed(nr)) = ev.field("id") else { panic!("{dir}: id") };
            let hex: Vec<String> = args.uints().map(|v| format!("{v:x}")).collect();
            ours.push(format!("NR {nr} ({})", hex.join(", ")));
        }
        ours.sort();
        assert!(ours.len() >= 300, "{dir}: {} sys_enter records", ours.len());
        assert_eq!(ours, kernel_bodies(dir, "sys_enter"), "{dir}: sys_enter's args are not the kernel's");
    }
}

/// An address field's symbol (`Event::symbol`, `Session::symbol`) is what
/// the kernel prints for it: kmalloc's `call_site=%pS` (name, offset and
/// size) and hrtimer_start's `function=%ps` (the name), in the boards'
/// own `trace` text, from each copy's own kallsyms.
#[test]
fn reader_symbols_are_the_kernels() {
    // The word after `NAME=` in each body, sorted.
    let words = |bodies: Vec<String>, name: &str| -> Vec<String> {
        let tag = format!("{name}=");
        let mut v: Vec<String> =
            bodies.iter().filter_map(|b| Some(b.split(' ').find_map(|w| w.strip_prefix(&tag))?.to_string())).collect();
        v.sort();
        v
    };
    for dir in ["tests/fixtures/armv7/events", "tests/fixtures/aarch64/events", "tests/fixtures/x86_64/events"] {
        let mut r = Reader::tree(Path::new(dir), &ReadOptions::default()).unwrap_or_else(|e| panic!("{dir}: {e}"));
        let (session, mut entries) = r.split();
        let (mut kmalloc, mut hrtimer) = (Vec::new(), Vec::new());
        while let Some(e) = entries.next_entry() {
            let Entry::Event(ev) = e else { continue };
            let (field, list) = match ev.name() {
                "kmalloc" => ("call_site", &mut kmalloc),
                "hrtimer_start" => ("function", &mut hrtimer),
                _ => continue,
            };
            let sym = ev.symbol(field).unwrap_or_else(|| panic!("{dir}: no symbol for {field} of {ev:?}"));
            let Some(Value::Unsigned(addr)) = ev.field(field) else { panic!("{dir}: {field}") };
            assert_eq!(session.symbol(addr), Some(sym), "{dir}: {addr:#x}");
            list.push(if field == "call_site" { format!("{sym:#}") } else { format!("{sym}") });
        }
        kmalloc.sort();
        hrtimer.sort();
        assert!(
            kmalloc.len() > 50 && hrtimer.len() > 50,
            "{dir}: {} kmalloc, {} hrtimer_start",
            kmalloc.len(),
            hrtimer.len()
        );
        assert_eq!(kmalloc, words(kernel_bodies(dir, "kmalloc"), "call_site"), "{dir}: kmalloc's call_site (%pS)");
        assert_eq!(
            hrtimer,
            words(kernel_bodies(dir, "hrtimer_start"), "function"),
            "{dir}: hrtimer_start's function (%ps)"
        );
        // An address below every symbol.
        assert_eq!(session.symbol(0), None, "{dir}");
    }
}

/// The symbols of a trace.dat are its own kallsyms: hrtimer_start's
/// `function=%ps` as trace-cmd 3.4's `report` prints it, record by record;
/// none in a file whose kallsyms is empty.
#[test]
fn reader_symbols_of_a_trace_dat_are_trace_cmds() {
    let file = "tests/data/tracedat/v7-3.4-record.dat";
    let mut r = open(file, &ReadOptions { buffer: Some("t34".into()), ..Default::default() });
    let mut ours = Vec::new();
    while let Some(e) = r.next_entry() {
        let Entry::Event(ev) = e else { continue };
        assert_eq!(ev.symbol("prev_comm"), None, "a string is no address");
        if ev.name() == "hrtimer_start" {
            ours.push(ev.symbol("function").map_or_else(|| "(none)".to_string(), |s| s.to_string()));
        }
    }
    let report = std::fs::read_to_string("tests/data/tracedat/v7-3.4-record.report").expect("the report");
    let theirs: Vec<String> = report
        .lines()
        .filter(|l| l.contains(" hrtimer_start: "))
        .filter_map(|l| Some(l.split(' ').find_map(|w| w.strip_prefix("function="))?.to_string()))
        .collect();
    assert!(ours.len() > 40, "{} hrtimer_start records", ours.len());
    assert_eq!(ours, theirs, "{file}: hrtimer_start's function is not trace-cmd's");

    // LISA's file, its kallsyms emptied: no field of any record, no
    // address, has a symbol.
    let mut r = open("tests/data/tracedat/lisa-arm64-sched-load.dat", &ReadOptions::default());
    let mut fields = 0;
    while let Some(e) = r.next_entry() {
        let Entry::Event(ev) = e else { continue };
        for (name, _) in ev.fields() {
            assert_eq!(ev.symbol(name), None, "{ev:?} {name}");
            fields += 1;
        }
    }
    assert!(fields > 100, "{fields} fields");
    assert_eq!(r.session().symbol(0xffff_0000_0808_0000), None);
}

/// The whole text of `r` in the function_graph layout.
fn graph_text(mut r: Reader) -> String {
    let mut g = r.graph_text();
    let mut text = String::new();
    while g.next_text(&mut text) {}
    text
}

/// The function_graph layout of a read is tr-cat's text of the same
/// trace: of every board's graph copies (`tr-cat --raw -T`; leaves folded,
/// irqs, other events as comments, depth limits), and of trace.dat files
/// made of two of them (`tr-cat FILE`: the layout from the first funcgraph
/// record on, as a trace.dat names no tracer).
#[test]
fn reader_graph_text_is_tr_cats() {
    let fx = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut trees: Vec<_> = std::fs::read_dir(&fx)
        .unwrap()
        .flatten()
        .flat_map(|b| ["function_graph", "function_graph_depth", "graph_syscalls"].map(|s| b.path().join(s)))
        .filter(|d| d.join("current_tracer").exists())
        .collect();
    trees.sort();
    assert!(trees.len() >= 30, "{} graph copies", trees.len());
    let mut folded = 0;
    for dir in &trees {
        let d = dir.to_str().unwrap();
        let ours = graph_text(Reader::tree(dir, &ReadOptions::default()).unwrap_or_else(|e| panic!("{d}: {e}")));
        let o = common::run(&["tr-cat", "--raw", "-T", d]);
        assert!(o.status.success(), "tr-cat --raw -T {d}: {}", common::stderr(&o));
        assert!(ours == common::stdout(&o), "{d}: the reader's graph text is not tr-cat's");
        folded += ours.lines().filter(|l| l.ends_with(");") && !l.contains("/*")).count();
    }
    assert!(folded > 1000, "{folded} leaf lines");
    let tmp = common::TempDir::new("reader-graph");
    for t in ["x86_64-6.12/graph_syscalls", "aarch64-6.12/function_graph"] {
        let dir = fx.join(t);
        let file = tmp.path().join(format!("{}.dat", t.replace('/', "-")));
        common::dat::build(&dir, &[common::dat::Part { dir: &dir, min_events: 1, lost_every: None }], &file);
        let f = file.to_str().unwrap();
        let ours = graph_text(open(f, &ReadOptions::default()));
        let o = common::run(&["tr-cat", f]);
        assert!(o.status.success(), "tr-cat {f}: {}", common::stderr(&o));
        assert!(ours.contains("|  "), "{t}: no graph line");
        assert!(ours == common::stdout(&o), "{t}: the reader's graph text of a trace.dat is not tr-cat's");
    }
}
