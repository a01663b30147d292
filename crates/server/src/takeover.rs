//! What a head does when it takes a serving identity over and when it gives it up
//! (docs/ha.md): the service address clients mount moves with the identity (`ip addr add` on
//! the head's device, then gratuitous ARP so that clients and switches learn where it is now),
//! and the operator's `--takeover-cmd` runs for anything else the site needs (a cloud API call
//! to move an elastic address, a DNS update, a log).

use std::net::IpAddr;
use std::process::Command;

/// The address clients mount, as `ADDR/PREFIX@DEVICE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceAddress {
    /// The address itself.
    pub addr: IpAddr,
    /// Its prefix length on the device.
    pub prefix: u8,
    /// The network device it is added to.
    pub device: String,
}

impl std::str::FromStr for ServiceAddress {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("{s}: not ADDR/PREFIX@DEVICE (e.g. 192.0.2.10/24@eth0)");
        let (cidr, device) = s.split_once('@').ok_or_else(bad)?;
        let (addr, prefix) = cidr.split_once('/').ok_or_else(bad)?;
        let addr: IpAddr = addr.parse().map_err(|_| bad())?;
        let prefix: u8 = prefix.parse().map_err(|_| bad())?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        // a device name as the kernel takes it: at most 15 bytes, no '/' or whitespace
        let device_ok = !device.is_empty()
            && device.len() <= 15
            && !device.contains(|c: char| c == '/' || c.is_whitespace());
        if prefix > max || !device_ok {
            return Err(bad());
        }
        Ok(ServiceAddress {
            addr,
            prefix,
            device: device.to_owned(),
        })
    }
}

impl std::fmt::Display for ServiceAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}@{}", self.addr, self.prefix, self.device)
    }
}

/// The steps of a takeover and of a hand-back for one identity.
#[derive(Debug, Clone)]
pub struct Takeover {
    /// The identity (`--node-id`), passed to the command.
    pub node_id: String,
    /// The address that follows the identity, if rnfsd moves one itself.
    pub address: Option<ServiceAddress>,
    /// The operator's command (run by `sh -c`), if any.
    pub command: Option<String>,
}

/// Which way an identity moves, as the command sees it in `RNFS_EVENT`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// This head now holds the identity (before it serves).
    Claimed,
    /// This head gives it up (stopping) or lost it (before it exits).
    Released,
}

impl Event {
    fn name(self) -> &'static str {
        match self {
            Event::Claimed => "claimed",
            Event::Released => "released",
        }
    }
}

impl Takeover {
    /// Whether there is anything to do.
    pub fn is_empty(&self) -> bool {
        self.address.is_none() && self.command.is_none()
    }

    /// Brings the identity's address up on this head, then runs the command; an error when
    /// either fails (the head must not serve an identity clients cannot reach).
    pub fn claimed(&self) -> Result<(), String> {
        if let Some(a) = &self.address {
            add_address(a)?;
            announce(a);
        }
        self.run(Event::Claimed)
    }

    /// Runs the command, then takes the address down; failures are logged (the identity is
    /// going whatever they say).
    pub fn released(&self) {
        if let Err(e) = self.run(Event::Released) {
            tracing::warn!(error = %e, "takeover command on release");
        }
        if let Some(a) = &self.address {
            match ip(&["addr", "del", &cidr(a), "dev", &a.device]) {
                Ok(()) => tracing::info!(address = %a, "service address removed"),
                Err(e) => {
                    tracing::warn!(address = %a, error = %e, "cannot remove the service address")
                }
            }
        }
    }

    fn run(&self, event: Event) -> Result<(), String> {
        let Some(cmd) = &self.command else {
            return Ok(());
        };
        let mut c = Command::new("/bin/sh");
        c.arg("-c")
            .arg(cmd)
            .env("RNFS_EVENT", event.name())
            .env("RNFS_NODE_ID", &self.node_id);
        if let Some(a) = &self.address {
            c.env("RNFS_SERVICE_ADDRESS", a.to_string());
        }
        let out = c
            .output()
            .map_err(|e| format!("--takeover-cmd: cannot run /bin/sh: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "--takeover-cmd ({}) {}: {}",
                event.name(),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        tracing::info!(event = event.name(), "takeover command done");
        Ok(())
    }
}

fn cidr(a: &ServiceAddress) -> String {
    format!("{}/{}", a.addr, a.prefix)
}

/// Adds the address; one already there (this head's own, from before a restart) is fine.
fn add_address(a: &ServiceAddress) -> Result<(), String> {
    match ip(&["addr", "add", &cidr(a), "dev", &a.device]) {
        Ok(()) => {
            tracing::info!(address = %a, "service address added");
            Ok(())
        }
        Err(e) if e.contains("File exists") => {
            tracing::info!(address = %a, "service address already on the device");
            Ok(())
        }
        Err(e) => Err(format!("cannot add the service address {a}: {e}")),
    }
}

/// Tells the link the address has moved: gratuitous ARP for IPv4 (iputils' arping); the
/// kernel announces a new IPv6 address itself (unsolicited neighbour advertisements follow
/// duplicate address detection).
fn announce(a: &ServiceAddress) {
    let IpAddr::V4(v4) = a.addr else {
        return;
    };
    let (addr, a) = (v4.to_string(), a.clone());
    // arping takes a second between its two packets: the head serves meanwhile
    let sent = std::thread::Builder::new()
        .name("arping".into())
        .spawn(move || {
            let out = Command::new("arping")
                .args(["-U", "-c", "2", "-w", "3", "-I", &a.device, &addr])
                .output();
            log_announced(&a, out);
        });
    if let Err(e) = sent {
        tracing::warn!(error = %e, "cannot start arping");
    }
}

fn log_announced(a: &ServiceAddress, out: std::io::Result<std::process::Output>) {
    match out {
        Ok(o) if o.status.success() => {
            tracing::info!(address = %a, "gratuitous ARP sent");
        }
        Ok(o) => tracing::warn!(address = %a, stderr = %String::from_utf8_lossy(&o.stderr).trim(),
            "arping failed: clients on the link learn the address's new place when their ARP entries expire"),
        Err(e) => tracing::warn!(address = %a, error = %e,
            "arping not found (Debian's iputils-arping): clients on the link learn the address's new place when their ARP entries expire"),
    }
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run ip (iproute2): {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_addresses_parse_and_print_back() {
        let a: ServiceAddress = "192.0.2.10/24@eth0".parse().unwrap();
        assert_eq!(a.prefix, 24);
        assert_eq!(a.device, "eth0");
        assert_eq!(a.to_string(), "192.0.2.10/24@eth0");
        let b: ServiceAddress = "2001:db8::10/64@bond0.12".parse().unwrap();
        assert!(b.addr.is_ipv6());
        for bad in [
            "192.0.2.10@eth0",
            "192.0.2.10/24",
            "192.0.2.10/33@eth0",
            "2001:db8::1/129@eth0",
            "x/24@eth0",
            "192.0.2.10/24@",
            "192.0.2.10/24@a-very-long-device-name",
            "192.0.2.10/24@et h0",
        ] {
            assert!(bad.parse::<ServiceAddress>().is_err(), "{bad}");
        }
    }
}
