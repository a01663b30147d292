//! RPC universal addresses (RFC 5665 section 5.2.3): an IP address and port as text, the
//! port's two bytes as decimals after the address (`192.0.2.1.8.1` is port 2049), with the
//! netid that names the transport and address family (`tcp`, `tcp6`, `rdma`, `rdma6`).

use std::net::{IpAddr, SocketAddr};

/// The universal address of `addr`.
pub fn format(addr: SocketAddr) -> String {
    let p = addr.port();
    format!("{}.{}.{}", addr.ip(), p >> 8, p & 0xff)
}

/// The socket address of universal address `s`; None when it is not one.
pub fn parse(s: &str) -> Option<SocketAddr> {
    let (rest, lo) = s.rsplit_once('.')?;
    let (ip, hi) = rest.rsplit_once('.')?;
    let (hi, lo): (u8, u8) = (hi.parse().ok()?, lo.parse().ok()?);
    let ip: IpAddr = ip.parse().ok()?;
    Some(SocketAddr::new(ip, u16::from(hi) << 8 | u16::from(lo)))
}

/// The netid of a transport (`tcp` or `rdma`) for `addr`'s family.
pub fn netid(transport: &str, addr: SocketAddr) -> String {
    match addr {
        SocketAddr::V4(_) => transport.to_owned(),
        SocketAddr::V6(_) => format!("{transport}6"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_families_both_ways() {
        for (a, u) in [
            ("192.0.2.1:2049", "192.0.2.1.8.1"),
            ("10.0.0.7:20049", "10.0.0.7.78.81"),
            ("[2001:db8::1]:2049", "2001:db8::1.8.1"),
            ("[::1]:1", "::1.0.1"),
        ] {
            let a: SocketAddr = a.parse().unwrap();
            assert_eq!(format(a), u);
            assert_eq!(parse(u), Some(a));
        }
        assert_eq!(netid("tcp", "[::1]:1".parse().unwrap()), "tcp6");
        assert_eq!(netid("rdma", "127.0.0.1:1".parse().unwrap()), "rdma");
        for bad in ["", "1.2.3.4", "1.2.3.4.256.1", "x.1.1", "1.2.3.4.1.x"] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }
}
