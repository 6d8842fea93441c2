//! tr-on: show the tracing state (no arguments) or switch it.

use crate::cli::{self, Common, Error};
use argh::FromArgs;

#[derive(FromArgs)]
/// Show the ftrace state (no arguments), or switch tracing.
struct Args {}

pub fn main(common: &Common, args: &[String]) -> Result<(), Error> {
    let _a: Args = cli::parse("tr-on", args)?;
    let mut t = trbox::sys::Tracefs::open(common.tracefs.as_deref())?;
    if let Some(i) = &common.instance {
        t.enter_instance(i)?;
    }
    println!("tracefs: {}", t.dir().display());
    Ok(())
}
