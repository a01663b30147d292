//! The token work of one small RPCSEC_GSS call and its reply, as rnfsd does it for a 4 KiB READ
//! (crates/sunrpc/src/gss: the header MIC checked, the arguments checked or unwrapped, the
//! results signed or wrapped, the reply verifier signed), on keys made up here: no realm needed.
//! Prints the time per call for krb5 (MICs only), krb5i and krb5p, one thread, so that two
//! builds can be compared side by side on one machine (also under QEMU's TCG, where the harness's
//! guest runs: `qemu-x86_64 -cpu max target/release/examples/cfx_calls`).
//!
//!   cargo run --release -p rnfs-gss --example cfx_calls -- [CALLS] [REPLY_BYTES] [ENCTYPE]

use std::time::Instant;

use gss::cfx::Cfx;

fn main() {
    let mut args = std::env::args().skip(1);
    let calls: u32 = args.next().and_then(|s| s.parse().ok()).unwrap_or(20_000);
    let reply_len: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(4096);
    let enctype: u32 = args.next().and_then(|s| s.parse().ok()).unwrap_or(18);
    let key_len = if enctype == 17 || enctype == 19 {
        16
    } else {
        32
    };
    let key: Vec<u8> = (0..key_len as u8).map(|i| i.wrapping_mul(37)).collect();
    let client = Cfx::new(enctype, &key, false, true, 0).expect("initiator side");
    let server = Cfx::new(enctype, &key, true, true, 0).expect("acceptor side");
    // a READ call: its RPC header (signed by the credential's MIC) and its arguments (a
    // SEQUENCE, PUTFH, READ compound's size), then 4 KiB of data in the reply
    let header = vec![0x11u8; 120];
    let call_args = vec![0x22u8; 140];
    let reply = vec![0x33u8; reply_len];
    let seq = 7u32.to_be_bytes();
    let hdr_mic = client.get_mic(&[&header]);
    let args_mic = client.get_mic(&[&seq, &call_args]);
    let args_tok = client.wrap(&[&seq, &call_args], [5u8; 16]);

    let per_call = |f: &mut dyn FnMut()| {
        let t = Instant::now();
        for _ in 0..calls {
            f();
        }
        t.elapsed().as_secs_f64() * 1e6 / f64::from(calls)
    };
    let krb5 = per_call(&mut || {
        server.verify_mic(&[&header], &hdr_mic).expect("header MIC");
        std::hint::black_box(server.get_mic(&[&seq]));
    });
    let krb5i = per_call(&mut || {
        server.verify_mic(&[&header], &hdr_mic).expect("header MIC");
        server
            .verify_mic(&[&seq, &call_args], &args_mic)
            .expect("arguments' MIC");
        std::hint::black_box(server.get_mic(&[&seq, &reply]));
        std::hint::black_box(server.get_mic(&[&seq]));
    });
    let krb5p = per_call(&mut || {
        server.verify_mic(&[&header], &hdr_mic).expect("header MIC");
        let mut tok = args_tok.clone();
        server.unwrap(&mut tok).expect("arguments' token");
        std::hint::black_box(server.wrap(&[&seq, &reply], [9u8; 16]));
        std::hint::black_box(server.get_mic(&[&seq]));
    });
    println!(
        "enctype {enctype}, {reply_len}-byte replies, {calls} calls: krb5 {krb5:.2} us, krb5i {krb5i:.2} us, krb5p {krb5p:.2} us per call"
    );
}
