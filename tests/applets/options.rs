//! Every option that parses must act (issue 39: `tr-on -S KB` alone was
//! parsed and ignored). The options are read from each applet's `--help`,
//! which argh renders from the declaration that parses them (`ArgsInfo`),
//! and [`CASES`] names, for each, the test that runs it and asserts what it
//! does: a test function in tests/, or `board` for the checks the qemu
//! boards run (cross/qemu/session, cross/qemu/guest/), where the kernel
//! has what this machine lacks (function_graph, timerlat...). An option
//! without a case fails, and so does a case whose test is gone or does not
//! use the option. The checker tests itself on made-up input, as
//! tests/core/module_cycles.rs does.

use super::common::*;
use std::path::Path;

/// An option as `--help` lists it: its letter, if any, and its long name.
#[derive(Debug, Clone, PartialEq)]
pub struct Opt {
    pub short: Option<char>,
    pub long: String,
}

/// The rows of a `--help` text's "Options:" (own) and "Common options:"
/// sections (`  -b, --buffer KB   ...`), without `--help`.
pub fn parse_help(help: &str) -> (Vec<Opt>, Vec<Opt>) {
    let (mut own, mut common) = (Vec::new(), Vec::new());
    let mut section = None;
    for l in help.lines() {
        match l {
            "Options:" => section = Some(false),
            "Common options:" => section = Some(true),
            l if !l.is_empty() && !l.starts_with(' ') => section = None,
            _ => {}
        }
        let Some(is_common) = section else { continue };
        let Some(row) = l.strip_prefix("  -") else { continue };
        let (short, rest) = match row.split_once(", ") {
            Some((c, rest)) if c.len() == 1 => (c.chars().next(), rest),
            _ => (None, l.trim_start()),
        };
        let long: String = rest.chars().take_while(|c| !c.is_whitespace()).collect();
        if long.starts_with("--") && long.len() > 2 && long != "--help" {
            let o = Opt { short, long };
            if is_common { &mut common } else { &mut own }.push(o);
        }
    }
    (own, common)
}

/// The options `trbox NAME --help` lists (`NAME` an applet).
pub fn declared(name: &str) -> (Vec<Opt>, Vec<Opt>) {
    let o = applet(name, &["--help"]);
    assert!(o.status.success(), "{name} --help: {}", stderr(&o));
    parse_help(&stdout(&o))
}

/// The applets, as `trbox --list` names them.
pub fn applets() -> Vec<String> {
    stdout(&run(&["--list"])).lines().map(String::from).collect()
}

/// (applet, or `*` for the common options; long name; the test that acts
/// it: `FILE::FUNCTION` under tests/, or `board`).
const CASES: &[(&str, &str, &str)] = &[
    ("*", "--tracefs", "applets/multicall.rs::bad_tracefs_dirs_are_runtime_errors"),
    ("*", "--instance", "applets/tr_cat_file.rs::instance_only_files_read_like_trace_cmd_report"),
    ("*", "--verbose", "applets/multicall.rs::rust_log_filters_by_module"),
    ("*", "--kernel", "applets/tr_cat_file.rs::kernel_option_overrides_the_version"),
    ("*", "--wait", "applets/tr_on.rs::second_run_names_the_holder_or_waits"),
    ("tr-on", "--off", "applets/tr_on.rs::switch_keeps_settings_and_a_failed_switch_keeps_none"),
    ("tr-on", "--reset", "applets/tr_on.rs::reset_returns_to_a_clean_default"),
    ("tr-on", "--buffer", "applets/tr_on.rs::subbuf_goes_before_the_buffer_size"),
    ("tr-on", "--subbuf", "applets/tr_on.rs::subbuf_alone_is_a_switch"),
    ("tr-on", "--clock", "applets/tr_on.rs::switch_keeps_settings_and_a_failed_switch_keeps_none"),
    ("tr-on", "--option", "applets/tr_on.rs::run_traces_the_command_then_restores"),
    ("tr-on", "--func", "applets/tr_on.rs::switch_keeps_settings_and_a_failed_switch_keeps_none"),
    ("tr-on", "--notrace", "applets/tr_on.rs::notrace_sets_set_ftrace_notrace"),
    ("tr-on", "--pid", "applets/tr_on.rs::switch_keeps_settings_and_a_failed_switch_keeps_none"),
    ("tr-on", "--children", "applets/tr_on.rs::status_shows_the_options_that_differ_from_the_defaults"),
    ("tr-on", "--keep", "applets/tr_on.rs::run_traces_the_command_then_restores"),
    ("tr-on", "--time", "applets/tr_on.rs::second_run_names_the_holder_or_waits"),
    ("tr-on", "--json", "applets/tr_on.rs::json_run_prints_one_object_per_event"),
    ("tr-on", "--dump-on-oops", "applets/tr_on.rs::boot_prints_the_command_line_for_the_options"),
    ("tr-on", "--boot", "applets/tr_on.rs::boot_prints_the_command_line_for_the_options"),
    ("tr-on", "--persist", "applets/tr_on.rs::boot_prints_the_command_line_for_the_options"),
    ("tr-event", "--list", "applets/tr_event.rs::list_and_format"),
    ("tr-event", "--format", "applets/tr_event.rs::list_and_format"),
    ("tr-event", "--filter", "applets/tr_event.rs::triggers_and_filters_apply_and_are_removed"),
    ("tr-event", "--trigger", "applets/tr_event_state.rs::an_event_triggers_target_is_left_as_found"),
    ("tr-event", "--pid", "applets/tr_event.rs::dash_p_traces_another_process_only"),
    ("tr-event", "--time", "applets/tr_event.rs::a_system_wide_run_leaves_its_own_work_out"),
    ("tr-event", "--keep", "applets/tr_event_state.rs::keep_leaves_the_events_enabled"),
    ("tr-event", "--json", "applets/tr_event_state.rs::json_prints_one_object_per_event"),
    ("tr-event", "--kprobe", "applets/tr_event_probes.rs::kprobe_absent_or_rejected"),
    ("tr-event", "--kretprobe", "applets/tr_event_probes.rs::kprobe_absent_or_rejected"),
    ("tr-event", "--uprobe", "applets/tr_event_probes.rs::probes_are_removed_after_ctrl_c"),
    ("tr-event", "--uretprobe", "applets/tr_event_probes.rs::uprobe_by_symbol_shows_the_argument_and_return_value"),
    ("tr-event", "--boot", "applets/tr_event.rs::boot_prints_the_event_command_line"),
    ("tr-event", "--persist", "applets/tr_event.rs::boot_prints_the_event_command_line"),
    ("tr-cat", "--output", "applets/tr_cat_record.rs::output_follows_no_symlink_and_truncates_no_file_not_ours"),
    ("tr-cat", "--max-kb", "applets/tr_cat_record.rs::max_kb_keeps_the_newest_pages"),
    ("tr-cat", "--compression", "applets/tr_cat_parquet.rs::zstd_holds_the_same_rows"),
    ("tr-cat", "--raw", "applets/tr_cat.rs::filters_select_by_event_cpu_pid_and_comm"),
    ("tr-cat", "--follow", "applets/tr_cat.rs::follow_streams_and_stops_cleanly"),
    ("tr-cat", "--time", "applets/tr_cat.rs::follow_streams_and_stops_cleanly"),
    ("tr-cat", "--cpus", "applets/tr_cat.rs::cpus_take_a_cpu_list_and_name_a_cpu_not_there"),
    ("tr-cat", "--pid", "applets/tr_cat.rs::filters_select_by_event_cpu_pid_and_comm"),
    ("tr-cat", "--comm", "applets/tr_cat.rs::filters_select_by_event_cpu_pid_and_comm"),
    ("tr-cat", "--event", "applets/tr_cat.rs::event_filters_on_a_file_keep_exactly_the_named_events"),
    ("tr-cat", "--json", "applets/tr_cat.rs::json_has_one_object_per_event"),
    ("tr-cat", "--stats", "applets/tr_cat_file.rs::graph_and_stats_read_instance_only_files"),
    ("tr-cat", "--all", "applets/tr_cat_record.rs::stats_group_the_tasks_of_one_comm"),
    ("tr-cat", "--jobs", "applets/tr_cat_file.rs::several_buffers_merge_like_trace_cmd_report"),
    ("tr-cat", "--console", "applets/tr_cat_stream.rs::console_lines_survive_noise_and_damage"),
    ("tr-cat", "--net", "applets/tr_cat_net.rs::send_and_check"),
    ("tr-cat", "--input", "applets/tr_cat_stream.rs::stream_reads_back_like_a_trace_dat"),
    ("tr-cat", "--from-console", "applets/tr_cat.rs::from_console_reads_the_kernels_oops_dump"),
    ("tr-cat", "--listen", "applets/tr_cat_net_listen.rs::listen_on_one_address"),
    ("tr-graph", "--depth", "board"),
    ("tr-graph", "--pid", "board"),
    ("tr-graph", "--min-us", "applets/tr_graph.rs::min_us_sets_tracing_thresh"),
    ("tr-graph", "--time", "board"),
    ("tr-graph", "--folded", "applets/tr_graph.rs::folded_adds_up_to_the_graphs_top_level_time"),
    ("tr-graph", "--top", "applets/tr_graph.rs::top_agrees_with_the_graph"),
    ("tr-graph", "--svg", "applets/tr_graph.rs::svg_is_the_folded_stacks_as_a_flame_graph"),
    ("tr-graph", "--input", "applets/tr_graph.rs::trace_dat_input_gives_the_same_graph"),
    ("tr-graph", "--read", "board"),
    ("tr-graph", "--keep", "board"),
    ("tr-graph", "--boot", "applets/tr_graph.rs::boot_prints_the_graph_command_line"),
    ("tr-graph", "--persist", "applets/tr_graph.rs::boot_prints_the_graph_command_line"),
    ("tr-stack", "--event", "applets/tr_stack.rs::sched_switch_stacks_live"),
    ("tr-stack", "--filter", "applets/tr_stack.rs::sched_switch_stacks_live"),
    ("tr-stack", "--func", "board"),
    ("tr-stack", "--pid", "board"),
    ("tr-stack", "--folded", "applets/tr_stack.rs::sched_switch_stacks_live"),
    ("tr-stack", "--reset", "board"),
    ("tr-stack", "--limit", "applets/tr_stack.rs::limit_sets_stack_trace_filter"),
    ("tr-stack", "--time", "applets/tr_stack.rs::sched_switch_stacks_live"),
    ("tr-stack", "--input", "applets/tr_stack.rs::keep_then_read_the_recording"),
    ("tr-stack", "--keep", "applets/tr_stack.rs::keep_then_read_the_recording"),
    ("tr-lat", "--rt", "applets/tr_lat.rs::missing_tracers_are_named_with_what_works"),
    ("tr-lat", "--pid", "applets/tr_lat.rs::a_pid_of_another_process_is_measured_alone"),
    ("tr-lat", "--priority", "board"),
    ("tr-lat", "--time", "applets/tr_lat.rs::a_pid_of_another_process_is_measured_alone"),
    ("tr-lat", "--hist", "applets/tr_lat_tracers.rs::timerlat_tables_are_the_entries_per_cpu_and_context"),
    ("tr-lat", "--all", "applets/tr_lat.rs::all_lists_every_task"),
    ("tr-lat", "--bucket", "applets/tr_lat_tracers.rs::timerlat_tables_are_the_entries_per_cpu_and_context"),
    ("tr-lat", "--entries", "applets/tr_lat_tracers.rs::timerlat_tables_are_the_entries_per_cpu_and_context"),
    ("tr-lat", "--ns", "applets/tr_lat.rs::tracepoint_modes_of_every_board_equal_the_kernels_text"),
    ("tr-lat", "--json", "applets/tr_lat.rs::a_command_is_measured_and_its_status_returned"),
    ("tr-lat", "--samples", "applets/tr_lat.rs::tracepoint_modes_of_every_board_equal_the_kernels_text"),
    ("tr-lat", "--period", "board"),
    ("tr-lat", "--cpus", "board"),
    ("tr-lat", "--irq-us", "board"),
    ("tr-lat", "--total-us", "board"),
    ("tr-lat", "--width", "board"),
    ("tr-lat", "--max", "board"),
    ("tr-lat", "--output", "board"),
    ("tr-lat", "--stack-us", "board"),
    ("tr-lat", "--user-threads", "board"),
    ("tr-lat", "--user-load", "board"),
    ("tr-lat", "--kernel-threads", "board"),
    ("tr-lat", "--on-threshold", "board"),
    ("tr-lat", "--on-end", "board"),
    ("tr-lat", "--warm-up", "board"),
    ("tr-lat", "--dma-latency", "board"),
    ("tr-lat", "--trace-buffer-size", "board"),
    ("tr-lat", "--house-keeping", "board"),
    ("tr-lat", "--aa-only", "board"),
    ("tr-lat", "--no-aa", "board"),
    ("tr-lat", "--dump-tasks", "board"),
    ("tr-lat", "--cgroup", "board"),
    ("tr-lat", "--deepest-idle-state", "board"),
    ("tr-lat", "--read", "applets/tr_lat.rs::read_says_it_consumes_the_buffer"),
    ("tr-lat", "--keep", "board"),
];

/// Where the cases point: the test sources (path under tests/ → text) and
/// the board checks (one per line).
pub struct Sources {
    pub tests: Vec<(String, String)>,
    pub board: Vec<String>,
}

/// Does `text` use option `o`: its long name, or its letter as a word of
/// its own (`"-S"`, `-S 4`, `"-b8"` and `-t0.5` too)?
fn uses(text: &str, o: &Opt) -> bool {
    if text.contains(o.long.as_str()) {
        return true;
    }
    let Some(c) = o.short else { return false };
    let flag = format!("-{c}");
    text.match_indices(&flag).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + flag.len()..].chars().next();
        matches!(before, None | Some(' ' | '"' | '\'' | '\t'))
            && after.map_or(true, |a| !a.is_ascii_alphabetic() && a != '-' && a != '_')
    })
}

/// The body of `fn name(` in `src`, up to the first line that closes an
/// item at the left margin.
fn body<'a>(src: &'a str, name: &str) -> Option<&'a str> {
    let start = src.find(&format!("fn {name}("))?;
    let rest = &src[start..];
    Some(&rest[..rest.find("\n}\n").map_or(rest.len(), |e| e + 2)])
}

/// What is wrong with `cases` for the options `declared` lists (applet →
/// own options, and the common ones under `*`): an option without a case,
/// a case for no option, a case whose test is missing or does not use the
/// option, a board check that no board line makes.
pub fn check(declared: &[(String, Vec<Opt>)], cases: &[(&str, &str, &str)], src: &Sources) -> Vec<String> {
    let mut problems = Vec::new();
    for (applet, opts) in declared {
        for o in opts {
            let Some(&(_, _, to)) = cases.iter().find(|c| c.0 == applet && c.1 == o.long) else {
                problems.push(format!("{applet} {}: no case (the test that runs it and checks its effect)", o.long));
                continue;
            };
            if to == "board" {
                let any = src.board.iter().any(|l| (applet == "*" || l.contains(applet.as_str())) && uses(l, o));
                if !any {
                    problems.push(format!("{applet} {}: no board check uses it", o.long));
                }
                continue;
            }
            let Some((file, func)) = to.split_once("::") else {
                problems.push(format!("{applet} {}: '{to}' is neither FILE::FUNCTION nor board", o.long));
                continue;
            };
            match src.tests.iter().find(|t| t.0 == file).and_then(|t| body(&t.1, func)) {
                None => problems.push(format!("{applet} {}: no fn {func} in tests/{file}", o.long)),
                Some(b) if !uses(b, o) => {
                    problems.push(format!("{applet} {}: tests/{file}::{func} does not use it", o.long))
                }
                Some(_) => {}
            }
        }
    }
    for (applet, long, _) in cases {
        if !declared.iter().any(|(a, opts)| a == applet && opts.iter().any(|o| o.long == *long)) {
            problems.push(format!("{applet} {long}: a case for an option that is not declared"));
        }
    }
    problems
}

/// Every file under `dir` whose name ends in `ext`, by path relative to
/// `base`.
fn read_tree(base: &Path, dir: &Path, ext: &str, out: &mut Vec<(String, String)>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            read_tree(base, &p, ext, out);
        } else if p.to_string_lossy().ends_with(ext) {
            let rel = p.strip_prefix(base).unwrap().to_string_lossy().into_owned();
            out.push((rel, std::fs::read_to_string(&p).unwrap()));
        }
    }
}

#[test]
fn every_option_has_a_case() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut declared_opts: Vec<(String, Vec<Opt>)> = Vec::new();
    let mut common: Option<Vec<Opt>> = None;
    for a in applets() {
        let (own, c) = declared(&a);
        assert!(common.as_ref().map_or(true, |seen| *seen == c), "{a}: other common options");
        common = Some(c);
        declared_opts.push((a, own));
    }
    declared_opts.push(("*".into(), common.unwrap_or_default()));
    let mut tests = Vec::new();
    read_tree(&root.join("tests"), &root.join("tests"), ".rs", &mut tests);
    let mut board = Vec::new();
    let mut scripts = vec![("session".to_string(), std::fs::read_to_string(root.join("cross/qemu/session")).unwrap())];
    read_tree(&root.join("cross/qemu/guest"), &root.join("cross/qemu/guest"), "", &mut scripts);
    for (_, text) in &scripts {
        board.extend(text.lines().filter(|l| !l.trim_start().starts_with('#')).map(String::from));
    }
    let problems = check(&declared_opts, CASES, &Sources { tests, board });
    assert!(
        problems.is_empty(),
        "options without a test of their effect (tests/applets/options.rs):\n{}",
        problems.join("\n")
    );
}

/// The checker on made-up input: a case missing, stale, pointing nowhere,
/// at a test that does not use the option, at a board check nobody makes.
#[test]
fn the_case_checker_finds_what_is_missing() {
    let help = "Usage: tr-x\n\nOptions:\n  -b, --buffer KB     size\n                      more\n  --json              json\n  \
                --dump-on-oops all|cpu\n                      arm\n  -- CMD [ARGS...]    run\n  -h, --help          this\n\n\
                Common options:\n  -T, --tracefs DIR   root\n\nExamples:\n  tr-x -b 1\n";
    let (own, common) = parse_help(help);
    let o = |s: Option<char>, l: &str| Opt { short: s, long: l.into() };
    assert_eq!(own, [o(Some('b'), "--buffer"), o(None, "--json"), o(None, "--dump-on-oops")]);
    assert_eq!(common, [o(Some('T'), "--tracefs")]);
    let declared = vec![("tr-x".to_string(), own), ("*".to_string(), common)];
    let src = Sources {
        tests: vec![(
            "applets/x.rs".into(),
            "#[test]\nfn b() {\n    run(&[\"tr-x\", \"-b8\"]);\n}\n\nfn j() {\n    run(&[\"tr-x\"]);\n}\n".into(),
        )],
        board: vec!["tr-x --dump-on-oops all -T /x ## expect: ok".into()],
    };
    let good: &[(&str, &str, &str)] = &[
        ("tr-x", "--buffer", "applets/x.rs::b"),
        ("tr-x", "--json", "applets/x.rs::j"),
        ("tr-x", "--dump-on-oops", "board"),
        ("*", "--tracefs", "board"),
    ];
    assert_eq!(check(&declared, &good[..2], &src).len(), 3, "two without a case, --json unused");
    let p = check(&declared, good, &src);
    assert_eq!(p, ["tr-x --json: tests/applets/x.rs::j does not use it"]);
    let bad: &[(&str, &str, &str)] = &[
        ("tr-x", "--buffer", "applets/x.rs::gone"),
        ("tr-x", "--json", "applets/y.rs::j"),
        ("tr-x", "--dump-on-oops", "x.rs"),
        ("*", "--tracefs", "applets/x.rs::b"),
        ("tr-x", "--old", "board"),
    ];
    let p = check(&declared, bad, &src);
    assert_eq!(
        p,
        [
            "tr-x --buffer: no fn gone in tests/applets/x.rs",
            "tr-x --json: no fn j in tests/applets/y.rs",
            "tr-x --dump-on-oops: 'x.rs' is neither FILE::FUNCTION nor board",
            "* --tracefs: tests/applets/x.rs::b does not use it",
            "tr-x --old: a case for an option that is not declared",
        ]
    );
    // A letter counts as a word of its own only.
    let b = o(Some('b'), "--buffer");
    for yes in ["\"-b\"", "x -b 8", "\"-b8\"", "-b"] {
        assert!(uses(yes, &b), "{yes}");
    }
    for no in ["\"-bx\"", "ls-b", "--b", "-B"] {
        assert!(!uses(no, &b), "{no}");
    }
}
