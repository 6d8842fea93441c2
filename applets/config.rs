//! What this trbox has, as busybox's `.config` says it: the configuration
//! it was built as (`make cross CONFIG=NAME`), the features in it (Cargo
//! features, Cargo.toml), and what a feature left out takes away, so that
//! a name or an option of a left-out feature says so in one line (exit 2)
//! instead of "applet not found" or argh's "Unrecognized argument".

/// The configuration's name: cross/build.sh sets TRBOX_CONFIG (`full`,
/// `minimal`, `custom` for `FEATURES=`); a plain cargo build is `host` with
/// the host feature, else `custom`.
pub(crate) const NAME: &str = match option_env!("TRBOX_CONFIG") {
    Some(n) => n,
    None if cfg!(feature = "host") => "host",
    None => "custom",
};

/// The features built in, in Cargo.toml's order (`trbox --version`).
pub(crate) const FEATURES: &[&str] = &[
    #[cfg(feature = "decode")]
    "decode",
    #[cfg(feature = "tr-on")]
    "tr-on",
    #[cfg(feature = "tr-event")]
    "tr-event",
    #[cfg(feature = "tr-cat")]
    "tr-cat",
    #[cfg(feature = "tr-graph")]
    "tr-graph",
    #[cfg(feature = "tr-stack")]
    "tr-stack",
    #[cfg(feature = "tr-lat")]
    "tr-lat",
    #[cfg(feature = "net")]
    "net",
    #[cfg(feature = "regions")]
    "regions",
    #[cfg(feature = "console")]
    "console",
    #[cfg(feature = "boot")]
    "boot",
    #[cfg(feature = "rtla")]
    "rtla",
    #[cfg(feature = "probe")]
    "probe",
    #[cfg(feature = "zstd")]
    "zstd",
    #[cfg(feature = "zlib")]
    "zlib",
    #[cfg(feature = "host")]
    "host",
];

/// Every applet trbox has, built in or not: a name of these that this
/// build lacks is left out, any other is no applet at all.
pub(crate) const APPLETS: &[&str] = &["tr-on", "tr-event", "tr-cat", "tr-graph", "tr-stack", "tr-lat"];

/// An option that a feature brings: in a build without the feature argh
/// does not know it, and this says why.
pub(crate) struct Gated {
    pub(crate) applet: &'static str,
    pub(crate) long: &'static str,
    pub(crate) short: Option<char>,
    pub(crate) feature: &'static str,
}

impl Gated {
    /// As --help shows it: `-N/--net`, `--console`.
    pub(crate) fn name(&self) -> String {
        match self.short {
            Some(c) => format!("-{c}/{}", self.long),
            None => self.long.into(),
        }
    }
}

const fn gated(applet: &'static str, long: &'static str, short: Option<char>, feature: &'static str) -> Gated {
    Gated { applet, long, short, feature }
}

/// Every option a feature brings, by applet (`trbox` for its own). The
/// test below holds each to an option the host build declares.
pub(crate) const OPTIONS: &[Gated] = &[
    gated("trbox", "--man", None, "host"),
    gated("trbox", "--completions", None, "host"),
    gated("tr-on", "--json", None, "decode"),
    gated("tr-on", "--boot", None, "host"),
    gated("tr-on", "--persist", None, "host"),
    gated("tr-event", "--json", None, "decode"),
    gated("tr-event", "--boot", None, "host"),
    gated("tr-event", "--persist", None, "host"),
    gated("tr-event", "--kprobe", None, "probe"),
    gated("tr-event", "--kretprobe", None, "probe"),
    gated("tr-event", "--uprobe", None, "probe"),
    gated("tr-event", "--uretprobe", None, "probe"),
    gated("tr-cat", "--raw", None, "decode"),
    gated("tr-cat", "--follow", None, "decode"),
    gated("tr-cat", "--cpus", None, "decode"),
    gated("tr-cat", "--pid", Some('P'), "decode"),
    gated("tr-cat", "--comm", None, "decode"),
    gated("tr-cat", "--json", None, "decode"),
    gated("tr-cat", "--stats", None, "decode"),
    gated("tr-cat", "--all", None, "decode"),
    gated("tr-cat", "--jobs", Some('j'), "decode"),
    gated("tr-cat", "--net", Some('N'), "net"),
    gated("tr-cat", "--console", None, "console"),
    gated("tr-cat", "--input", Some('i'), "host"),
    gated("tr-cat", "--from-console", None, "host"),
    gated("tr-cat", "--listen", None, "host"),
    gated("tr-graph", "--svg", None, "host"),
    gated("tr-graph", "--boot", None, "host"),
    gated("tr-graph", "--persist", None, "host"),
];

/// The option `tok` (`--net`, `--net=X`, `-N`, `-Nx`) of `applet`, when a
/// feature left out of this build brings it.
pub(crate) fn gated_option(applet: &str, tok: &str) -> Option<&'static Gated> {
    gated_without(FEATURES, applet, tok)
}

/// [`gated_option`] for a build with `features`.
fn gated_without(features: &[&str], applet: &str, tok: &str) -> Option<&'static Gated> {
    let long = tok.strip_prefix("--").map(|l| l.split_once('=').map_or(l, |(l, _)| l));
    let short = tok.strip_prefix('-').filter(|_| long.is_none()).and_then(|l| l.chars().next());
    OPTIONS.iter().find(|g| {
        g.applet == applet
            && !features.contains(&g.feature)
            && (long.is_some_and(|l| g.long.strip_prefix("--") == Some(l)) || short.is_some() && g.short == short)
    })
}

/// `trbox --version`: the version, the configuration and its features.
pub(crate) fn version() -> String {
    format!("trbox {} (configuration {NAME}: {})\n", env!("CARGO_PKG_VERSION"), FEATURES.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An option of a left-out feature is found by its name, its letter or
    /// either with a value attached; other options and applets are not.
    #[test]
    fn gated_options_are_found_as_typed() {
        let minimal = ["tr-on", "tr-event", "tr-cat"];
        let find = |applet: &str, tok: &str| gated_without(&minimal, applet, tok).map(|g| (g.name(), g.feature));
        for tok in ["-N", "-N10.0.0.1:9", "--net", "--net=10.0.0.1:9"] {
            assert_eq!(find("tr-cat", tok), Some(("-N/--net".to_string(), "net")), "{tok}");
        }
        assert_eq!(find("tr-cat", "--raw"), Some(("--raw".to_string(), "decode")));
        assert_eq!(find("tr-on", "--json"), Some(("--json".to_string(), "decode")));
        assert_eq!(find("tr-event", "--kprobe=x"), Some(("--kprobe".to_string(), "probe")));
        for (applet, tok) in
            [("tr-cat", "--netx"), ("tr-cat", "-o"), ("tr-on", "--raw"), ("tr-cat", "--"), ("tr-cat", "-")]
        {
            assert_eq!(find(applet, tok), None, "{applet} {tok}");
        }
        assert_eq!(gated_without(&["tr-cat", "net"], "tr-cat", "-N").map(|g| g.long), None);
    }
}
