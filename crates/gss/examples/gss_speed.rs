//! MIC, wrap and unwrap throughput of rnfs's Kerberos tokens (crates/gss/src/cfx.rs) on this
//! machine, one thread, 1 MiB messages, initiator to acceptor: the ceiling of krb5i and krb5p
//! per core. Needs a realm: run it with the environment of a test KDC (`gss::kdc::Kdc::env`)
//! or a ticket and the server's keytab in KRB5_KTNAME.
//!
//!   cargo run --release -p rnfs-gss --example gss_speed -- nfs@localhost

use std::sync::Arc;
use std::time::Instant;

use gss::{IdentityCache, Krb5Acceptor, Krb5Initiator};
use sunrpc::gss::client::Initiator;
use sunrpc::gss::mech::Mechanism;

fn main() {
    let target = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "nfs@localhost".into());
    let keytab = std::env::var("KRB5_KTNAME").unwrap_or_default();
    let acc =
        Krb5Acceptor::new(&keytab, None, Arc::new(IdentityCache::default())).expect("acceptor");
    let mut server = acc.new_context();
    let mut client = Krb5Initiator::new(None, &target).expect("initiator");
    let (tok, _) = client.step(None).expect("AP-REQ");
    let s = server.step(&tok).expect("accept");
    client.step(Some(&s.token)).expect("AP-REP");
    let msg = vec![7u8; 1 << 20];
    let n = 200;
    let t = Instant::now();
    for _ in 0..n {
        let mic = client.get_mic(&msg).unwrap();
        server.verify_mic(&msg, &mic).unwrap();
    }
    let mb = (n as f64) * 1.048576 / t.elapsed().as_secs_f64();
    println!("MIC + verify: {:.0} MB/s", mb);
    let t = Instant::now();
    let mut toks = Vec::with_capacity(n);
    for _ in 0..n {
        toks.push(client.wrap(&msg).unwrap());
    }
    let wrap = t.elapsed();
    let t = Instant::now();
    for w in &toks {
        server.unwrap(w).unwrap();
    }
    let unwrap = t.elapsed();
    let mb = |d: std::time::Duration| (n as f64) * 1.048576 / d.as_secs_f64();
    println!("wrap: {:.0} MB/s, unwrap: {:.0} MB/s", mb(wrap), mb(unwrap));
}
