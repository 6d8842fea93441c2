//! The `trbox` multicall binary: dispatch on basename(argv[0]) or argv[1].
//! Each applet module only parses options, calls the core and prints.

mod cli;
mod command;
#[cfg(feature = "host")]
mod host;
#[cfg(feature = "host")]
mod listen;
mod record;
mod tr_cat;
mod tr_event;
mod tr_graph;
mod tr_lat;
mod tr_on;
mod tr_stack;

use std::process::ExitCode;

/// One entry per applet that exists. Only these are listed and installed.
pub struct Applet {
    pub name: &'static str,
    pub summary: &'static str,
    pub main: fn(&cli::Common, &[String]) -> Result<(), cli::Error>,
}

pub const APPLETS: &[Applet] = &[
    Applet { name: "tr-on", summary: "show or switch the tracing state", main: tr_on::main },
    Applet { name: "tr-event", summary: "list, enable and stream trace events", main: tr_event::main },
    Applet { name: "tr-cat", summary: "print the trace buffer; --raw decodes the raw pages", main: tr_cat::main },
    Applet { name: "tr-graph", summary: "function call graphs (function_graph), folded, top", main: tr_graph::main },
    Applet { name: "tr-stack", summary: "kernel stacks: stack tracer, behind events, callers", main: tr_stack::main },
    Applet { name: "tr-lat", summary: "latency: wakeup, irq, syscall; timerlat, osnoise", main: tr_lat::main },
];

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect();
    ExitCode::from(cli::dispatch(&argv))
}
