//! print-fmt rendering against hand-made records, with the exact text the
//! kernel prints for those values (derived from lib/vsprintf.c and
//! kernel/trace/trace_output.c). Format files are copies of this machine's
//! (x86_64, 6.18) in tests/data/printfmt/formats.

use trbox::abi::Endian;
use trbox::format::EventFormat;
use trbox::kallsyms::Kallsyms;
use trbox::printfmt::{vsprintf, Ctx, Program};
use trbox::printk::PrintkFormats;

fn load(name: &str) -> EventFormat {
    let p = format!("{}/tests/data/printfmt/formats/{name}.format", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"));
    let system = name.split('_').next().unwrap();
    EventFormat::parse(&text, system, 8).unwrap_or_else(|e| panic!("{p}: {e:?}"))
}

/// A record for `ev`: fixed part zeroed, values set by field name.
struct Rec<'a> {
    ev: &'a EventFormat,
    b: Vec<u8>,
}

impl<'a> Rec<'a> {
    fn new(ev: &'a EventFormat) -> Self {
        let end = ev.fields.iter().chain(ev.common.iter()).map(|f| f.offset + f.size).max().unwrap_or(8) as usize;
        let mut b = vec![0u8; end];
        b[..2].copy_from_slice(&(ev.id as u16).to_le_bytes());
        Rec { ev, b }
    }
    fn off(&self, name: &str) -> (usize, usize) {
        let f = self.ev.fields.iter().find(|f| f.name == name).unwrap_or_else(|| panic!("no field {name}"));
        (f.offset as usize, f.size as usize)
    }
    fn int(mut self, name: &str, v: i64) -> Self {
        let (o, s) = self.off(name);
        self.b[o..o + s].copy_from_slice(&v.to_le_bytes()[..s]);
        self
    }
    fn bytes(mut self, name: &str, v: &[u8]) -> Self {
        let (o, _) = self.off(name);
        self.b[o..o + v.len()].copy_from_slice(v);
        self
    }
    /// Append dynamic data and point the `__data_loc` word at it.
    fn dyn_(mut self, name: &str, v: &[u8]) -> Self {
        while self.b.len() % 4 != 0 {
            self.b.push(0);
        }
        let start = self.b.len();
        self.b.extend_from_slice(v);
        let (o, _) = self.off(name);
        let w = ((v.len() as u32) << 16) | start as u32;
        self.b[o..o + 4].copy_from_slice(&w.to_le_bytes());
        self
    }
    fn rel(mut self, name: &str, v: &[u8]) -> Self {
        while self.b.len() % 4 != 0 {
            self.b.push(0);
        }
        let start = self.b.len();
        self.b.extend_from_slice(v);
        let (o, s) = self.off(name);
        let w = ((v.len() as u32) << 16) | (start - o - s) as u32;
        self.b[o..o + 4].copy_from_slice(&w.to_le_bytes());
        self
    }
}

const KALLSYMS: &str = "\
ffffffff81000000 T _stext
ffffffff81100000 T process_timeout
ffffffff81100040 t __kmalloc_caller
ffffffff81100200 T hrtimer_wakeup
ffffffff81100300 T vmstat_update
ffffffff81100400 T do_sys_openat2
ffffffff82000000 T _etext
ffffffffc0000000 t mod_fn\t[mymod]
ffffffffc0000100 t mod_fn2\t[mymod]
";

const PRINTK: &str = "0xffffffff82800000 : \"Start scheduler-tick\"\n\
0xffffffff82800100 : \"%d %s %llx %c [%5.2s] [%-4d] %pS %lu\\n\"\n\
0xffffffff82800200 : \"say \\\"hi\\\"\\tnow\\n\"\n";

fn render(ev: &EventFormat, rec: &[u8]) -> String {
    let ks = Kallsyms::parse(KALLSYMS.as_bytes());
    let pk = PrintkFormats::parse(PRINTK);
    let ctx = Ctx { abi: trbox::abi::Abi::new(Endian::Little, 8), syms: Some(&ks), strings: Some(&pk) };
    let p = Program::compile(ev, 8);
    assert!(p.fallback_reason().is_none(), "{}: {:?} at {:?}", ev.name, p.fallback_reason(), p.fallback_context());
    let mut s = String::new();
    p.render(&mut s, rec, &ctx).unwrap();
    s
}

fn comm(s: &str) -> [u8; 16] {
    let mut c = [0u8; 16];
    c[..s.len()].copy_from_slice(s.as_bytes());
    c
}

#[test]
fn sched_switch() {
    let ev = load("sched_sched_switch");
    let r = |state: i64| {
        Rec::new(&ev)
            .bytes("prev_comm", &comm("bash"))
            .int("prev_pid", 4324)
            .int("prev_prio", 120)
            .int("prev_state", state)
            .bytes("next_comm", &comm("swapper/0"))
            .int("next_pid", 0)
            .int("next_prio", 120)
            .b
    };
    assert_eq!(
        render(&ev, &r(1)),
        "prev_comm=bash prev_pid=4324 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120"
    );
    assert_eq!(
        render(&ev, &r(0)),
        "prev_comm=bash prev_pid=4324 prev_prio=120 prev_state=R ==> next_comm=swapper/0 next_pid=0 next_prio=120"
    );
    assert_eq!(
        render(&ev, &r(0x100)),
        "prev_comm=bash prev_pid=4324 prev_prio=120 prev_state=R+ ==> next_comm=swapper/0 next_pid=0 next_prio=120"
    );
    assert_eq!(
        render(&ev, &r(0x82)),
        "prev_comm=bash prev_pid=4324 prev_prio=120 prev_state=D|I ==> next_comm=swapper/0 next_pid=0 next_prio=120"
    );
}

#[test]
fn sched_wakeup_zero_padded() {
    let ev = load("sched_sched_wakeup");
    let r = Rec::new(&ev).bytes("comm", &comm("kworker/0:1")).int("pid", 12).int("prio", 120).int("target_cpu", 3).b;
    assert_eq!(render(&ev, &r), "comm=kworker/0:1 pid=12 prio=120 target_cpu=003");
}

#[test]
fn irq_and_softirq() {
    let ev = load("irq_irq_handler_entry");
    let r = Rec::new(&ev).int("irq", 5).dyn_("name", b"eth0\0").b;
    assert_eq!(render(&ev, &r), "irq=5 name=eth0");
    let ev = load("irq_softirq_entry");
    assert_eq!(render(&ev, &Rec::new(&ev).int("vec", 3).b), "vec=3 [action=NET_RX]");
    assert_eq!(render(&ev, &Rec::new(&ev).int("vec", 12).b), "vec=12 [action=0xc]");
}

#[test]
fn timers() {
    let ev = load("timer_timer_start");
    let r = Rec::new(&ev)
        .int("timer", 0xffff888012345678u64 as i64)
        .int("function", 0xffffffff81100000u64 as i64)
        .int("expires", 4294892296)
        .int("now", 4294892196)
        .int("bucket_expiry", 4294892300)
        .int("flags", 0x0064_0001)
        .b;
    assert_eq!(render(&ev, &r), "timer=ffff888012345678 function=process_timeout expires=4294892296 [timeout=100] bucket_expiry=4294892300 cpu=1 idx=1 flags=M|I");
    let ev = load("timer_hrtimer_start");
    let r = Rec::new(&ev)
        .int("hrtimer", 0xffffc90000123e38u64 as i64)
        .int("function", 0xffffffff81100200u64 as i64)
        .int("expires", 1_000_000_000)
        .int("softexpires", 999_950_000)
        .int("mode", 1)
        .int("was_armed", 0)
        .b;
    assert_eq!(render(&ev, &r), "hrtimer=ffffc90000123e38 function=hrtimer_wakeup expires=1000000000 softexpires=999950000 mode=REL was_armed=0");
}

struct Version(Option<(u32, u32)>);
impl trbox::printfmt::KernelInfo for Version {
    fn kernel_version(&self) -> Option<(u32, u32)> {
        self.0
    }
}

/// The syscall tracer prints these itself (kernel/trace/trace_syscalls.c),
/// not through the print fmt, and without `name: `: 6.17+ `arg: %lu` below
/// 10, else `arg: 0x%lx`; before 6.17 `arg: %lx`, which is also what an
/// unknown version gets (the kernels boards run today).
#[test]
fn syscalls() {
    let ev = load("syscalls_sys_enter_openat");
    assert!(!Program::compile(&ev, 8).name_prefix());
    let r = Rec::new(&ev).int("dfd", 0xffffff9c).int("filename", 0x7ffc12345678).int("flags", 0x80000).int("mode", 0).b;
    let ks = Kallsyms::parse(KALLSYMS.as_bytes());
    let ctx = Ctx { abi: trbox::abi::Abi::new(Endian::Little, 8), syms: Some(&ks), strings: None };
    let with = |v| {
        let mut s = String::new();
        Program::compile_with(&ev, 8, &Version(v)).render(&mut s, &r, &ctx).unwrap();
        s
    };
    assert_eq!(with(Some((6, 18))), "sys_openat(dfd: 0xffffff9c, filename: 0x7ffc12345678, flags: 0x80000, mode: 0)");
    assert_eq!(with(Some((6, 17))), with(Some((6, 18))));
    assert_eq!(with(Some((6, 1))), "sys_openat(dfd: ffffff9c, filename: 7ffc12345678, flags: 80000, mode: 0)");
    assert_eq!(with(None), with(Some((6, 1))));
    assert_eq!(render(&ev, &r), with(None));
    let ev = load("syscalls_sys_exit_read");
    assert_eq!(render(&ev, &Rec::new(&ev).int("ret", -11).b), "sys_read -> 0xfffffffffffffff5");
    assert_eq!(render(&ev, &Rec::new(&ev).int("ret", 832).b), "sys_read -> 0x340");
}

/// 6.19+ (7.2's trace_syscalls.c, `print_syscall_enter()` and
/// `sys_enter_openat_print()`): the `__ARG_val` copies of user memory print
/// after their pointer, never as arguments; openat names its flags (values
/// from the print fmt, O_TMPFILE first, leftovers in hex) and shows the mode
/// only when creating; a buffer prints its bytes, `, ...` when the copy is
/// shorter than the size argument, and its printable ASCII. Formats from
/// the aarch64:7.2 board (tests/fixtures/aarch64-7.2/events).
#[test]
fn syscalls_with_user_data() {
    let ev = load("syscalls_sys_enter_openat-7.2");
    let ctx = Ctx { abi: trbox::abi::Abi::new(Endian::Little, 8), syms: None, strings: None };
    let open = |flags: i64, mode: i64, name: &[u8], v: Option<(u32, u32)>| {
        let r = Rec::new(&ev)
            .int("dfd", -100)
            .int("filename", 281474457153403)
            .int("flags", flags)
            .int("mode", mode)
            .dyn_("__filename_val", name)
            .b;
        let mut s = String::new();
        Program::compile_with(&ev, 8, &Version(v)).render(&mut s, &r, &ctx).unwrap();
        s
    };
    let head = "sys_openat(dfd: 18446744073709551516, filename: 281474457153403";
    let v = Some((7, 2));
    assert_eq!(open(0, 0, b"/proc/version\0", v), format!("{head} \"/proc/version\", flags: O_RDONLY)"));
    assert_eq!(
        open(0x241, 0o666, b"/dev/null\0", v),
        format!("{head} \"/dev/null\", flags: O_WRONLY|O_CREAT|O_TRUNC, mode: 0666)")
    );
    assert_eq!(open(0x80000, 0o644, b"x\0", v), format!("{head} \"x\", flags: O_RDONLY|O_CLOEXEC)"));
    // O_TMPFILE (__O_TMPFILE | O_DIRECTORY) before the table; then the mode.
    assert_eq!(
        open(0x400000 | 0x4000 | 2, 0o600, b"/tmp\0", v),
        format!("{head} \"/tmp\", flags: O_TMPFILE|O_RDWR, mode: 0600)")
    );
    // O_PATH is in no table: hex; a copy that faulted is empty.
    assert_eq!(open(0x200000, 0, b"", v), format!("{head} \"\", flags: O_RDONLY|0x200000)"));
    // The fields say 6.19+ whatever the version (or none) says.
    assert_eq!(open(0, 0, b"/a\0", None), open(0, 0, b"/a\0", Some((6, 1))));
    assert_eq!(open(0, 0, b"/a\0", None), format!("{head} \"/a\", flags: O_RDONLY)"));

    let ev = load("syscalls_sys_enter_write-7.2");
    let write = |data: &[u8], count: i64| {
        let r = Rec::new(&ev).int("fd", 1).int("buf", 0x59e04c0).int("count", count).dyn_("__buf_val", data).b;
        let mut s = String::new();
        Program::compile(&ev, 8).render(&mut s, &r, &ctx).unwrap();
        s
    };
    assert_eq!(write(b"\x01A\n", 3), "sys_write(fd: 1, buf: 0x59e04c0 (01:41:0a) \".A.\", count: 3)");
    assert_eq!(write(b"ab", 64), "sys_write(fd: 1, buf: 0x59e04c0 (61:62, ...) \"ab\"..., count: 0x40)");
    // Nothing printable: the bytes only.
    assert_eq!(write(&[0, 1], 2), "sys_write(fd: 1, buf: 0x59e04c0 (00:01), count: 2)");
    assert_eq!(write(b"", 5), "sys_write(fd: 1, buf: 0x59e04c0 (, ...), count: 5)");
}

/// trace_marker_raw records (`trace_raw_data()` in trace_output.c): no
/// event name, `# %x buf:` of the id, then ` %02x` for every byte of the
/// record after the id — the record's whole length, so padding too.
#[test]
fn raw_data() {
    let ev = load("ftrace_raw_data");
    let p = Program::compile(&ev, 8);
    assert!(!p.name_prefix() && !p.needs_symbols() && !p.needs_strings());
    let rec = |id: u32, data: &[u8]| {
        let mut b = Rec::new(&ev).int("id", i64::from(id)).b;
        b.extend_from_slice(data);
        b
    };
    assert_eq!(render(&ev, &rec(0x1001, &[1, 0, 0, 0])), "# 1001 buf: 01 00 00 00");
    assert_eq!(render(&ev, &rec(0xdeadbeef, &[])), "# deadbeef buf:");
    assert_eq!(render(&ev, &rec(7, &[0xff, 0x10, 0xa])), "# 7 buf: ff 10 0a");
    // A record cut before its id.
    assert_eq!(render(&ev, &rec(1, &[])[..9]), "# <OVERFLOW>");
}

#[test]
fn kmalloc_symbol_offset_and_gfp() {
    let ev = load("kmem_kmalloc");
    let r = Rec::new(&ev)
        .int("call_site", 0xffffffff81100085u64 as i64)
        .int("ptr", 0xffff888100001000u64 as i64)
        .int("bytes_req", 64)
        .int("bytes_alloc", 64)
        .int("gfp_flags", 0xcc0)
        .int("node", -1)
        .b;
    assert_eq!(
        render(&ev, &r),
        "call_site=__kmalloc_caller+0x45/0x1c0 ptr=ffff888100001000 bytes_req=64 bytes_alloc=64 gfp_flags=GFP_KERNEL node=-1 accounted=false"
    );
    let r = Rec::new(&ev).int("call_site", 0xffffffffc0000110u64 as i64).int("gfp_flags", 0).b;
    let s = render(&ev, &r);
    assert!(s.starts_with("call_site=mod_fn2+0x10/0x0 [mymod] ptr=0000000000000000 bytes_req=0"), "{s}");
    assert!(s.contains("gfp_flags=none"), "{s}");
    // Not a kernel text address: printed raw.
    let r = Rec::new(&ev).int("call_site", 0x1234).b;
    assert!(render(&ev, &r).starts_with("call_site=0x1234 "));
}

#[test]
fn inet_addresses() {
    let ev = load("sock_inet_sock_set_state");
    let mut v6s = [0u8; 16];
    v6s[10] = 0xff;
    v6s[11] = 0xff;
    v6s[12..].copy_from_slice(&[10, 0, 0, 1]);
    let mut v6d = v6s;
    v6d[15] = 2;
    let r = Rec::new(&ev)
        .int("oldstate", 2)
        .int("newstate", 1)
        .int("sport", 22)
        .int("dport", 5555)
        .int("family", 2)
        .int("protocol", 6)
        .bytes("saddr", &[10, 0, 0, 1])
        .bytes("daddr", &[10, 0, 0, 2])
        .bytes("saddr_v6", &v6s)
        .bytes("daddr_v6", &v6d)
        .b;
    assert_eq!(
        render(&ev, &r),
        "family=AF_INET protocol=IPPROTO_TCP sport=22 dport=5555 saddr=10.0.0.1 daddr=10.0.0.2 saddrv6=::ffff:10.0.0.1 daddrv6=::ffff:10.0.0.2 oldstate=TCP_SYN_SENT newstate=TCP_ESTABLISHED"
    );
    let ev = load("tcp_tcp_probe");
    let mut s6 = [0u8; 28];
    s6[..2].copy_from_slice(&10u16.to_le_bytes());
    s6[2..4].copy_from_slice(&443u16.to_be_bytes());
    s6[8..24].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    let mut s4 = [0u8; 28];
    s4[..2].copy_from_slice(&2u16.to_le_bytes());
    s4[2..4].copy_from_slice(&80u16.to_be_bytes());
    s4[4..8].copy_from_slice(&[192, 168, 1, 20]);
    let r = Rec::new(&ev)
        .int("family", 10)
        .bytes("saddr", &s6)
        .bytes("daddr", &s4)
        .int("mark", 0)
        .int("snd_nxt", 0xdeadbeef)
        .int("sock_cookie", 0x2a)
        .b;
    let s = render(&ev, &r);
    assert!(s.starts_with("family=AF_INET6 src=[2001:db8::1]:443 dest=192.168.1.20:80 mark=0x0 data_len=0 snd_nxt=0xdeadbeef snd_una=0x0 "), "{s}");
    assert!(s.ends_with("sock_cookie=2a skbaddr=0000000000000000 skaddr=0000000000000000"), "{s}");
}

#[test]
fn string_pointer_via_printk_formats() {
    let ev = load("rcu_rcu_utilization");
    assert_eq!(render(&ev, &Rec::new(&ev).int("s", 0xffffffff82800000u64 as i64).b), "Start scheduler-tick");
    assert_eq!(render(&ev, &Rec::new(&ev).int("s", 0).b), "(null)");
}

#[test]
fn helpers_and_star_widths() {
    let ev = load("synthetic_helpers");
    let r = Rec::new(&ev)
        .int("n", 5)
        .int("big", -1)
        .dyn_("buf", &[0xde, 0xad, 0xbe, 0xef, 0x01])
        .dyn_("arr", &[1, 0, 0, 0, 0x10, 0, 0, 0])
        .dyn_("mask", &0x1_0000_0003u64.to_le_bytes())
        .rel("rs", b"hi\0")
        .b;
    assert_eq!(
        render(&ev, &r),
        "hex=de ad be ef 01 hs=deadbe arr={0x1,0x10} mask=00000001,00000003 n=5 w=[     5] p=[abc     ] min=5 big=18446744073709551615 neg=-5 rs=hi c=Ay"
    );
}

#[test]
fn unknown_argument_prints_marker() {
    let ev = load("kmem_mm_page_alloc");
    let p = Program::compile(&ev, 8);
    assert!(p.fallback_reason().is_none());
    assert!(!p.unknown_parts().is_empty());
    let r = Rec::new(&ev).int("pfn", 0x1234).int("order", 0).int("migratetype", 1).int("gfp_flags", 0xcc0).b;
    let mut s = String::new();
    p.render(&mut s, &r, &Ctx { abi: trbox::abi::Abi::new(Endian::Little, 8), syms: None, strings: None }).unwrap();
    assert_eq!(s, "page=<?> pfn=0x1234 order=0 migratetype=1 gfp_flags=GFP_KERNEL");
}

#[test]
fn fallback_and_truncated_records() {
    let text = "name: weird\nID: 7\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\tfield:int a;\toffset:8;\tsize:4;\tsigned:1;\n\tfield:unsigned long ip;\toffset:16;\tsize:8;\tsigned:0;\n\tfield:char name[8];\toffset:24;\tsize:8;\tsigned:0;\n\tfield:u16 v[2];\toffset:32;\tsize:4;\tsigned:0;\n\nprint fmt: \"%s\", role.word\n";
    let ev = EventFormat::parse(text, "x", 8).unwrap();
    let p = Program::compile(&ev, 8);
    assert!(p.fallback_reason().is_some());
    let mut r = vec![0u8; 36];
    r[8..12].copy_from_slice(&(-3i32).to_le_bytes());
    r[16..24].copy_from_slice(&0xffffffff81000000u64.to_le_bytes());
    r[24..27].copy_from_slice(b"abc");
    r[32..36].copy_from_slice(&[1, 0, 2, 0]);
    let ctx = Ctx { abi: trbox::abi::Abi::new(Endian::Little, 8), syms: None, strings: None };
    let mut s = String::new();
    p.render(&mut s, &r, &ctx).unwrap();
    assert_eq!(s, "a=-3 ip=0xffffffff81000000 name=abc v={0x1,0x2}");
    s.clear();
    p.render(&mut s, &r[..20], &ctx).unwrap();
    assert_eq!(s, "a=-3 ip=<OVERFLOW> name=<OVERFLOW> v=<OVERFLOW>");
    // A compiled program on a truncated record prints markers, no panic.
    let ev = load("sched_sched_switch");
    let p = Program::compile(&ev, 8);
    for n in 0..70 {
        let rec = vec![0x41u8; n];
        let mut s = String::new();
        p.render(&mut s, &rec, &ctx).unwrap();
    }
}

#[test]
fn bprint_bputs_print() {
    let ks = Kallsyms::parse(KALLSYMS.as_bytes());
    let pk = PrintkFormats::parse(PRINTK);
    let ctx = Ctx { abi: trbox::abi::Abi::new(Endian::Little, 8), syms: Some(&ks), strings: Some(&pk) };
    // "%d %s %llx %c [%5.2s] [%-4d] %pS %lu\n"
    let mut buf = Vec::new();
    buf.extend_from_slice(&(-7i32).to_le_bytes());
    buf.extend_from_slice(b"str\0");
    buf.extend_from_slice(&0x1122334455u64.to_le_bytes());
    buf.push(b'Z');
    buf.extend_from_slice(b"xyz\0");
    while buf.len() % 4 != 0 {
        buf.push(0);
    }
    buf.extend_from_slice(&42i32.to_le_bytes());
    buf.extend_from_slice(&0xffffffff81100301u64.to_le_bytes());
    buf.extend_from_slice(&99u64.to_le_bytes());
    let ev = load("ftrace_bprint");
    let mut rec = Rec::new(&ev).int("ip", 0xffffffff81100300u64 as i64).int("fmt", 0xffffffff82800100u64 as i64).b;
    rec.truncate(24);
    rec.extend_from_slice(&buf);
    let p = Program::compile(&ev, 8);
    let mut s = String::new();
    p.render(&mut s, &rec, &ctx).unwrap();
    assert_eq!(s, "vmstat_update: -7 str 1122334455 Z [   xy] [42  ] vmstat_update+0x1/0x100 99\n");
    let mut t = String::new();
    trbox::printfmt::render_ftrace_text(&mut t, &ev, &rec, &ctx).unwrap();
    assert_eq!(t, "-7 str 1122334455 Z [   xy] [42  ] vmstat_update+0x1/0x100 99\n");

    let ev = load("ftrace_bputs");
    let rec = Rec::new(&ev).int("ip", 0xffffffff81100400u64 as i64).int("str", 0xffffffff82800200u64 as i64).b;
    let mut s = String::new();
    Program::compile(&ev, 8).render(&mut s, &rec, &ctx).unwrap();
    assert_eq!(s, "do_sys_openat2: say \"hi\"\tnow\n");

    let ev = load("ftrace_print");
    let mut rec = Rec::new(&ev).int("ip", 0).b;
    rec.extend_from_slice(b"hello marker\n\0\0\0");
    let mut s = String::new();
    Program::compile(&ev, 8).render(&mut s, &rec, &ctx).unwrap();
    assert_eq!(s, "0: hello marker\n");
}

/// vsprintf corner cases, checked against the kernel's number()/string().
#[test]
fn vsprintf_semantics() {
    let ctx = Ctx { abi: trbox::abi::Abi::new(Endian::Little, 8), syms: None, strings: None };
    let fmt = |f: &str, args: &[u8]| {
        let mut s = String::new();
        vsprintf::bstr_printf(&mut s, f.as_bytes(), args, &ctx).unwrap();
        s
    };
    let i = |v: i32| v.to_le_bytes().to_vec();
    assert_eq!(fmt("%#x", &i(0)), "0x0");
    assert_eq!(fmt("%#o", &i(0)), "0");
    assert_eq!(fmt("%#o", &i(8)), "010");
    assert_eq!(fmt("%.0d", &i(0)), "0");
    assert_eq!(fmt("%05d", &i(-42)), "-0042");
    assert_eq!(fmt("%-5d|", &i(42)), "42   |");
    assert_eq!(fmt("%+d % d", &[i(5), i(5)].concat()), "+5  5");
    assert_eq!(fmt("%x", &i(-42)), "ffffffd6");
    assert_eq!(fmt("%X", &i(0xabc)), "ABC");
    assert_eq!(fmt("%#010x", &i(0x1f)), "0x0000001f");
    assert_eq!(fmt("%8.4x|", &i(0x1f)), "    001f|");
    // vbin_printf packs a char in one byte and a short 2-aligned.
    assert_eq!(fmt("%hhx %hd", &[0xff, 0, 0x00, 0x80]), "ff -32768");
    assert_eq!(fmt("%*d|%-*d|", &[i(-4), i(1), i(3), i(2)].concat()), "1   |2  |");
    assert_eq!(fmt("%.*s|", &[i(2), b"abcdef\0".to_vec()].concat()), "ab|");
    assert_eq!(fmt("%5s|%-5s|", b"ab\0cd\0"), "   ab|cd   |");
    assert_eq!(fmt("%3c|%-3c|", b"xy"), "  x|y  |");
    assert_eq!(fmt("100%%", &[]), "100%");
    assert_eq!(
        fmt("%px %p", &[0xffff8880u64.to_le_bytes(), 0u64.to_le_bytes()].concat()),
        "00000000ffff8880 0000000000000000"
    );
    assert_eq!(fmt("%lu %ld", &[u64::MAX.to_le_bytes(), u64::MAX.to_le_bytes()].concat()), "18446744073709551615 -1");
    // The short path for small widths, and the long one past it.
    assert_eq!(fmt("%5d|%3u|%05d|%02x", &[i(-3), i(12345), i(0), i(0xab)].concat()), "   -3|12345|00000|ab");
    assert_eq!(fmt("%20d|%21d", &[i(i32::MIN), i(-1)].concat()), "         -2147483648|                   -1");
    assert_eq!(fmt("%022d|%-3d|", &[i(-7), i(-7)].concat()), "-000000000000000000007|-7 |");
    // Missing arguments print a marker and stop.
    assert_eq!(fmt("a=%d b=%d", &i(1)), "a=1 b=<?>");
}

#[test]
fn hostile_nesting_does_not_overflow() {
    let mut ev = load("irq_softirq_entry");
    ev.print_fmt = format!("\"%d\", {}REC->vec{}", "(".repeat(100_000), ")".repeat(100_000));
    let p = Program::compile(&ev, 8);
    assert!(p.is_fallback());
    ev.print_fmt = format!("\"%d\", {}REC->vec", "-".repeat(100_000));
    assert!(Program::compile(&ev, 8).is_fallback());
    ev.print_fmt = format!("\"%d\", ({}REC->vec{})", "(".repeat(50), ")".repeat(50));
    assert!(!Program::compile(&ev, 8).is_fallback());
}

/// With the kernel's vmemmap_base and sizeof(struct page) supplied, the
/// page pointer of the kmem page events renders like the kernel's.
#[test]
fn kernel_info_resolves_vmemmap() {
    struct Info;
    impl trbox::printfmt::KernelInfo for Info {
        fn variable(&self, name: &str) -> Option<u64> {
            (name == "vmemmap_base").then_some(0xffffea0000000000)
        }
        fn sizeof_struct(&self, name: &str) -> Option<u32> {
            (name == "page").then_some(64)
        }
        fn enum_value(&self, name: &str) -> Option<i64> {
            (name == "I_DIRTY_SYNC").then_some(16)
        }
    }
    let ev = load("kmem_mm_page_alloc");
    let p = Program::compile_with(&ev, 8, &Info);
    assert!(p.unknown_parts().is_empty(), "{:?}", p.unknown_parts());
    let r = Rec::new(&ev).int("pfn", 0x296ce6).int("order", 0).int("migratetype", 1).int("gfp_flags", 0xcc0).b;
    let mut s = String::new();
    p.render(&mut s, &r, &Ctx { abi: trbox::abi::Abi::new(Endian::Little, 8), syms: None, strings: None }).unwrap();
    assert_eq!(s, "page=ffffea000a5b3980 pfn=0x296ce6 order=0 migratetype=1 gfp_flags=GFP_KERNEL");
    let wb = load("writeback_writeback_dirty_inode_start");
    let p2 = Program::compile_with(&wb, 8, &Info);
    let mut t = String::new();
    p2.render(
        &mut t,
        &Rec::new(&wb).int("state", 16).int("flags", 0x30).b,
        &Ctx { abi: trbox::abi::Abi::new(Endian::Little, 8), syms: None, strings: None },
    )
    .unwrap();
    assert!(t.ends_with("state=I_DIRTY_SYNC flags=I_DIRTY_SYNC|0x20"), "{t}");
    let r = Rec::new(&ev).int("pfn", -1).b;
    s.clear();
    p.render(&mut s, &r, &Ctx { abi: trbox::abi::Abi::new(Endian::Little, 8), syms: None, strings: None }).unwrap();
    assert!(s.starts_with("page=0000000000000000 pfn=0x0 "), "{s}");
}
