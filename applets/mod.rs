//! The applets of the `trbox` multicall binary (applets/main.rs calls
//! [`main`]): dispatch on basename(argv[0]) or argv[1]. Each applet module
//! only parses options, calls the core and prints. They are compiled in the
//! library (lib.rs), not the binary, so that what they use of the core is
//! the crate's own, not its public API.
//! Which applets and capabilities are built in is the configuration's
//! (config.rs, Cargo.toml's features).

// A configuration without some applets leaves some of the helpers they
// share unused (the linker drops them); the full build still warns.
#![cfg_attr(not(feature = "full"), allow(dead_code))]

mod cli;
mod command;
mod config;
mod progress;
mod session;
#[cfg(feature = "tr-cat")]
mod tr_cat;
#[cfg(feature = "tr-event")]
mod tr_event;
#[cfg(feature = "tr-graph")]
mod tr_graph;
#[cfg(feature = "tr-lat")]
mod tr_lat;
#[cfg(feature = "tr-on")]
mod tr_on;
#[cfg(feature = "tr-stack")]
mod tr_stack;

use argh::ArgsInfo;
use cli::Applet;
use std::process::ExitCode;

const APPLETS: &[Applet] = &[
    #[cfg(feature = "tr-on")]
    Applet {
        name: "tr-on",
        summary: "show or switch the tracing state",
        main: tr_on::main,
        options: tr_on::Args::get_args_info,
    },
    #[cfg(feature = "tr-event")]
    Applet {
        name: "tr-event",
        summary: "list, enable and stream trace events",
        main: tr_event::main,
        options: tr_event::Args::get_args_info,
    },
    #[cfg(feature = "tr-cat")]
    Applet {
        name: "tr-cat",
        summary: "print the trace buffer; --raw decodes the raw pages",
        main: tr_cat::main,
        options: tr_cat::Args::get_args_info,
    },
    #[cfg(feature = "tr-graph")]
    Applet {
        name: "tr-graph",
        summary: "function call graphs (function_graph), folded, top",
        main: tr_graph::main,
        options: tr_graph::Args::get_args_info,
    },
    #[cfg(feature = "tr-stack")]
    Applet {
        name: "tr-stack",
        summary: "kernel stacks: stack tracer, behind events, callers",
        main: tr_stack::main,
        options: tr_stack::Args::get_args_info,
    },
    #[cfg(feature = "tr-lat")]
    Applet {
        name: "tr-lat",
        summary: "latency: wakeup, irq, syscall; timerlat, osnoise",
        main: tr_lat::main,
        options: tr_lat::Args::get_args_info,
    },
];

/// The multicall entry point: the process's arguments, its exit status.
pub fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect();
    ExitCode::from(cli::dispatch(APPLETS, &argv))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each gated option (config.rs) is one its applet declares (in the
    /// host build, which has every feature), with that letter.
    #[test]
    #[cfg(feature = "host")]
    fn gated_options_exist() {
        for g in crate::applets::config::OPTIONS {
            let flags = match g.applet {
                "trbox" => cli::top_info().flags,
                a => {
                    let app = APPLETS.iter().find(|x| x.name == a).unwrap_or_else(|| panic!("{a}: no applet"));
                    (app.options)().flags
                }
            };
            let f = flags
                .iter()
                .find(|f| f.long == g.long)
                .unwrap_or_else(|| panic!("{} {}: not declared", g.applet, g.long));
            assert_eq!(f.short, g.short, "{} {}", g.applet, g.long);
            assert!(crate::applets::config::FEATURES.contains(&g.feature), "{}: no feature {}", g.long, g.feature);
        }
        // The host build has every applet.
        let built: Vec<&str> = APPLETS.iter().map(|a| a.name).collect();
        assert_eq!(built, crate::applets::config::APPLETS);
        // Nothing of the host build is gated away.
        assert!(crate::applets::config::gated_option("tr-cat", "-N").is_none());
    }

    /// One letter means one thing in every applet: the same long name.
    #[test]
    fn a_letter_means_one_thing() {
        let mut seen: Vec<(char, &str, &str)> = Vec::new();
        for a in APPLETS {
            for f in (a.options)().flags {
                let Some(c) = f.short else { continue };
                match seen.iter().find(|s| s.0 == c) {
                    Some(s) => assert_eq!(s.1, f.long, "-{c}: {} in {}, {} in {}", s.1, s.2, f.long, a.name),
                    None => seen.push((c, f.long, a.name)),
                }
            }
        }
    }

    /// docs/options.md holds the table the declarations give
    /// (TRBOX_BLESS=1 writes it).
    #[test]
    fn the_letter_table_is_documented() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/options.md");
        let doc = std::fs::read_to_string(path).unwrap_or_default();
        let (begin, end) = ("<!-- letters: begin -->\n", "<!-- letters: end -->");
        let table = cli::letter_table(APPLETS);
        let (Some(b), Some(e)) = (doc.find(begin), doc.find(end)) else { panic!("{path}: no {begin} ... {end}") };
        if doc[b + begin.len()..e] != table {
            if std::env::var_os("TRBOX_BLESS").is_some() {
                std::fs::write(path, format!("{}{table}{}", &doc[..b + begin.len()], &doc[e..])).unwrap();
            } else {
                panic!("{path} differs from the options as declared; TRBOX_BLESS=1 cargo test rewrites it:\n{table}");
            }
        }
    }
}
