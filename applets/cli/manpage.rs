//! Man pages and shell completions, written from the option declarations
//! (argh's `ArgsInfo`, the same declarations `--help` is rendered from), so
//! that neither can drift from the binary: `trbox --man APPLET` prints an
//! applet's page in man(7) roff, `trbox --completions bash|zsh|fish` a
//! completion script for trbox and every applet. docs/man/ and completions/
//! hold what they print (`make docs` writes them; tests/applets/docs.rs
//! checks). Host build only (the cargo feature `host`): a board has
//! neither man nor a shell that completes.

use super::{help_text, Applet, Common, Error};
use argh::{ArgsInfo, FlagInfo, FlagInfoKind, Optionality};

/// `trbox --man NAME`: the page of applet NAME (or of trbox itself).
pub(crate) fn man(applets: &[Applet], name: &str) -> Result<String, Error> {
    let common = Common::get_args_info();
    let version = env!("CARGO_PKG_VERSION");
    let th = |n: &str| format!(".TH {} 1 \"\" \"trbox {version}\" \"trbox manual\"\n", n.to_uppercase());
    if name == "trbox" {
        let mut o = th("trbox");
        o += ".SH NAME\ntrbox \\- ftrace for embedded boards: one static binary, six busybox-style applets\n";
        o += ".SH SYNOPSIS\n.B trbox\n\\fIAPPLET\\fR [\\fIARGS\\fR...]\n.br\n.B trbox\n[\\fIOPTIONS\\fR] [\\fIDIR\\fR]\n";
        o += ".SH DESCRIPTION\nA multicall binary: run as \\fBtrbox APPLET\\fR, or through a link named after \
              the applet (\\fBtrbox \\-\\-install\\fR makes them).\n";
        o += ".SH OPTIONS\n";
        options(&mut o, super::top_info().flags);
        o += ".SH APPLETS\n";
        for a in applets {
            o += &format!(".TP\n.BR {} (1)\n{}\n", a.name, text(a.summary));
        }
        o += &see_also(applets, "trbox");
        return Ok(o);
    }
    let Some(a) = applets.iter().find(|a| a.name == name) else {
        return Err(Error::usage(format!("--man: no applet '{name}'")).hint("trbox --list names them"));
    };
    let own = (a.options)();
    let mut o = th(a.name);
    o += &format!(".SH NAME\n{} \\- {}\n", a.name, text(a.summary));
    // The usage line of --help.
    let help = help_text(a.name, &own, &common);
    let usage = help.lines().next().and_then(|l| l.strip_prefix("Usage: ")).unwrap_or(a.name);
    o += &format!(".SH SYNOPSIS\n{}\n", text(usage));
    o += &format!(".SH DESCRIPTION\n{}\n", paragraphs(own.description));
    let positionals: Vec<_> = own.positionals.iter().filter(|p| !p.hidden).collect();
    if !positionals.is_empty() {
        o += ".SH ARGUMENTS\n";
        for p in positionals {
            o += &format!(".TP\n.I {}\n{}\n", p.name, text(p.description));
        }
    }
    o += ".SH OPTIONS\n";
    options(&mut o, own.flags);
    o += ".TP\n\\fB\\-\\-\\fR \\fICMD\\fR [\\fIARGS\\fR...]\n";
    o += "run CMD with tracing on for it only; end with its exit status\n";
    o += ".TP\n\\fB\\-h\\fR, \\fB\\-\\-help\\fR\nthe help text\n";
    o += ".SH COMMON OPTIONS\n";
    options(&mut o, common.flags);
    if !own.examples.is_empty() {
        o += ".SH EXAMPLES\n";
        for e in own.examples {
            o += &format!(".nf\n{}\n.fi\n", text(&e.replace("{command_name}", a.name)));
        }
    }
    for n in own.notes {
        o += &format!(".SH NOTES\n{}\n", paragraphs(n));
    }
    o += ".SH EXIT STATUS\n0 success, 1 usage error, 2 runtime failure; with \\fB\\-\\-\\fR \\fICMD\\fR: \
          the command's exit status.\n";
    o += &see_also(applets, a.name);
    Ok(o)
}

/// One `.TP` entry per option shown in `--help`.
fn options(o: &mut String, flags: &[FlagInfo]) {
    for f in shown(flags) {
        let short = f.short.map(|c| format!("\\fB\\-{c}\\fR, ")).unwrap_or_default();
        let value = match f.kind {
            FlagInfoKind::Option { arg_name } => format!(" \\fI{}\\fR", text(arg_name)),
            FlagInfoKind::Switch => String::new(),
        };
        o.push_str(&format!(".TP\n{short}\\fB{}\\fR{value}\n{}\n", text(f.long), text(f.description)));
    }
}

fn see_also(applets: &[Applet], me: &str) -> String {
    let names: Vec<String> = std::iter::once("trbox")
        .chain(applets.iter().map(|a| a.name))
        .filter(|n| *n != me)
        .map(|n| format!(".BR {n} (1)"))
        .collect();
    let page = if me == "trbox" { "README.md".to_string() } else { format!("docs/applets/{me}.md") };
    format!(".SH SEE ALSO\n{},\n.BR trace-cmd (1)\n.PP\n{page} in trbox's source\n", names.join(",\n"))
}

/// Text as roff reads it literally: backslashes and hyphens escaped, no
/// line taken for a request (a leading `.` or `'`), lines joined.
fn text(s: &str) -> String {
    let mut o = String::new();
    for (i, line) in s.lines().enumerate() {
        if i > 0 {
            o.push('\n');
        }
        let line = line.trim();
        if line.starts_with('.') || line.starts_with('\'') {
            o.push_str("\\&");
        }
        o.push_str(&line.replace('\\', "\\e").replace('-', "\\-"));
    }
    o
}

/// A description: its blank-line separated paragraphs as `.PP`.
fn paragraphs(s: &str) -> String {
    s.split("\n\n").map(text).collect::<Vec<_>>().join("\n.PP\n")
}

/// The flags `--help` shows (its own -h/--help apart).
fn shown<'a>(flags: &'a [FlagInfo<'a>]) -> impl Iterator<Item = &'a FlagInfo<'a>> {
    flags.iter().filter(|f| !f.hidden && f.long != "--help")
}

/// The options of an applet, its own and the common ones.
fn all_flags(a: &Applet) -> Vec<&'static FlagInfo<'static>> {
    let own: &'static [FlagInfo<'static>] = (a.options)().flags;
    shown(own).chain(shown(Common::get_args_info().flags)).collect()
}

/// `trbox --completions SHELL`.
pub(crate) fn completions(applets: &[Applet], shell: &str) -> Result<String, Error> {
    match shell {
        "bash" => Ok(bash(applets)),
        "zsh" => Ok(zsh(applets)),
        "fish" => Ok(fish(applets)),
        _ => Err(Error::usage(format!("--completions: no shell '{shell}'")).hint("give bash, zsh or fish")),
    }
}

fn top_words() -> String {
    shown(super::top_info().flags)
        .flat_map(|f| f.short.map(|c| format!("-{c}")).into_iter().chain([f.long.to_string()]))
        .collect::<Vec<_>>()
        .join(" ")
}

fn bash(applets: &[Applet]) -> String {
    let names: Vec<&str> = applets.iter().map(|a| a.name).collect();
    let mut o = String::from("# bash completion for trbox and its applets (trbox --completions bash)\n");
    o += "_trbox() {\n    local cur=${COMP_WORDS[COMP_CWORD]} app=${COMP_WORDS[0]##*/} first=1 opts i\n";
    o += "    if [[ $app == trbox ]]; then\n        if (( COMP_CWORD == 1 )); then\n";
    o += &format!(
        "            COMPREPLY=($(compgen -W \"{} {} --help\" -- \"$cur\"))\n            return\n        fi\n",
        names.join(" "),
        top_words()
    );
    o += "        app=${COMP_WORDS[1]} first=2\n    fi\n";
    o += "    # After -- comes a command and its arguments.\n";
    o += "    for (( i = first; i < COMP_CWORD; i++ )); do\n";
    o += "        if [[ ${COMP_WORDS[i]} == -- ]]; then\n";
    o += "            COMPREPLY=($(compgen -c -f -- \"$cur\"))\n            return\n        fi\n    done\n";
    o += "    case $app in\n";
    for a in applets {
        let words: Vec<String> = all_flags(a)
            .iter()
            .flat_map(|f| f.short.map(|c| format!("-{c}")).into_iter().chain([f.long.to_string()]))
            .collect();
        o += &format!("        {}) opts=\"{} --help\" ;;\n", a.name, words.join(" "));
    }
    o += "        *) return ;;\n    esac\n";
    o += "    if [[ $cur == -* ]]; then\n        COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))\n";
    o += "    else\n        COMPREPLY=($(compgen -f -- \"$cur\"))\n    fi\n}\n";
    o += &format!("complete -F _trbox trbox {}\n", names.join(" "));
    o
}

/// A description on one line, as a completion menu shows it: its first
/// sentence, without what a shell would read as syntax.
fn brief(s: &str, bad: &[char]) -> String {
    let one = s.split_whitespace().collect::<Vec<_>>().join(" ");
    let first = one.split("; ").next().unwrap_or(&one);
    first.chars().filter(|c| !bad.contains(c)).collect()
}

fn zsh(applets: &[Applet]) -> String {
    let names: Vec<&str> = applets.iter().map(|a| a.name).collect();
    let mut o = format!(
        "#compdef trbox {}\n# zsh completion for trbox and its applets (trbox --completions zsh)\n\n",
        names.join(" ")
    );
    for a in applets {
        o += &format!("_trbox_{}() {{\n    _arguments -s -S \\\n", a.name.replace('-', "_"));
        for f in all_flags(a) {
            let d = brief(f.description, &['[', ']', '\'', '\\', ':']);
            let many = matches!(f.optionality, Optionality::Repeating) || f.long == "--verbose";
            let (plus, eq, value) = match f.kind {
                FlagInfoKind::Option { arg_name } => {
                    let files = ["FILE", "DIR", "LOG"].iter().any(|f| arg_name.contains(f));
                    ("+", "=", format!(":{}:{}", arg_name.replace(':', " "), if files { "_files" } else { " " }))
                }
                FlagInfoKind::Switch => ("", "", String::new()),
            };
            let both = f.short.map(|c| format!("-{c} {}", f.long));
            let excl = match (&both, many) {
                (_, true) => "*".to_string(),
                (Some(b), false) => format!("({b})"),
                (None, false) => String::new(),
            };
            if let Some(c) = f.short {
                o += &format!("        '{excl}-{c}{plus}[{d}]{value}' \\\n");
            }
            o += &format!("        '{excl}{}{eq}[{d}]{value}' \\\n", f.long);
        }
        o += "        '(- *)'{-h,--help}'[the help text]' \\\n        '*::file:_files'\n}\n\n";
    }
    o += "_trbox() {\n    local app=${words[1]:t}\n    if [[ $app == trbox ]]; then\n";
    o += "        if (( CURRENT == 2 )); then\n";
    o +=
        &format!("            compadd -- {} {} --help\n            return\n        fi\n", names.join(" "), top_words());
    o += "        shift words; (( CURRENT-- )); app=${words[1]}\n    fi\n";
    o += "    (( $+functions[_trbox_${app//-/_}] )) && _trbox_${app//-/_}\n}\n\n_trbox \"$@\"\n";
    o
}

fn fish(applets: &[Applet]) -> String {
    let mut o = String::from("# fish completion for trbox and its applets (trbox --completions fish)\n");
    let names: Vec<&str> = applets.iter().map(|a| a.name).collect();
    o += &format!("complete -c trbox -f -n __fish_use_subcommand -a '{}'\n", names.join(" "));
    for f in shown(super::top_info().flags) {
        o += &format!("complete -c trbox -n __fish_use_subcommand{}\n", fish_flag(f));
    }
    for a in applets {
        for f in all_flags(a) {
            let flag = fish_flag(f);
            o += &format!("complete -c {}{flag}\n", a.name);
            o += &format!("complete -c trbox -n '__fish_seen_subcommand_from {}'{flag}\n", a.name);
        }
    }
    o
}

fn fish_flag(f: &FlagInfo) -> String {
    let mut o = String::new();
    if let Some(c) = f.short {
        o += &format!(" -s {c}");
    }
    o += &format!(" -l {}", f.long.trim_start_matches("--"));
    if matches!(f.kind, FlagInfoKind::Option { .. }) {
        o += " -r";
    }
    o += &format!(" -d '{}'", brief(f.description, &['\'', '\\']));
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roff_text_is_literal() {
        assert_eq!(text(".x -b a\\b\n'y"), "\\&.x \\-b a\\eb\n\\&'y");
        assert_eq!(brief("a [b]; more\ntext", &['[', ']']), "a b");
    }
}
