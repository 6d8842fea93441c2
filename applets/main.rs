//! The `trbox` multicall binary: dispatch on basename(argv[0]) or argv[1].
//! Each applet module only parses options, calls the core and prints.

mod cli;
mod command;
mod decode;
mod emit;
#[cfg(feature = "host")]
mod host;
#[cfg(feature = "host")]
mod listen;
mod out;
mod pool;
mod record;
mod session;
mod stats;
mod stream_in;
mod tr_cat;
mod tr_event;
mod tr_graph;
mod tr_lat;
mod tr_on;
mod tr_stack;

use cli::Applet;
use std::process::ExitCode;

const APPLETS: &[Applet] = &[
    Applet { name: "tr-on", summary: "show or switch the tracing state", main: tr_on::main },
    Applet { name: "tr-event", summary: "list, enable and stream trace events", main: tr_event::main },
    Applet { name: "tr-cat", summary: "print the trace buffer; --raw decodes the raw pages", main: tr_cat::main },
    Applet { name: "tr-graph", summary: "function call graphs (function_graph), folded, top", main: tr_graph::main },
    Applet { name: "tr-stack", summary: "kernel stacks: stack tracer, behind events, callers", main: tr_stack::main },
    Applet { name: "tr-lat", summary: "latency: wakeup, irq, syscall; timerlat, osnoise", main: tr_lat::main },
];

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect();
    ExitCode::from(cli::dispatch(APPLETS, &argv))
}
