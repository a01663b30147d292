//! Which clients an export rule covers: addresses, networks, host names and patterns.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::ExportsErrorKind;

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

/// Parse a client specifier (the part before any `(`).
pub(super) fn parse_client(name: &str) -> Result<ClientMatch, ExportsErrorKind> {
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
pub(super) fn glob_match(pattern: &[u8], name: &[u8]) -> bool {
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
