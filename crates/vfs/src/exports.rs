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
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};

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
    /// Let clients cross into file systems mounted below the export (`crossmnt`).
    pub crossmnt: bool,
    /// Check that a file handle lies inside the exported subtree (`subtree_check`; default off).
    pub subtree_check: bool,
    /// Delay writes that look related to gather them (`wdelay`, the default; `no_wdelay` clears it).
    pub wdelay: bool,
    /// Hide file systems mounted below a parent export (`hide`, the default; `nohide` clears it).
    pub hide: bool,
    /// Do not expose ACLs (`no_acl`; `acl` clears it).
    pub no_acl: bool,
    /// Allowed security flavors from `sec=` (colon-separated); `[Sys]` by default.
    pub sec: Vec<SecFlavor>,
    /// Export only if the path is a mount point (`mountpoint` / `mp`, or with `=PATH`).
    pub mountpoint: bool,
    /// The path given as `mountpoint=PATH` / `mp=PATH`, if any.
    pub mountpoint_path: Option<PathBuf>,
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
            crossmnt: false,
            subtree_check: false,
            wdelay: true,
            hide: true,
            no_acl: false,
            sec: vec![SecFlavor::Sys],
            mountpoint: false,
            mountpoint_path: None,
        }
    }
}

/// Which clients a rule applies to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ClientMatch {
    /// Every client (`*`, or a bare `(options)`).
    Any,
    /// One IPv4 or IPv6 address; an IPv4-mapped IPv6 client matches its IPv4 form.
    Addr(IpAddr),
    /// A network: `addr/prefix` or (IPv4) `addr/netmask`; host bits are cleared when parsed.
    Net {
        /// The network address.
        addr: IpAddr,
        /// The prefix length (at most 32 for IPv4, 128 for IPv6).
        prefix: u8,
    },
    /// A host name, matched case-insensitively against the name the caller gives; no DNS lookup.
    Host(String),
    /// A host name pattern with `*`, `?` and `[...]`, matched against the given name only.
    HostPattern(String),
    /// An NIS netgroup (`@name`); stored but never matches, as netgroups are not supported.
    Netgroup(String),
}

impl ClientMatch {
    /// Whether a client at `ip`, with the (already resolved) `hostname` if known, is covered.
    pub fn matches(&self, ip: IpAddr, hostname: Option<&str>) -> bool {
        let ip = ip.to_canonical();
        match self {
            ClientMatch::Any => true,
            ClientMatch::Addr(addr) => addr.to_canonical() == ip,
            ClientMatch::Net { addr, prefix } => match canonical_net(*addr, *prefix) {
                Some((net, prefix)) => net_contains(net, prefix, ip),
                None => false,
            },
            ClientMatch::Host(name) => {
                hostname.is_some_and(|h| normalize_host(h) == normalize_host(name))
            }
            ClientMatch::HostPattern(pattern) => hostname
                .is_some_and(|h| glob_match(pattern.as_bytes(), normalize_host(h).as_bytes())),
            ClientMatch::Netgroup(_) => false,
        }
    }
}

impl fmt::Display for ClientMatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientMatch::Any => f.write_str("*"),
            ClientMatch::Addr(addr) => write!(f, "{addr}"),
            ClientMatch::Net { addr, prefix } => write!(f, "{addr}/{prefix}"),
            ClientMatch::Host(name) | ClientMatch::HostPattern(name) => f.write_str(name),
            ClientMatch::Netgroup(name) => write!(f, "@{name}"),
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
    /// `sec=` names a flavor other than `sys` or `none`.
    UnsupportedSec(String),
    /// `mountpoint=` / `mp=` is not an absolute path.
    BadMountpoint(String),
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
                write!(f, "unsupported security flavor {v:?} (only sys and none)")
            }
            ExportsErrorKind::BadMountpoint(v) => write!(f, "bad mountpoint {v:?}"),
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
// Clients

/// Parse a client specifier (the part before any `(`).
fn parse_client(name: &str) -> Result<ClientMatch, ExportsErrorKind> {
    if name.is_empty() || name == "*" {
        return Ok(ClientMatch::Any);
    }
    if let Some(group) = name.strip_prefix('@') {
        if group.is_empty() || !group.bytes().all(is_name_byte) {
            return Err(ExportsErrorKind::BadClient(name.to_owned()));
        }
        return Ok(ClientMatch::Netgroup(group.to_owned()));
    }
    if name.contains('/') {
        return parse_network(name).ok_or_else(|| ExportsErrorKind::BadNetwork(name.to_owned()));
    }
    if let Ok(addr) = name.parse::<IpAddr>() {
        return Ok(ClientMatch::Addr(addr.to_canonical()));
    }
    if name.bytes().any(|b| matches!(b, b'*' | b'?' | b'[')) {
        if !name
            .bytes()
            .all(|b| is_name_byte(b) || b"*?[]!^".contains(&b))
        {
            return Err(ExportsErrorKind::BadClient(name.to_owned()));
        }
        return Ok(ClientMatch::HostPattern(name.to_owned()));
    }
    if !name.bytes().all(is_name_byte) || name.bytes().all(|b| b == b'.') {
        return Err(ExportsErrorKind::BadClient(name.to_owned()));
    }
    Ok(ClientMatch::Host(name.to_owned()))
}

/// Bytes allowed in host and netgroup names.
fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_')
}

/// Parse `addr/prefix` or `ipv4/netmask`; host bits are cleared.
fn parse_network(spec: &str) -> Option<ClientMatch> {
    let (addr, mask) = spec.split_once('/')?;
    let addr: IpAddr = addr.parse().ok()?;
    let max = match addr {
        IpAddr::V4(_) => 32,
        IpAddr::V6(_) => 128,
    };
    let prefix = if !mask.is_empty() && mask.len() <= 3 && mask.bytes().all(|b| b.is_ascii_digit())
    {
        mask.parse::<u8>().ok().filter(|&p| p <= max)?
    } else {
        match (addr, mask.parse::<Ipv4Addr>()) {
            (IpAddr::V4(_), Ok(netmask)) => {
                let bits = u32::from(netmask);
                let ones = bits.leading_ones();
                if bits.checked_shl(ones).unwrap_or(0) != 0 {
                    return None; // not contiguous
                }
                u8::try_from(ones).ok()?
            }
            _ => return None,
        }
    };
    let (addr, prefix) = canonical_net(addr, prefix)?;
    Some(ClientMatch::Net {
        addr: mask_addr(addr, prefix),
        prefix,
    })
}

/// Turn an IPv4-mapped IPv6 network with prefix >= 96 into its IPv4 form; `None` if invalid.
fn canonical_net(addr: IpAddr, prefix: u8) -> Option<(IpAddr, u8)> {
    match addr {
        IpAddr::V4(_) if prefix <= 32 => Some((addr, prefix)),
        IpAddr::V6(v6) if prefix <= 128 => match v6.to_ipv4_mapped() {
            Some(v4) if prefix >= 96 => Some((IpAddr::V4(v4), prefix - 96)),
            _ => Some((addr, prefix)),
        },
        _ => None,
    }
}

/// The address with all bits past `prefix` cleared.
fn mask_addr(addr: IpAddr, prefix: u8) -> IpAddr {
    match addr {
        IpAddr::V4(v4) => {
            let mask = u32::MAX
                .checked_shl(32 - u32::from(prefix.min(32)))
                .unwrap_or(0);
            IpAddr::V4(Ipv4Addr::from(u32::from(v4) & mask))
        }
        IpAddr::V6(v6) => {
            let mask = u128::MAX
                .checked_shl(128 - u32::from(prefix.min(128)))
                .unwrap_or(0);
            IpAddr::V6(Ipv6Addr::from(u128::from(v6) & mask))
        }
    }
}

/// Whether `ip` (canonical) lies in `net/prefix` (canonical); families must agree.
fn net_contains(net: IpAddr, prefix: u8, ip: IpAddr) -> bool {
    match (net, ip) {
        (IpAddr::V4(_), IpAddr::V4(_)) | (IpAddr::V6(_), IpAddr::V6(_)) => {
            mask_addr(net, prefix) == mask_addr(ip, prefix)
        }
        _ => false,
    }
}

/// Lower-case a host name and drop one trailing dot.
fn normalize_host(name: &str) -> String {
    let name = name.strip_suffix('.').unwrap_or(name);
    name.to_ascii_lowercase()
}

/// One element of a compiled host pattern.
enum GlobItem {
    Star,
    AnyByte,
    Byte(u8),
    Class {
        negated: bool,
        ranges: Vec<(u8, u8)>,
    },
}

/// Compile a pattern: `*`, `?`, `[abc]`, `[a-z]`, `[!x]` / `[^x]`; an unclosed `[` is literal.
fn compile_glob(pattern: &[u8]) -> Vec<GlobItem> {
    let mut items = Vec::new();
    let mut i = 0;
    while let Some(&b) = pattern.get(i) {
        match b {
            b'*' => {
                if !matches!(items.last(), Some(GlobItem::Star)) {
                    items.push(GlobItem::Star);
                }
                i += 1;
            }
            b'?' => {
                items.push(GlobItem::AnyByte);
                i += 1;
            }
            b'[' => match compile_class(pattern, i + 1) {
                Some((item, next)) => {
                    items.push(item);
                    i = next;
                }
                None => {
                    items.push(GlobItem::Byte(b'['));
                    i += 1;
                }
            },
            _ => {
                items.push(GlobItem::Byte(b.to_ascii_lowercase()));
                i += 1;
            }
        }
    }
    items
}

/// Compile a `[...]` class starting just after `[`; returns it and the index after `]`.
fn compile_class(pattern: &[u8], mut i: usize) -> Option<(GlobItem, usize)> {
    let negated = matches!(pattern.get(i), Some(b'!' | b'^'));
    if negated {
        i += 1;
    }
    let mut ranges = Vec::new();
    let mut first = true;
    loop {
        let b = *pattern.get(i)?;
        if b == b']' && !first {
            return Some((GlobItem::Class { negated, ranges }, i + 1));
        }
        first = false;
        let lo = b.to_ascii_lowercase();
        match (pattern.get(i + 1), pattern.get(i + 2)) {
            (Some(b'-'), Some(&hi)) if hi != b']' => {
                ranges.push((lo, hi.to_ascii_lowercase()));
                i += 3;
            }
            _ => {
                ranges.push((lo, lo));
                i += 1;
            }
        }
    }
}

impl GlobItem {
    /// Whether this single-byte item matches `b` (never called for `Star`).
    fn matches_byte(&self, b: u8) -> bool {
        match self {
            GlobItem::Star | GlobItem::AnyByte => true,
            GlobItem::Byte(c) => *c == b,
            GlobItem::Class { negated, ranges } => {
                ranges.iter().any(|&(lo, hi)| lo <= b && b <= hi) != *negated
            }
        }
    }
}

/// Match a lower-cased name against a host pattern (`*` also matches dots, as in nfs-utils).
fn glob_match(pattern: &[u8], name: &[u8]) -> bool {
    let items = compile_glob(pattern);
    let name: Vec<u8> = name.iter().map(u8::to_ascii_lowercase).collect();
    let (mut p, mut n) = (0usize, 0usize);
    // Position of the last star in the pattern and the name index it was tried at.
    let mut backtrack: Option<(usize, usize)> = None;
    while n < name.len() {
        match (items.get(p), name.get(n)) {
            (Some(GlobItem::Star), _) => {
                backtrack = Some((p, n));
                p += 1;
            }
            (Some(item), Some(&b)) if item.matches_byte(b) => {
                p += 1;
                n += 1;
            }
            _ => match backtrack {
                Some((sp, sn)) => {
                    backtrack = Some((sp, sn + 1));
                    p = sp + 1;
                    n = sn + 1;
                }
                None => return false,
            },
        }
    }
    items
        .get(p..)
        .is_some_and(|rest| rest.iter().all(|i| matches!(i, GlobItem::Star)))
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
            ("subtree_check", None) => o.subtree_check = true,
            ("no_subtree_check", None) => o.subtree_check = false,
            ("wdelay", None) => o.wdelay = true,
            ("no_wdelay", None) => o.wdelay = false,
            ("hide", None) => o.hide = true,
            ("nohide", None) => o.hide = false,
            ("crossmnt", None) => o.crossmnt = true,
            ("no_acl", None) => o.no_acl = true,
            ("acl", None) => o.no_acl = false,
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

/// A colon-separated list of `sys` / `none`, without repeats.
fn parse_sec(v: &str) -> Result<Vec<SecFlavor>, ExportsErrorKind> {
    let mut flavors = Vec::new();
    for name in v.split(':') {
        let flavor = match name {
            "sys" => SecFlavor::Sys,
            "none" => SecFlavor::None,
            _ => return Err(ExportsErrorKind::UnsupportedSec(name.to_owned())),
        };
        if !flavors.contains(&flavor) {
            flavors.push(flavor);
        }
    }
    Ok(flavors)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("test address")
    }

    fn parse(text: &str) -> Vec<ExportEntry> {
        match parse_exports(text, "/etc/exports") {
            Ok(entries) => entries,
            Err(e) => panic!("unexpected error: {e}"),
        }
    }

    fn parse_err(text: &str) -> String {
        match parse_exports(text, "/etc/exports") {
            Ok(entries) => panic!("expected an error, got {entries:?}"),
            Err(e) => e.to_string(),
        }
    }

    /// Options of the single client of the single entry parsed from `/x host(opts)`.
    fn opts(list: &str) -> ExportOptions {
        let entries = parse(&format!("/x h({list})"));
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].clients.len(), 1);
        entries[0].clients[0].options.clone()
    }

    fn client(spec: &str) -> ClientMatch {
        let entries = parse(&format!("/x {spec}"));
        entries[0].clients[0].client.clone()
    }

    #[test]
    fn defaults() {
        let d = ExportOptions::default();
        assert!(!d.rw);
        assert_eq!(d.squash, Squash::Root);
        assert_eq!(d.anonuid, 65534);
        assert_eq!(d.anongid, 65534);
        assert!(d.secure);
        assert!(d.sync);
        assert_eq!(d.fsid, None);
        assert!(!d.crossmnt);
        assert!(!d.subtree_check);
        assert!(d.wdelay);
        assert!(d.hide);
        assert!(!d.no_acl);
        assert_eq!(d.sec, vec![SecFlavor::Sys]);
        assert!(!d.mountpoint);
        assert_eq!(d.mountpoint_path, None);
        assert_eq!(Squash::default(), Squash::Root);

        // A client without options, and an empty option list, get the defaults.
        let e = parse("/srv host1 host2()");
        assert_eq!(e[0].clients[0].options, d);
        assert_eq!(e[0].clients[1].options, d);
    }

    #[test]
    fn every_option() {
        assert!(opts("rw").rw);
        assert!(!opts("rw,ro").rw);
        assert!(!opts("ro").rw);
        assert_eq!(opts("root_squash").squash, Squash::Root);
        assert_eq!(opts("no_root_squash").squash, Squash::None);
        assert_eq!(opts("all_squash").squash, Squash::All);
        assert_eq!(opts("all_squash,no_all_squash").squash, Squash::Root);
        assert_eq!(
            opts("no_root_squash,all_squash,no_all_squash").squash,
            Squash::None
        );
        // all_squash covers root even after no_root_squash, as in nfs-utils.
        assert_eq!(opts("all_squash,no_root_squash").squash, Squash::All);
        assert_eq!(opts("no_all_squash").squash, Squash::Root);
        assert_eq!(opts("anonuid=1000").anonuid, 1000);
        assert_eq!(opts("anonuid=0").anonuid, 0);
        assert_eq!(opts("anonuid=4294967295").anonuid, u32::MAX);
        assert_eq!(opts("anongid=100").anongid, 100);
        assert!(!opts("insecure").secure);
        assert!(opts("insecure,secure").secure);
        assert!(!opts("async").sync);
        assert!(opts("async,sync").sync);
        assert_eq!(opts("fsid=0").fsid.as_deref(), Some("0"));
        assert_eq!(opts("fsid=42").fsid.as_deref(), Some("42"));
        assert_eq!(opts("fsid=root").fsid.as_deref(), Some("root"));
        let uuid = "3f0f7d6a-9b3c-4c1e-8e5a-2b7c9d0e1f23";
        assert_eq!(opts(&format!("fsid={uuid}")).fsid.as_deref(), Some(uuid));
        let uuid = "3f0f7d6a:9b3c4c1e:8e5a2b7c:9d0e1f23";
        assert_eq!(opts(&format!("fsid={uuid}")).fsid.as_deref(), Some(uuid));
        assert!(opts("crossmnt").crossmnt);
        assert!(opts("subtree_check").subtree_check);
        assert!(!opts("subtree_check,no_subtree_check").subtree_check);
        assert!(!opts("no_wdelay").wdelay);
        assert!(opts("no_wdelay,wdelay").wdelay);
        assert!(!opts("nohide").hide);
        assert!(opts("nohide,hide").hide);
        assert!(opts("no_acl").no_acl);
        assert!(!opts("no_acl,acl").no_acl);
        assert_eq!(opts("sec=sys").sec, vec![SecFlavor::Sys]);
        assert_eq!(opts("sec=none").sec, vec![SecFlavor::None]);
        assert_eq!(
            opts("sec=none:sys:none").sec,
            vec![SecFlavor::None, SecFlavor::Sys]
        );
        assert!(opts("mountpoint").mountpoint);
        assert!(opts("mp").mountpoint);
        let o = opts("mp=/mnt/disk");
        assert!(o.mountpoint);
        assert_eq!(o.mountpoint_path, Some(PathBuf::from("/mnt/disk")));
        let o = opts("mountpoint=/mnt/a,mountpoint");
        assert!(o.mountpoint);
        assert_eq!(o.mountpoint_path, None);

        let all = opts(
            "rw,no_root_squash,anonuid=1,anongid=2,insecure,async,fsid=7,crossmnt,\
             subtree_check,no_wdelay,nohide,no_acl,sec=sys,mp",
        );
        assert_eq!(
            all,
            ExportOptions {
                rw: true,
                squash: Squash::None,
                anonuid: 1,
                anongid: 2,
                secure: false,
                sync: false,
                fsid: Some("7".into()),
                crossmnt: true,
                subtree_check: true,
                wdelay: false,
                hide: false,
                no_acl: true,
                sec: vec![SecFlavor::Sys],
                mountpoint: true,
                mountpoint_path: None,
            }
        );
    }

    #[test]
    fn client_forms() {
        assert_eq!(client("*"), ClientMatch::Any);
        assert_eq!(client("*(rw)"), ClientMatch::Any);
        assert_eq!(client("(rw)"), ClientMatch::Any);
        assert_eq!(client("10.1.2.3"), ClientMatch::Addr(ip("10.1.2.3")));
        assert_eq!(client("fd00::1(rw)"), ClientMatch::Addr(ip("fd00::1")));
        assert_eq!(client("::ffff:10.1.2.3"), ClientMatch::Addr(ip("10.1.2.3")));
        assert_eq!(
            client("10.0.0.0/8"),
            ClientMatch::Net {
                addr: ip("10.0.0.0"),
                prefix: 8
            }
        );
        assert_eq!(
            client("192.168.1.0/255.255.255.0"),
            ClientMatch::Net {
                addr: ip("192.168.1.0"),
                prefix: 24
            }
        );
        assert_eq!(
            client("fd00::/64"),
            ClientMatch::Net {
                addr: ip("fd00::"),
                prefix: 64
            }
        );
        // Host bits are cleared.
        assert_eq!(
            client("10.1.2.3/8"),
            ClientMatch::Net {
                addr: ip("10.0.0.0"),
                prefix: 8
            }
        );
        assert_eq!(
            client("::ffff:10.0.0.0/104"),
            ClientMatch::Net {
                addr: ip("10.0.0.0"),
                prefix: 8
            }
        );
        assert_eq!(
            client("server.example.com"),
            ClientMatch::Host("server.example.com".into())
        );
        assert_eq!(client("host_1"), ClientMatch::Host("host_1".into()));
        assert_eq!(
            client("*.example.com"),
            ClientMatch::HostPattern("*.example.com".into())
        );
        assert_eq!(
            client("node?[0-9]"),
            ClientMatch::HostPattern("node?[0-9]".into())
        );
        assert_eq!(
            client("@trusted(rw)"),
            ClientMatch::Netgroup("trusted".into())
        );

        for spec in ["*", "10.0.0.0/8", "fd00::1", "host", "*.example.com", "@ng"] {
            assert_eq!(client(spec).to_string(), spec);
        }
    }

    #[test]
    fn matching() {
        let a = ip("10.1.2.3");
        let b = ip("192.168.7.9");
        assert!(ClientMatch::Any.matches(a, None));
        assert!(ClientMatch::Addr(a).matches(a, None));
        assert!(!ClientMatch::Addr(a).matches(b, None));
        let net = client("10.0.0.0/8");
        assert!(net.matches(a, None));
        assert!(!net.matches(b, None));
        assert!(!net.matches(ip("fd00::1"), None));
        let v6 = client("fd00::/64");
        assert!(v6.matches(ip("fd00::1234"), None));
        assert!(!v6.matches(ip("fd00:0:0:1::1"), None));
        assert!(!v6.matches(a, None));

        let host = ClientMatch::Host("Server.Example.COM".into());
        assert!(host.matches(a, Some("server.example.com")));
        assert!(host.matches(a, Some("server.example.com.")));
        assert!(!host.matches(a, Some("other.example.com")));
        assert!(!host.matches(a, None), "no DNS lookup by address");

        let pat = client("*.example.com");
        assert!(pat.matches(a, Some("a.example.com")));
        assert!(pat.matches(a, Some("a.b.EXAMPLE.com")), "* matches dots");
        assert!(!pat.matches(a, Some("example.com")));
        assert!(!pat.matches(a, Some("a.example.org")));
        assert!(!pat.matches(a, None));
        let pat = client("node?[0-3]");
        assert!(pat.matches(a, Some("nodea2")));
        assert!(!pat.matches(a, Some("nodea4")));
        assert!(!pat.matches(a, Some("node2")));
        let pat = client("n[!a-c]x");
        assert!(pat.matches(a, Some("ndx")));
        assert!(!pat.matches(a, Some("nbx")));
        let pat = ClientMatch::HostPattern("a*b*c".into());
        assert!(pat.matches(a, Some("aXbYbZc")));
        assert!(!pat.matches(a, Some("aXbYcZ")));
        assert!(ClientMatch::HostPattern("*".into()).matches(a, Some("")));
        assert!(ClientMatch::HostPattern("[x".into()).matches(a, Some("[x")));

        let ng = client("@trusted");
        assert!(!ng.matches(a, Some("trusted")), "netgroups never match");
        assert!(!ng.matches(a, None));

        // Hand-built invalid networks never match and do not panic.
        assert!(!ClientMatch::Net {
            addr: ip("10.0.0.0"),
            prefix: 33
        }
        .matches(a, None));
        assert!(!ClientMatch::Net {
            addr: ip("::"),
            prefix: 200
        }
        .matches(ip("::1"), None));
    }

    #[test]
    fn ipv4_mapped_clients_match_ipv4_rules() {
        let mapped = ip("::ffff:10.1.2.3");
        assert!(client("10.1.2.3").matches(mapped, None));
        assert!(client("10.0.0.0/8").matches(mapped, None));
        assert!(!client("11.0.0.0/8").matches(mapped, None));
        assert!(client("0.0.0.0/0").matches(mapped, None));
        assert!(
            !client("::/0").matches(mapped, None),
            "mapped clients are IPv4"
        );
        // Rules written in mapped form, even hand-built ones, match plain IPv4 clients.
        assert!(client("::ffff:10.1.2.3").matches(ip("10.1.2.3"), None));
        assert!(ClientMatch::Addr(mapped).matches(ip("10.1.2.3"), None));
        assert!(ClientMatch::Net {
            addr: ip("::ffff:10.0.0.0"),
            prefix: 104
        }
        .matches(ip("10.9.9.9"), None));
        let e = &parse("/x 10.0.0.0/8(rw) *(ro)")[0];
        assert!(e.options_for(mapped, None).is_some_and(|o| o.rw));
    }

    #[test]
    fn cidr_edges() {
        let any4 = client("0.0.0.0/0");
        assert!(any4.matches(ip("1.2.3.4"), None));
        assert!(any4.matches(ip("255.255.255.255"), None));
        assert!(!any4.matches(ip("::1"), None));
        let one = client("10.1.2.3/32");
        assert_eq!(
            one,
            ClientMatch::Net {
                addr: ip("10.1.2.3"),
                prefix: 32
            }
        );
        assert!(one.matches(ip("10.1.2.3"), None));
        assert!(!one.matches(ip("10.1.2.4"), None));
        let any6 = client("::/0");
        assert!(any6.matches(ip("fd00::1"), None));
        assert!(!any6.matches(ip("1.2.3.4"), None));
        let one6 = client("fd00::1/128");
        assert!(one6.matches(ip("fd00::1"), None));
        assert!(!one6.matches(ip("fd00::2"), None));
        assert_eq!(
            client("10.0.0.0/0.0.0.0"),
            ClientMatch::Net {
                addr: ip("0.0.0.0"),
                prefix: 0
            }
        );
        assert_eq!(
            client("10.1.2.3/255.255.255.255"),
            ClientMatch::Net {
                addr: ip("10.1.2.3"),
                prefix: 32
            }
        );
        assert_eq!(
            client("10.0.0.0/008"),
            ClientMatch::Net {
                addr: ip("10.0.0.0"),
                prefix: 8
            }
        );

        for bad in [
            "10.0.0.0/33",
            "fd00::/129",
            "10.0.0.0/",
            "10.0.0.0/-1",
            "10.0.0.0/+8",
            "10.0.0.0/0008",
            "10.0.0.0/256",
            "10.0.0.0/8/8",
            "10.0.0.0/255.0.255.0",
            "10.0.0.0/255.255.255.1",
            "fd00::/ffff::",
            "10.0.0/8",
            "host/24",
            "/8",
        ] {
            assert_eq!(
                parse_err(&format!("/x {bad}(rw)")),
                format!("/etc/exports:1: bad network {bad:?}"),
            );
        }
    }

    #[test]
    fn first_match_wins() {
        let e = &parse("/x 10.1.2.3(rw,no_root_squash) 10.0.0.0/8(ro) *(rw,all_squash)")[0];
        let o = e.options_for(ip("10.1.2.3"), None).expect("matches");
        assert!(o.rw);
        assert_eq!(o.squash, Squash::None);
        let o = e.options_for(ip("10.9.9.9"), None).expect("matches");
        assert!(!o.rw);
        assert_eq!(o.squash, Squash::Root);
        let o = e.options_for(ip("8.8.8.8"), None).expect("matches");
        assert_eq!(o.squash, Squash::All);

        // A broad rule first shadows later specific ones.
        let e = &parse("/x 10.0.0.0/8(ro) 10.1.2.3(rw)")[0];
        assert!(!e.options_for(ip("10.1.2.3"), None).expect("matches").rw);
        assert_eq!(
            e.rule_for(ip("10.1.2.3"), None).map(|r| &r.client),
            Some(&ClientMatch::Net {
                addr: ip("10.0.0.0"),
                prefix: 8
            })
        );

        let e = &parse("/x 10.0.0.0/8(rw) host.example.com(rw)")[0];
        assert!(e.options_for(ip("192.168.0.1"), None).is_none());
        assert!(e
            .options_for(ip("192.168.0.1"), Some("host.example.com"))
            .is_some());
    }

    #[test]
    fn path_only_and_default_options() {
        let e = parse("/x\n");
        assert_eq!(
            e[0].clients,
            vec![ClientRule {
                client: ClientMatch::Any,
                options: ExportOptions::default()
            }]
        );

        let e = &parse("/x -rw,async host1 host2(ro) -no_root_squash host3 host4(all_squash)")[0];
        let o: Vec<_> = e
            .clients
            .iter()
            .map(|c| (c.options.rw, c.options.sync, c.options.squash))
            .collect();
        assert_eq!(
            o,
            vec![
                (true, false, Squash::Root),
                (false, false, Squash::Root),
                (true, false, Squash::None),
                (true, false, Squash::All),
            ]
        );
        // Defaults apply to the line only.
        let e = parse("/x -rw h1\n/y h2");
        assert!(e[0].clients[0].options.rw);
        assert!(!e[1].clients[0].options.rw);
        // Defaults with no client export to everyone.
        let e = parse("/x -rw");
        assert_eq!(e[0].clients[0].client, ClientMatch::Any);
        assert!(e[0].clients[0].options.rw);
    }

    #[test]
    fn comments_and_blank_lines() {
        let text = "# header\n\n   \t\n/a h1(rw) # trailing comment (with parens)\n  # indented\n/b#c h2 #x\n/d\t*";
        let e = parse(text);
        let paths: Vec<_> = e.iter().map(|e| e.path.clone()).collect();
        assert_eq!(
            paths,
            vec![
                PathBuf::from("/a"),
                PathBuf::from("/b#c"),
                PathBuf::from("/d")
            ]
        );
        assert_eq!(e[0].clients.len(), 1);
        assert_eq!(e[1].clients.len(), 1);
        assert!(parse("").is_empty());
        assert!(parse("# only\n#comments\n").is_empty());
        // A `#` inside quotes is not a comment.
        assert_eq!(parse("\"/a #b\" h")[0].path, PathBuf::from("/a #b"));
        // CRLF line ends.
        let e = parse("/a h1(rw)\r\n/b h2\r\n");
        assert_eq!(e.len(), 2);
        assert!(e[0].clients[0].options.rw);
    }

    #[test]
    fn continuation_lines() {
        let text = "/a h1(rw) \\\n   h2(ro) \\  \n\th3\n/b h4";
        let e = parse(text);
        assert_eq!(e.len(), 2);
        let names: Vec<_> = e[0].clients.iter().map(|c| c.client.to_string()).collect();
        assert_eq!(names, vec!["h1", "h2", "h3"]);
        // Continuation directly after a token, and a comment after a continued line.
        let e = parse("/a h1\\\nh2 # c\n/b");
        assert_eq!(e[0].clients.len(), 2);
        assert_eq!(e.len(), 2);
        // Errors name the physical line of the offending token.
        assert_eq!(
            parse_err("/a h1 \\\n h2 \\\n h3(rww)"),
            "/etc/exports:3: unknown option \"rww\""
        );
        // A backslash at the very end of the file is harmless.
        assert_eq!(parse("/a h1 \\").len(), 1);
        // A backslash in the middle of a token is literal.
        assert_eq!(parse("/a\\b h")[0].path, PathBuf::from("/a\\b"));
    }

    #[test]
    fn quoted_and_escaped_paths() {
        assert_eq!(
            parse("\"/srv/my data\" h(rw)")[0].path,
            PathBuf::from("/srv/my data")
        );
        assert_eq!(
            parse("/srv/my\\040data h")[0].path,
            PathBuf::from("/srv/my data")
        );
        assert_eq!(
            parse("\"/srv/a\\040b c\" h")[0].path,
            PathBuf::from("/srv/a b c")
        );
        assert_eq!(
            parse("/srv/\"x y\"/z h")[0].path,
            PathBuf::from("/srv/x y/z")
        );
        assert_eq!(
            parse("/srv/tab\\011x")[0].path,
            PathBuf::from("/srv/tab\tx")
        );
        assert_eq!(parse("/srv/\\04x")[0].path, PathBuf::from("/srv/\\04x"));
        assert_eq!(parse("/srv/\\400")[0].path, PathBuf::from("/srv/\\400"));
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt;
            let p = &parse("/srv/\\377")[0].path;
            assert_eq!(p.as_os_str().as_bytes(), b"/srv/\xff");
        }
        assert_eq!(
            parse("/srv/caf\u{e9} h")[0].path,
            PathBuf::from("/srv/caf\u{e9}")
        );
        assert_eq!(
            parse_err("\"/a b h"),
            "/etc/exports:1: missing closing quote"
        );
        assert_eq!(
            parse_err("/ok\n\"/a b\nh"),
            "/etc/exports:2: missing closing quote"
        );
        assert_eq!(parse_err("\"\" h"), "/etc/exports:1: path must be absolute");
        assert_eq!(
            parse_err("/a\\000b h"),
            "/etc/exports:1: path contains a NUL byte"
        );
    }

    #[test]
    fn error_messages() {
        let cases: &[(&str, &str)] = &[
            (
                "/a h\n/b h\n/c h(rww)",
                "/etc/exports:3: unknown option \"rww\"",
            ),
            ("srv h(rw)", "/etc/exports:1: path must be absolute"),
            ("\n\nh(rw) /srv", "/etc/exports:3: path must be absolute"),
            ("/a h(anonuid=x)", "/etc/exports:1: bad anonuid \"x\""),
            ("/a h(anonuid=-1)", "/etc/exports:1: bad anonuid \"-1\""),
            ("/a h(anonuid=+1)", "/etc/exports:1: bad anonuid \"+1\""),
            (
                "/a h(anonuid=4294967296)",
                "/etc/exports:1: bad anonuid \"4294967296\"",
            ),
            ("/a h(anonuid=)", "/etc/exports:1: bad anonuid \"\""),
            ("/a h(anongid=y)", "/etc/exports:1: bad anongid \"y\""),
            (
                "/a h(anonuid)",
                "/etc/exports:1: option \"anonuid\" needs a value",
            ),
            (
                "/a h(fsid)",
                "/etc/exports:1: option \"fsid\" needs a value",
            ),
            ("/a h(fsid=abc)", "/etc/exports:1: bad fsid \"abc\""),
            ("/a h(fsid=-1)", "/etc/exports:1: bad fsid \"-1\""),
            ("/a h(fsid=)", "/etc/exports:1: bad fsid \"\""),
            (
                "/a 10.0.0.0/33(rw)",
                "/etc/exports:1: bad network \"10.0.0.0/33\"",
            ),
            ("/a h(rw", "/etc/exports:1: missing \")\""),
            ("/a h(rw, sync)", "/etc/exports:1: missing \")\""),
            (
                "/a h(rw)x",
                "/etc/exports:1: unexpected text \"x\" after \")\"",
            ),
            (
                "/a h(rw)(ro)",
                "/etc/exports:1: unexpected text \"(ro)\" after \")\"",
            ),
            ("/a h(rw,,sync)", "/etc/exports:1: empty option"),
            ("/a h(rw,)", "/etc/exports:1: empty option"),
            ("/a -", "/etc/exports:1: empty option"),
            ("/a h(rw=foo)", "/etc/exports:1: unknown option \"rw=foo\""),
            ("/a h(RW)", "/etc/exports:1: unknown option \"RW\""),
            ("/a -rww h", "/etc/exports:1: unknown option \"rww\""),
            (
                "/a h(sec=krb5)",
                "/etc/exports:1: unsupported security flavor \"krb5\" (only sys and none)",
            ),
            (
                "/a h(sec=sys:krb5p)",
                "/etc/exports:1: unsupported security flavor \"krb5p\" (only sys and none)",
            ),
            ("/a h(mp=rel)", "/etc/exports:1: bad mountpoint \"rel\""),
            ("/a h(mp=)", "/etc/exports:1: bad mountpoint \"\""),
            ("/a bad!host", "/etc/exports:1: bad client \"bad!host\""),
            ("/a h)", "/etc/exports:1: bad client \"h)\""),
            ("/a @", "/etc/exports:1: bad client \"@\""),
            ("/a @a/b", "/etc/exports:1: bad client \"@a/b\""),
            ("/a ..", "/etc/exports:1: bad client \"..\""),
            ("/a *.exa%mple", "/etc/exports:1: bad client \"*.exa%mple\""),
            (
                "/a h\n# c\n/a/ h2",
                "/etc/exports:3: duplicate export \"/a/\" (first at line 1)",
            ),
            (
                "/a h\n/b h\n/a h2",
                "/etc/exports:3: duplicate export \"/a\" (first at line 1)",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(&parse_err(text), want, "for {text:?}");
        }

        let e = parse_exports("/a h(rww)", "exports").expect_err("must fail");
        assert_eq!(e.file, "exports");
        assert_eq!(e.line, 1);
        assert!(matches!(&e.kind, ExportsErrorKind::UnknownOption(o) if o == "rww"));
        assert!(std::error::Error::source(&e).is_none());
    }

    #[test]
    fn load_from_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("exports");
        std::fs::write(&path, "/srv 10.0.0.0/8(rw)\n/home *(ro)\n").expect("write");
        let e = load_exports(&path).expect("loads");
        assert_eq!(e.len(), 2);
        assert!(e[0].options_for(ip("10.0.0.1"), None).is_some_and(|o| o.rw));

        std::fs::write(&path, "/srv h\n/x h(bogus)\n").expect("write");
        let err = load_exports(&path).expect_err("bad option");
        assert_eq!(
            err.to_string(),
            format!("{}:2: unknown option \"bogus\"", path.display())
        );

        std::fs::write(&path, b"/srv h\n/x\xff h\n").expect("write");
        let err = load_exports(&path).expect_err("not utf-8");
        assert_eq!(
            err.to_string(),
            format!("{}:2: not valid UTF-8", path.display())
        );

        let missing = dir.path().join("missing");
        let err = load_exports(&missing).expect_err("missing file");
        assert_eq!(err.line, 0);
        assert!(
            matches!(&err.kind, ExportsErrorKind::Io(io) if io.kind() == std::io::ErrorKind::NotFound)
        );
        let msg = err.to_string();
        assert!(
            msg.starts_with(&format!("{}: cannot read: ", missing.display())),
            "{msg}"
        );
        assert!(std::error::Error::source(&err).is_some());
    }

    /// Lines built from the characters the syntax cares about.
    fn line_strategy() -> impl Strategy<Value = String> {
        proptest::string::string_regex(
            concat!(
                r#"[ \t]{0,2}(/[a-z\\0-7#]{0,8}|"/[a-z #\\0-7]{0,8}")?"#,
                r#"( {1,2}(\*|[a-z]{1,6}(\.[a-z]{1,4})?|\*\.[a-z]{1,4}|@[a-z]{1,4}"#,
                r#"|10\.[0-9]{1,3}\.0\.0/[0-9]{1,2}|fd00::[0-9]{0,2}(/[0-9]{1,3})?"#,
                r#"|-|[-a-z0-9*?@./:\[\]!()#\\]{0,10})"#,
                r#"(\(((rw|ro|sync|async|no_root_squash|all_squash|anonuid=[0-9x]{1,3}"#,
                r#"|fsid=[0-9a-z]{1,4}|sec=(sys|krb5)|crossmnt|[a-z_=0-9:/. -]{0,8}),?){0,4}\)?)?){0,4}"#,
                r#"[ \t]*(\\|#[^\n]{0,6})?"#,
            ),
        )
        .expect("valid regex")
    }

    proptest! {
        #[test]
        fn never_panics_on_arbitrary_text(text in any::<String>()) {
            if let Ok(entries) = parse_exports(&text, "f") {
                for e in &entries {
                    let _ = e.options_for(ip("10.0.0.1"), Some("h"));
                }
            }
        }

        #[test]
        fn never_panics_on_line_shaped_text(
            lines in proptest::collection::vec(line_strategy(), 0..8),
            crlf in any::<bool>(),
            v4 in any::<u32>(),
            v6 in any::<u128>(),
            name in "[a-z.*?\\[\\]-]{0,10}",
        ) {
            let text = lines.join(if crlf { "\r\n" } else { "\n" });
            match parse_exports(&text, "f") {
                Ok(entries) => {
                    for e in &entries {
                        prop_assert!(e.path.is_absolute());
                        prop_assert!(!e.clients.is_empty());
                        for addr in [IpAddr::V4(Ipv4Addr::from(v4)), IpAddr::V6(Ipv6Addr::from(v6))] {
                            let _ = e.options_for(addr, Some(&name));
                            let _ = e.options_for(addr, None);
                        }
                    }
                }
                Err(e) => {
                    prop_assert!(e.line >= 1);
                    prop_assert!(e.to_string().starts_with("f:"));
                }
            }
        }

        #[test]
        fn glob_never_panics(pattern in "[a-c*?\\[\\]!^-]{0,12}", name in "[a-c.\\[\\]-]{0,12}") {
            let _ = glob_match(pattern.as_bytes(), name.as_bytes());
        }

        #[test]
        fn networks_contain_their_own_address(v4 in any::<u32>(), prefix in 0u8..=32) {
            let addr = IpAddr::V4(Ipv4Addr::from(v4));
            let entries = parse_exports(&format!("/x {addr}/{prefix}"), "f");
            prop_assert!(entries.is_ok());
            if let Ok(entries) = entries {
                prop_assert!(entries[0].clients[0].client.matches(addr, None));
                let mapped = IpAddr::V6(Ipv4Addr::from(v4).to_ipv6_mapped());
                prop_assert!(entries[0].clients[0].client.matches(mapped, None));
            }
        }
    }
}
