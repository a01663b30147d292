//! dist/man/rnfsd.8 is what the command line generates (clap_mangen: name, synopsis,
//! description, options) followed by the hand-written sections in dist/man/rnfsd.8.sections.
//! After changing a flag or those sections, regenerate it with `MAN_BLESS=1 cargo test -p
//! rnfs-server --test man`.

use clap::CommandFactory;
use std::path::PathBuf;

/// Defines `\*(Aq`, the apostrophe clap_mangen writes.
const AQ: &str = ".ie \\n(.g .ds Aq \\(aq\n.el .ds Aq '\n";

fn man_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../dist/man")
}

fn render() -> Vec<u8> {
    let man = clap_mangen::Man::new(rnfs_server::config::Args::command());
    let mut body = Vec::new();
    man.render_name_section(&mut body).unwrap();
    man.render_synopsis_section(&mut body).unwrap();
    man.render_description_section(&mut body).unwrap();
    man.render_options_section(&mut body).unwrap();
    // Each section rendered alone repeats the definition of the quote string; once is enough.
    let body = String::from_utf8(body).unwrap().replace(AQ, "");
    // clap_mangen's title leaves the date empty and unquoted, which shifts the later fields.
    let title = format!(
        ".TH rnfsd 8 \"\" \"rnfsd {}\" \"System Administration\"\n",
        env!("CARGO_PKG_VERSION")
    );
    let sections = std::fs::read_to_string(man_dir().join("rnfsd.8.sections")).unwrap();
    format!("{AQ}{title}{body}{sections}").into_bytes()
}

#[test]
fn rnfsd_8_is_current() {
    let path = man_dir().join("rnfsd.8");
    let fresh = render();
    if std::env::var_os("MAN_BLESS").is_some() {
        std::fs::write(&path, &fresh).unwrap();
    }
    let committed = std::fs::read(&path).unwrap_or_default();
    assert!(
        committed == fresh,
        "dist/man/rnfsd.8 is stale: rerun with MAN_BLESS=1 cargo test -p rnfs-server --test man"
    );
}
