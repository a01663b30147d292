//! The exports(5) parser: `vfs::exports::parse_exports` on arbitrary text (invalid UTF-8 is
//! replaced, as the text-level parser only takes `&str`).
//!
//! Checks: no panic or hang; errors and client specifiers format; a parsed address rule
//! matches its own address, a network its own network address, a host name itself; rule
//! lookup answers for a few client addresses.
#![no_main]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use libfuzzer_sys::fuzz_target;
use vfs::exports::{parse_exports, ClientMatch};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    match parse_exports(&text, "fuzz") {
        Err(e) => {
            let _ = e.to_string();
        }
        Ok(entries) => {
            let probes = [
                IpAddr::V4(Ipv4Addr::LOCALHOST),
                IpAddr::V4(Ipv4Addr::new(10, 1, 2, 3)),
                IpAddr::V6(Ipv6Addr::LOCALHOST),
                IpAddr::V6(Ipv4Addr::new(192, 168, 0, 1).to_ipv6_mapped()),
            ];
            for entry in &entries {
                assert!(entry.path.is_absolute(), "relative export path");
                for rule in &entry.clients {
                    let _ = rule.client.to_string();
                    match &rule.client {
                        ClientMatch::Addr(a) => {
                            assert!(rule.client.matches(*a, None), "address rule misses itself")
                        }
                        ClientMatch::Net { addr, .. } => {
                            assert!(rule.client.matches(*addr, None), "network misses itself")
                        }
                        ClientMatch::Host(h) => assert!(
                            rule.client.matches(probes[0], Some(h)),
                            "host rule misses its own name"
                        ),
                        _ => {}
                    }
                }
                for ip in probes {
                    let _ = entry.options_for(ip, Some("client.example.com"));
                    let _ = entry.rule_for(ip, None);
                }
            }
        }
    }
});
