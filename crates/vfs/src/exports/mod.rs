//! Parser and client matcher for an exports file in `exports(5)` syntax (Linux nfs-utils).
//!
//! A file is a list of entries, one per logical line:
//!
//! ```text
//! # comment
//! /srv/data      10.0.0.0/8(rw,no_root_squash) *.example.com(ro) @trusted
//! "/srv/my data" fd00::/64(rw,sync) \
//!                (ro)                       # continuation; `(ro)` means every host
//! /srv/odd\040name -rw,async host1 host2(ro)
//! ```
//!
//! * `#` at the start of a token begins a comment that runs to the end of the physical line
//!   (inside a token, such as `/srv/a#b`, it is an ordinary character, as in nfs-utils).
//! * A backslash at the end of a physical line (trailing blanks allowed) joins the next line.
//! * A path may be double-quoted and may contain three-digit octal escapes such as `\040`.
//! * A client without `(options)` gets the defaults; a bare `(options)` means every host.
//!   A path with no client at all is exported to every host with the defaults, as in nfs-utils.
//! * A `-options` token after the path sets the defaults for the clients after it on that line.
//!
//! Rules are checked in file order and the first match wins. Note that nfs-utils itself
//! ranks rules by client type (single hosts and addresses, then networks, then wildcards,
//! then netgroups, then anonymous); write the more specific rules first to get the same
//! result from both.
#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::fmt;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

mod clients;

use clients::parse_client;
pub use clients::ClientMatch;

/// Anonymous uid and gid used when none is given (`nobody` / `nogroup`).
pub const DEFAULT_ANON_ID: u32 = 65534;

/// How a client's credentials are mapped to the anonymous ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Squash {
    /// No squashing (`no_root_squash`): every uid, root included, is used as sent.
    None,
    /// Root (uid 0 / gid 0) becomes `anonuid` / `anongid` (`root_squash`, the default).
    #[default]
    Root,
    /// Every uid and gid becomes `anonuid` / `anongid` (`all_squash`).
    All,
}

/// A security flavor allowed by `sec=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SecFlavor {
    /// `AUTH_SYS` (`sec=sys`), the default.
    Sys,
    /// `AUTH_NONE` (`sec=none`).
    None,
    /// RPCSEC_GSS Kerberos V5, authentication only (`sec=krb5`).
    Krb5,
    /// RPCSEC_GSS Kerberos V5 with integrity (`sec=krb5i`).
    Krb5i,
    /// RPCSEC_GSS Kerberos V5 with privacy (`sec=krb5p`).
    Krb5p,
}

impl SecFlavor {
    /// The name `sec=` gives it.
    pub fn name(self) -> &'static str {
        match self {
            SecFlavor::Sys => "sys",
            SecFlavor::None => "none",
            SecFlavor::Krb5 => "krb5",
            SecFlavor::Krb5i => "krb5i",
            SecFlavor::Krb5p => "krb5p",
        }
    }

    /// The flavor `sec=` calls `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "sys" => SecFlavor::Sys,
            "none" => SecFlavor::None,
            "krb5" => SecFlavor::Krb5,
            "krb5i" => SecFlavor::Krb5i,
            "krb5p" => SecFlavor::Krb5p,
            _ => return None,
        })
    }

    /// Whether this is a Kerberos flavor.
    pub fn is_krb5(self) -> bool {
        matches!(self, SecFlavor::Krb5 | SecFlavor::Krb5i | SecFlavor::Krb5p)
    }
}

/// The options of one client rule; `Default` gives the `exports(5)` defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportOptions {
    /// Writes allowed (`rw`); `false` for `ro`, the default.
    pub rw: bool,
    /// Credential squashing; `Squash::Root` by default.
    pub squash: Squash,
    /// Uid of the anonymous user (`anonuid=N`, default 65534).
    pub anonuid: u32,
    /// Gid of the anonymous user (`anongid=N`, default 65534).
    pub anongid: u32,
    /// Requests must come from a port below 1024 (`secure`, the default; `insecure` clears it).
    pub secure: bool,
    /// Reply only after changes are on stable storage (`sync`, the default; `async` clears it).
    pub sync: bool,
    /// File system id from `fsid=`: a decimal number, `root`, or a UUID (32 hex digits), as written.
    pub fsid: Option<String>,
    /// Security flavors from `sec=` (colon-separated), in order; empty when not given (see
    /// [`ExportOptions::admits`]).
    pub sec: Vec<SecFlavor>,
    /// Export only if the path is a mount point (`mountpoint` / `mp`, or with `=PATH`).
    pub mountpoint: bool,
    /// The path given as `mountpoint=PATH` / `mp=PATH`, if any.
    pub mountpoint_path: Option<PathBuf>,
    /// The client gets pNFS layouts, and the data it writes to new files goes to the data
    /// servers (`pnfs`; `no_pnfs`, the default, clears it).
    pub pnfs: bool,
    /// ACLs are served: NFSv4 `acl`/`dacl` attributes and the NFSACL program (`acl`, the
    /// default; `no_acl` hides them, though permission checks still follow them).
    pub acl: bool,
}

impl Default for ExportOptions {
    fn default() -> Self {
        ExportOptions {
            rw: false,
            squash: Squash::Root,
            anonuid: DEFAULT_ANON_ID,
            anongid: DEFAULT_ANON_ID,
            secure: true,
            sync: true,
            fsid: None,
            sec: Vec::new(),
            mountpoint: false,
            mountpoint_path: None,
            pnfs: false,
            acl: true,
        }
    }
}

impl ExportOptions {
    /// Whether a call with flavor `f` is admitted: one `sec=` lists, or, without `sec=`,
    /// AUTH_SYS and AUTH_NONE (as knfsd, where AUTH_NONE callers are the anonymous user).
    /// Kerberos calls are admitted only where `sec=` lists their flavor, as in knfsd.
    pub fn admits(&self, f: SecFlavor) -> bool {
        if self.sec.is_empty() {
            return matches!(f, SecFlavor::Sys | SecFlavor::None);
        }
        self.sec.contains(&f)
    }

    /// The flavors MOUNT and SECINFO list: `sec=`'s, or AUTH_SYS without it (as nfs-utils).
    pub fn flavors(&self) -> Vec<SecFlavor> {
        if self.sec.is_empty() {
            vec![SecFlavor::Sys]
        } else {
            self.sec.clone()
        }
    }
}

/// One client specifier of an entry together with its options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientRule {
    /// The clients this rule covers.
    pub client: ClientMatch,
    /// The options those clients get.
    pub options: ExportOptions,
}

/// One exported path and its client rules, in file order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportEntry {
    /// The absolute exported path, with escapes decoded.
    pub path: PathBuf,
    /// The client rules; the first matching one applies.
    pub clients: Vec<ClientRule>,
}

impl ExportEntry {
    /// The options of the first rule that matches the client, or `None` if no rule does.
    pub fn options_for(&self, ip: IpAddr, hostname: Option<&str>) -> Option<&ExportOptions> {
        self.rule_for(ip, hostname).map(|rule| &rule.options)
    }

    /// The first rule that matches the client, or `None` if no rule does.
    pub fn rule_for(&self, ip: IpAddr, hostname: Option<&str>) -> Option<&ClientRule> {
        self.clients
            .iter()
            .find(|rule| rule.client.matches(ip, hostname))
    }
}

/// An error in an exports file, naming the file and the 1-based line (0 when no line applies).
#[derive(Debug)]
pub struct ExportsError {
    /// The file name as given to the parser.
    pub file: String,
    /// The 1-based line number, or 0 for errors about the whole file.
    pub line: usize,
    /// What is wrong.
    pub kind: ExportsErrorKind,
}

/// What is wrong in an exports file.
#[derive(Debug)]
#[non_exhaustive]
pub enum ExportsErrorKind {
    /// The file could not be read.
    Io(std::io::Error),
    /// The file is not valid UTF-8 (the line is that of the first bad byte).
    NotUtf8,
    /// A double quote was not closed before the end of the line.
    UnterminatedQuote,
    /// The exported path does not start with `/`.
    PathNotAbsolute,
    /// The exported path contains a NUL byte (from a `\000` escape).
    PathContainsNul,
    /// The same path is exported twice; holds the line of the first entry.
    DuplicatePath {
        /// The duplicated path as written (escapes decoded).
        path: String,
        /// The line of the first entry with this path.
        first_line: usize,
    },
    /// A client's options lack the closing parenthesis.
    MissingCloseParen,
    /// Text follows the closing parenthesis of a client's options.
    TrailingText(String),
    /// A client specifier that is not an address, network, host name, pattern or netgroup.
    BadClient(String),
    /// A network that is not `addr/prefix` or `ipv4/netmask`, or whose prefix is too long.
    BadNetwork(String),
    /// An empty item in an option list, such as `(rw,,sync)`.
    EmptyOption,
    /// An option that is not known.
    UnknownOption(String),
    /// An option that needs `=value` was given without one.
    MissingValue(String),
    /// `anonuid=` is not a number in `0..=4294967295`.
    BadAnonUid(String),
    /// `anongid=` is not a number in `0..=4294967295`.
    BadAnonGid(String),
    /// `fsid=` is not a number, `root` or a UUID.
    BadFsid(String),
    /// `sec=` names a flavor other than `sys`, `none`, `krb5`, `krb5i` or `krb5p`.
    UnsupportedSec(String),
    /// `mountpoint=` / `mp=` is not an absolute path.
    BadMountpoint(String),
    /// An exports(5) option or client form rnfsd does not implement, and why.
    Unsupported {
        /// The option or client as written.
        what: String,
        /// Why, and what to write instead.
        why: &'static str,
    },
}

impl fmt::Display for ExportsErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExportsErrorKind::Io(err) => write!(f, "cannot read: {err}"),
            ExportsErrorKind::NotUtf8 => f.write_str("not valid UTF-8"),
            ExportsErrorKind::UnterminatedQuote => f.write_str("missing closing quote"),
            ExportsErrorKind::PathNotAbsolute => f.write_str("path must be absolute"),
            ExportsErrorKind::PathContainsNul => f.write_str("path contains a NUL byte"),
            ExportsErrorKind::DuplicatePath { path, first_line } => {
                write!(f, "duplicate export {path:?} (first at line {first_line})")
            }
            ExportsErrorKind::MissingCloseParen => f.write_str("missing \")\""),
            ExportsErrorKind::TrailingText(text) => {
                write!(f, "unexpected text {text:?} after \")\"")
            }
            ExportsErrorKind::BadClient(c) => write!(f, "bad client {c:?}"),
            ExportsErrorKind::BadNetwork(n) => write!(f, "bad network {n:?}"),
            ExportsErrorKind::EmptyOption => f.write_str("empty option"),
            ExportsErrorKind::UnknownOption(o) => write!(f, "unknown option {o:?}"),
            ExportsErrorKind::MissingValue(o) => write!(f, "option {o:?} needs a value"),
            ExportsErrorKind::BadAnonUid(v) => write!(f, "bad anonuid {v:?}"),
            ExportsErrorKind::BadAnonGid(v) => write!(f, "bad anongid {v:?}"),
            ExportsErrorKind::BadFsid(v) => write!(f, "bad fsid {v:?}"),
            ExportsErrorKind::UnsupportedSec(v) => {
                write!(
                    f,
                    "unsupported security flavor {v:?} (sys, none, krb5, krb5i, krb5p)"
                )
            }
            ExportsErrorKind::BadMountpoint(v) => write!(f, "bad mountpoint {v:?}"),
            ExportsErrorKind::Unsupported { what, why } => {
                write!(f, "{what:?} is not supported: {why}")
            }
        }
    }
}

impl fmt::Display for ExportsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file, self.kind)
        } else {
            write!(f, "{}:{}: {}", self.file, self.line, self.kind)
        }
    }
}

impl std::error::Error for ExportsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            ExportsErrorKind::Io(err) => Some(err),
            _ => None,
        }
    }
}

/// Parse the text of an exports file; `file_name` is used in error messages only.
pub fn parse_exports(text: &str, file_name: &str) -> Result<Vec<ExportEntry>, ExportsError> {
    let err = |line: usize, kind: ExportsErrorKind| ExportsError {
        file: file_name.to_owned(),
        line,
        kind,
    };
    let lines = tokenize(text).map_err(|(line, kind)| err(line, kind))?;
    let mut entries = Vec::with_capacity(lines.len());
    let mut seen: HashMap<PathBuf, usize> = HashMap::new();
    for tokens in lines {
        let entry = parse_entry(&tokens).map_err(|(line, kind)| err(line, kind))?;
        // `parse_entry` only succeeds on a non-empty token list.
        let path_line = tokens.first().map_or(0, |t| t.line);
        if let Some(&first_line) = seen.get(&entry.path) {
            return Err(err(
                path_line,
                ExportsErrorKind::DuplicatePath {
                    path: entry.path.to_string_lossy().into_owned(),
                    first_line,
                },
            ));
        }
        seen.insert(entry.path.clone(), path_line);
        entries.push(entry);
    }
    Ok(entries)
}

/// Read and parse an exports file; read failures are `ExportsErrorKind::Io` naming the file.
pub fn load_exports(path: &Path) -> Result<Vec<ExportEntry>, ExportsError> {
    let file = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| ExportsError {
        file: file.clone(),
        line: 0,
        kind: ExportsErrorKind::Io(e),
    })?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let valid = e.utf8_error().valid_up_to();
        let prefix = e.as_bytes().get(..valid).unwrap_or_default();
        let line = 1 + prefix.iter().filter(|&&b| b == b'\n').count();
        ExportsError {
            file: file.clone(),
            line,
            kind: ExportsErrorKind::NotUtf8,
        }
    })?;
    parse_exports(&text, &file)
}

// ---------------------------------------------------------------------------------------------
// Tokenizer

/// One whitespace-separated word of a logical line, quotes removed.
#[derive(Debug)]
struct Token {
    text: String,
    line: usize,
}

type ParseResult<T> = Result<T, (usize, ExportsErrorKind)>;

/// Split the text into logical lines of tokens, handling comments, quotes and continuations.
fn tokenize(text: &str) -> ParseResult<Vec<Vec<Token>>> {
    let bytes = text.as_bytes();
    let mut lines: Vec<Vec<Token>> = Vec::new();
    let mut current: Vec<Token> = Vec::new();
    // The token being built: its bytes and the line it started on.
    let mut word: Option<(Vec<u8>, usize)> = None;
    let mut quoted = false;
    let mut line = 1usize;
    let mut i = 0usize;

    fn finish(word: &mut Option<(Vec<u8>, usize)>, current: &mut Vec<Token>) {
        if let Some((bytes, line)) = word.take() {
            // Tokens are split at ASCII bytes only, so they stay valid UTF-8.
            let text = String::from_utf8_lossy(&bytes).into_owned();
            current.push(Token { text, line });
        }
    }

    while let Some(&b) = bytes.get(i) {
        match b {
            b'\n' => {
                if quoted {
                    return Err((line, ExportsErrorKind::UnterminatedQuote));
                }
                finish(&mut word, &mut current);
                if !current.is_empty() {
                    lines.push(std::mem::take(&mut current));
                }
                line += 1;
                i += 1;
            }
            b'\\' if !quoted && continuation_end(bytes, i + 1).is_some() => {
                finish(&mut word, &mut current);
                let end = continuation_end(bytes, i + 1).unwrap_or(bytes.len());
                if bytes.get(end) == Some(&b'\n') {
                    line += 1;
                    i = end + 1;
                } else {
                    i = end;
                }
            }
            b'"' => {
                quoted = !quoted;
                if word.is_none() {
                    word = Some((Vec::new(), line));
                }
                i += 1;
            }
            b'#' if !quoted && word.is_none() => {
                while bytes.get(i).is_some_and(|&c| c != b'\n') {
                    i += 1;
                }
            }
            b' ' | b'\t' | b'\r' | b'\x0b' | b'\x0c' if !quoted => {
                finish(&mut word, &mut current);
                i += 1;
            }
            _ => {
                match &mut word {
                    Some((w, _)) => w.push(b),
                    None => word = Some((vec![b], line)),
                }
                i += 1;
            }
        }
    }
    if quoted {
        return Err((line, ExportsErrorKind::UnterminatedQuote));
    }
    finish(&mut word, &mut current);
    if !current.is_empty() {
        lines.push(current);
    }
    Ok(lines)
}

/// If only blanks follow position `i` up to a newline (or the end), the newline's index.
fn continuation_end(bytes: &[u8], mut i: usize) -> Option<usize> {
    loop {
        match bytes.get(i) {
            None | Some(b'\n') => return Some(i),
            Some(b' ' | b'\t' | b'\r') => i += 1,
            Some(_) => return None,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Entries

/// Parse one logical line (a non-empty token list) into an entry.
fn parse_entry(tokens: &[Token]) -> ParseResult<ExportEntry> {
    let Some((path_tok, rest)) = tokens.split_first() else {
        return Err((0, ExportsErrorKind::PathNotAbsolute));
    };
    let path = parse_path(&path_tok.text).map_err(|kind| (path_tok.line, kind))?;

    let mut defaults = OptionsBuilder::default();
    let mut clients = Vec::new();
    for tok in rest {
        let at = |kind| (tok.line, kind);
        if let Some(opts) = tok.text.strip_prefix('-') {
            if opts.is_empty() {
                return Err(at(ExportsErrorKind::EmptyOption));
            }
            defaults.apply_list(opts).map_err(at)?;
            continue;
        }
        let (name, opts) = match tok.text.split_once('(') {
            Some((name, after)) => {
                let Some((opts, trailing)) = after.split_once(')') else {
                    return Err(at(ExportsErrorKind::MissingCloseParen));
                };
                if !trailing.is_empty() {
                    return Err(at(ExportsErrorKind::TrailingText(trailing.to_owned())));
                }
                (name, Some(opts))
            }
            None => (tok.text.as_str(), None),
        };
        let client = parse_client(name).map_err(at)?;
        match &client {
            ClientMatch::HostPattern(_) => {
                return Err(at(unsupported(name, "wildcard host names need a reverse DNS lookup per client, which rnfsd does not do; give addresses or networks")));
            }
            ClientMatch::Netgroup(_) => {
                return Err(at(unsupported(
                    name,
                    "netgroups are not supported; give addresses or networks",
                )));
            }
            _ => {}
        }
        let mut options = defaults.clone();
        if let Some(opts) = opts {
            options.apply_list(opts).map_err(at)?;
        }
        clients.push(ClientRule {
            client,
            options: options.finish(),
        });
    }
    if clients.is_empty() {
        clients.push(ClientRule {
            client: ClientMatch::Any,
            options: defaults.finish(),
        });
    }
    Ok(ExportEntry { path, clients })
}

/// Decode `\ooo` octal escapes in a path and check it is absolute.
fn parse_path(raw: &str) -> Result<PathBuf, ExportsErrorKind> {
    let bytes = unescape(raw.as_bytes());
    if bytes.first() != Some(&b'/') {
        return Err(ExportsErrorKind::PathNotAbsolute);
    }
    if bytes.contains(&0) {
        return Err(ExportsErrorKind::PathContainsNul);
    }
    Ok(path_from_bytes(bytes))
}

/// Replace each backslash followed by three octal digits (value up to 0o377) by that byte.
fn unescape(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while let Some(&b) = raw.get(i) {
        if b == b'\\' {
            if let Some(value) = raw.get(i + 1..i + 4).and_then(octal3) {
                out.push(value);
                i += 4;
                continue;
            }
        }
        out.push(b);
        i += 1;
    }
    out
}

/// The byte value of three octal digits, if they are octal and at most 0o377.
fn octal3(digits: &[u8]) -> Option<u8> {
    let mut value: u32 = 0;
    for &d in digits {
        if !(b'0'..=b'7').contains(&d) {
            return None;
        }
        value = value * 8 + u32::from(d - b'0');
    }
    u8::try_from(value).ok()
}

#[cfg(unix)]
fn path_from_bytes(bytes: Vec<u8>) -> PathBuf {
    use std::os::unix::ffi::OsStringExt;
    PathBuf::from(std::ffi::OsString::from_vec(bytes))
}

#[cfg(not(unix))]
fn path_from_bytes(bytes: Vec<u8>) -> PathBuf {
    PathBuf::from(String::from_utf8_lossy(&bytes).into_owned())
}

// ---------------------------------------------------------------------------------------------
// Options

/// Options being built, keeping root and all squashing apart as nfs-utils does.
#[derive(Debug, Clone)]
struct OptionsBuilder {
    opts: ExportOptions,
    root_squash: bool,
    all_squash: bool,
}

impl Default for OptionsBuilder {
    fn default() -> Self {
        OptionsBuilder {
            opts: ExportOptions::default(),
            root_squash: true,
            all_squash: false,
        }
    }
}

impl OptionsBuilder {
    /// Apply a comma-separated option list; an empty list changes nothing.
    fn apply_list(&mut self, list: &str) -> Result<(), ExportsErrorKind> {
        if list.is_empty() {
            return Ok(());
        }
        list.split(',').try_for_each(|opt| self.apply(opt))
    }

    /// Apply one option.
    fn apply(&mut self, opt: &str) -> Result<(), ExportsErrorKind> {
        let o = &mut self.opts;
        let (key, value) = match opt.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (opt, None),
        };
        match (key, value) {
            ("", None) => return Err(ExportsErrorKind::EmptyOption),
            ("rw", None) => o.rw = true,
            ("ro", None) => o.rw = false,
            ("root_squash", None) => self.root_squash = true,
            ("no_root_squash", None) => self.root_squash = false,
            ("all_squash", None) => self.all_squash = true,
            ("no_all_squash", None) => self.all_squash = false,
            ("secure", None) => o.secure = true,
            ("insecure", None) => o.secure = false,
            ("sync", None) => o.sync = true,
            ("async", None) => o.sync = false,
            // What rnfsd always does: handles are not tied to a parent directory, each WRITE
            // is served as it comes (wdelay lets a server delay, never obliges it), file systems
            // mounted below an export are not crossed.
            ("no_subtree_check" | "wdelay" | "no_wdelay" | "hide", None) => {}
            ("acl", None) => o.acl = true,
            ("no_acl", None) => o.acl = false,
            ("subtree_check", None) => {
                return Err(unsupported(
                    opt,
                    "handles name files, not paths (use no_subtree_check, knfsd's default)",
                ))
            }
            ("nohide" | "crossmnt", None) => {
                return Err(unsupported(
                    opt,
                    "file systems mounted below an export are not crossed; export each one",
                ))
            }
            ("pnfs", None) => o.pnfs = true,
            ("no_pnfs", None) => o.pnfs = false,
            ("mountpoint" | "mp", None) => {
                o.mountpoint = true;
                o.mountpoint_path = None;
            }
            ("mountpoint" | "mp", Some(v)) => {
                if !v.starts_with('/') {
                    return Err(ExportsErrorKind::BadMountpoint(v.to_owned()));
                }
                o.mountpoint = true;
                o.mountpoint_path =
                    Some(parse_path(v).map_err(|_| ExportsErrorKind::BadMountpoint(v.to_owned()))?);
            }
            ("anonuid", Some(v)) => {
                o.anonuid = parse_id(v).ok_or_else(|| ExportsErrorKind::BadAnonUid(v.to_owned()))?
            }
            ("anongid", Some(v)) => {
                o.anongid = parse_id(v).ok_or_else(|| ExportsErrorKind::BadAnonGid(v.to_owned()))?
            }
            ("fsid", Some(v)) => {
                if !valid_fsid(v) {
                    return Err(ExportsErrorKind::BadFsid(v.to_owned()));
                }
                o.fsid = Some(v.to_owned());
            }
            ("sec", Some(v)) => o.sec = parse_sec(v)?,
            ("anonuid" | "anongid" | "fsid" | "sec", None) => {
                return Err(ExportsErrorKind::MissingValue(key.to_owned()))
            }
            _ => return Err(ExportsErrorKind::UnknownOption(opt.to_owned())),
        }
        Ok(())
    }

    /// The finished options, with the squash bits folded into `Squash`.
    fn finish(self) -> ExportOptions {
        let squash = if self.all_squash {
            Squash::All
        } else if self.root_squash {
            Squash::Root
        } else {
            Squash::None
        };
        ExportOptions {
            squash,
            ..self.opts
        }
    }
}

fn unsupported(what: &str, why: &'static str) -> ExportsErrorKind {
    ExportsErrorKind::Unsupported {
        what: what.to_owned(),
        why,
    }
}

/// A decimal uid/gid (digits only, fits in `u32`).
fn parse_id(v: &str) -> Option<u32> {
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    v.parse().ok()
}

/// `root`, a decimal `u32`, or a UUID: 32 hex digits, optionally separated by `-`, `:` or `.`.
fn valid_fsid(v: &str) -> bool {
    if v == "root" || parse_id(v).is_some() {
        return true;
    }
    let hex = v.bytes().filter(u8::is_ascii_hexdigit).count();
    hex == 32
        && v.bytes()
            .all(|b| b.is_ascii_hexdigit() || matches!(b, b'-' | b':' | b'.'))
}

/// A colon-separated list of `sys` / `none` / `krb5` / `krb5i` / `krb5p`, without repeats.
fn parse_sec(v: &str) -> Result<Vec<SecFlavor>, ExportsErrorKind> {
    let mut flavors = Vec::new();
    for name in v.split(':') {
        let flavor = SecFlavor::from_name(name)
            .ok_or_else(|| ExportsErrorKind::UnsupportedSec(name.to_owned()))?;
        if !flavors.contains(&flavor) {
            flavors.push(flavor);
        }
    }
    Ok(flavors)
}

#[cfg(test)]
mod tests;
