//! dist/man/rnfsctl.1 is what the command line generates (clap_mangen: name, synopsis,
//! description, options, commands) followed by the hand-written sections in
//! dist/man/rnfsctl.1.sections. After changing a flag, a command or those sections, regenerate
//! it with `MAN_BLESS=1 cargo test -p rnfs-admin --test man`.

use clap::CommandFactory;
use std::path::PathBuf;

/// Defines `\*(Aq`, the apostrophe clap_mangen writes.
const AQ: &str = ".ie \\n(.g .ds Aq \\(aq\n.el .ds Aq '\n";

fn man_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../dist/man")
}

fn render() -> Vec<u8> {
    let man = clap_mangen::Man::new(rnfs_admin::cli::Args::command());
    let mut body = Vec::new();
    man.render_name_section(&mut body).unwrap();
    man.render_synopsis_section(&mut body).unwrap();
    man.render_description_section(&mut body).unwrap();
    man.render_options_section(&mut body).unwrap();
    // Each section rendered alone repeats the definition of the quote string; once is enough.
    let body = String::from_utf8(body).unwrap().replace(AQ, "");
    // clap_mangen's title leaves the date empty and unquoted, which shifts the later fields.
    let title = format!(
        ".TH rnfsctl 1 \"\" \"rnfsctl {}\" \"User Commands\"\n",
        env!("CARGO_PKG_VERSION")
    );
    let commands = commands_section(&rnfs_admin::cli::Args::command());
    let sections = std::fs::read_to_string(man_dir().join("rnfsctl.1.sections")).unwrap();
    format!("{AQ}{title}{body}{commands}{sections}").into_bytes()
}

/// The commands with their arguments, in one page (clap_mangen's own section points to a page
/// per command, which would be mostly empty).
fn commands_section(cmd: &clap::Command) -> String {
    let mut out = String::from(".SH COMMANDS\n");
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        out.push_str(&format!(".TP\n\\fB{}\\fR", sub.get_name()));
        for arg in sub.get_positionals() {
            out.push_str(&format!(
                " \\fI{}\\fR",
                arg.get_id().as_str().to_uppercase()
            ));
        }
        out.push('\n');
        let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
        out.push_str(&roff_text(&about));
        out.push_str(".\n");
    }
    out
}

/// Text as a roff line: hyphens and apostrophes as clap_mangen writes them.
fn roff_text(s: &str) -> String {
    s.replace('\\', "\\e")
        .replace('-', "\\-")
        .replace('\'', "\\*(Aq")
}

#[test]
fn rnfsctl_1_is_current() {
    let path = man_dir().join("rnfsctl.1");
    let fresh = render();
    if std::env::var_os("MAN_BLESS").is_some() {
        std::fs::write(&path, &fresh).unwrap();
    }
    let committed = std::fs::read(&path).unwrap_or_default();
    assert!(
        committed == fresh,
        "dist/man/rnfsctl.1 is stale: rerun with MAN_BLESS=1 cargo test -p rnfs-admin --test man"
    );
}
