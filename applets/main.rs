//! The `trbox` multicall binary: the applets are the library's
//! (applets/mod.rs), compiled there so that the core's internals need not
//! be public.

fn main() -> std::process::ExitCode {
    trbox::applets_main()
}
