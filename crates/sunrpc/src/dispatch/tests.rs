//! The dispatcher's routing, reply rules, DRC, try-without-blocking path and metrics.

use super::*;
use crate::msg::AuthSys;
use std::sync::atomic::{AtomicU32, Ordering};

struct Echo {
    calls: AtomicU32,
}
impl Program for Echo {
    fn program(&self) -> u32 {
        400_000
    }
    fn versions(&self) -> (u32, u32) {
        (2, 3)
    }
    fn proc_name(&self, _v: u32, p: u32) -> Option<&'static str> {
        match p {
            0 => Some("null"),
            1 => Some("echo"),
            2 => Some("fail"),
            3 => Some("store"),
            _ => None,
        }
    }
    fn skips_drc(&self, _v: u32, p: u32, _args: &Decoder) -> bool {
        p != 1 && p != 3
    }
    fn call(&self, ctx: &CallContext, mut a: Decoder, r: &mut Encoder) -> Result<(), ProcError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        match ctx.proc_ {
            0 => Ok(()),
            1 => {
                let v = a.u32()?;
                r.u32(v + 1);
                Ok(())
            }
            3 => {
                r.u32(self.calls.load(Ordering::SeqCst));
                Ok(())
            }
            _ => Err(ProcError::SystemErr),
        }
    }
    /// NULL completes here; "fail" would have to wait; "echo" is never tried here; "store"
    /// (cached, as a WRITE) completes here when its argument is 0 (its file in memory).
    fn call_nonblocking(
        &self,
        ctx: &CallContext,
        a: Decoder,
        r: &mut Encoder,
    ) -> Option<Result<(), ProcError>> {
        match ctx.proc_ {
            0 => Some(self.call(ctx, a, r)),
            3 if a.clone().u32().ok()? == 0 => Some(self.call(ctx, a, r)),
            _ => None,
        }
    }
}

fn disp() -> (Dispatcher, Arc<Echo>) {
    let mut d = Dispatcher::new(16, Arc::new(RpcMetrics::default()));
    let p = Arc::new(Echo {
        calls: AtomicU32::new(0),
    });
    d.register(p.clone());
    (d, p)
}

fn call(prog: u32, vers: u32, proc_: u32, args: &[u32]) -> Bytes {
    call_xid(9, prog, vers, proc_, args)
}

fn call_xid(xid: u32, prog: u32, vers: u32, proc_: u32, args: &[u32]) -> Bytes {
    let mut e = Encoder::new();
    let cred = Credential::Sys(AuthSys {
        stamp: 0,
        machine: Bytes::new(),
        uid: 1,
        gid: 1,
        gids: vec![],
    });
    msg::encode_call(&mut e, xid, prog, vers, proc_, &cred);
    for a in args {
        e.u32(*a);
    }
    e.finish().to_bytes()
}

fn words(r: Reply) -> Vec<u32> {
    r.to_bytes()
        .chunks(4)
        .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

const PEER: &str = "127.0.0.1:700";

/// Where a call from [`PEER`] over TCP comes from, with nothing else the transport offers.
fn tcp_origin() -> Origin {
    Origin {
        peer: PEER.parse().unwrap(),
        local: None,
        transport: TransportKind::Tcp,
        back: None,
        bulk: None,
        pages: false,
        client: None,
    }
}

fn run(d: &Dispatcher, m: Bytes) -> Option<Vec<u32>> {
    d.dispatch(m, PEER.parse().unwrap(), TransportKind::Tcp)
        .map(words)
}

#[tokio::test]
async fn a_stopped_dispatcher_drops_new_calls_and_waits_for_running_ones() {
    let (d, p) = disp();
    let d = Arc::new(d);
    assert!(run(&d, call(400_000, 3, 1, &[1])).is_some());
    // a call running on another thread when the stop comes
    let (go, wait) = std::sync::mpsc::channel::<()>();
    let entered = Arc::new(std::sync::Barrier::new(2));
    let (d2, e2) = (d.clone(), entered.clone());
    let t = std::thread::spawn(move || {
        let g = d2.running.enter();
        e2.wait();
        wait.recv().ok();
        drop(g);
    });
    entered.wait();
    d.stop();
    assert!(
        run(&d, call(400_000, 3, 1, &[2])).is_none(),
        "new calls are dropped"
    );
    let origin = tcp_origin();
    assert!(matches!(
        d.dispatch_nonblocking(&call(400_000, 3, 0, &[]), &origin, false),
        Some(None)
    ));
    assert_eq!(p.calls.load(Ordering::SeqCst), 1);
    assert!(!d.drained(std::time::Duration::from_millis(50)).await);
    go.send(()).unwrap();
    assert!(d.drained(std::time::Duration::from_secs(5)).await);
    t.join().unwrap();
}

#[test]
fn success_and_errors() {
    let (d, _) = disp();
    assert_eq!(
        run(&d, call(400_000, 3, 1, &[41])).unwrap(),
        [9, 1, 0, 0, 0, 0, 42]
    );
    assert_eq!(
        run(&d, call(400_001, 3, 1, &[])).unwrap(),
        [9, 1, 0, 0, 0, 1]
    );
    assert_eq!(
        run(&d, call(400_000, 4, 1, &[])).unwrap(),
        [9, 1, 0, 0, 0, 2, 2, 3]
    );
    assert_eq!(
        run(&d, call(400_000, 3, 7, &[])).unwrap(),
        [9, 1, 0, 0, 0, 3]
    );
    assert_eq!(
        run(&d, call(400_000, 3, 1, &[])).unwrap(),
        [9, 1, 0, 0, 0, 4]
    );
    assert_eq!(
        run(&d, call(400_000, 3, 2, &[])).unwrap(),
        [9, 1, 0, 0, 0, 5]
    );
    assert_eq!(run(&d, Bytes::from_static(&[1, 2])), None);
}

#[test]
fn rpc_mismatch_and_auth_error() {
    let (d, _) = disp();
    let mut m = call(400_000, 3, 0, &[]).to_vec();
    m[11] = 4;
    assert_eq!(run(&d, Bytes::from(m)).unwrap(), [9, 1, 1, 0, 2, 2]);
    let mut m = call(400_000, 3, 0, &[]).to_vec();
    m[27] = 77;
    assert_eq!(run(&d, Bytes::from(m)).unwrap(), [9, 1, 1, 1, 1]);
}

#[test]
fn duplicate_non_idempotent_call_is_answered_from_cache() {
    let (d, p) = disp();
    let a = run(&d, call(400_000, 3, 1, &[1])).unwrap();
    let b = run(&d, call(400_000, 3, 1, &[1])).unwrap();
    assert_eq!(a, b);
    assert_eq!(p.calls.load(Ordering::SeqCst), 1);
    // Idempotent procedures are executed again.
    run(&d, call(400_000, 3, 0, &[])).unwrap();
    run(&d, call(400_000, 3, 0, &[])).unwrap();
    assert_eq!(p.calls.load(Ordering::SeqCst), 3);
}

#[test]
fn only_idempotent_calls_that_need_not_wait_run_without_a_thread() {
    let (d, p) = disp();
    let origin = tcp_origin();
    let null = call(400_000, 3, 0, &[]);
    let reply = d
        .dispatch_nonblocking(&null, &origin, false)
        .expect("NULL runs here");
    assert_eq!(reply.map(words), run(&d, null));
    assert_eq!(p.calls.load(Ordering::SeqCst), 2);
    // would wait: left to dispatch_from
    assert!(d
        .dispatch_nonblocking(&call(400_000, 3, 2, &[]), &origin, false)
        .is_none());
    // not tried here: not run, and the DRC is untouched
    let echo = call(400_000, 3, 1, &[41]);
    assert!(d.dispatch_nonblocking(&echo, &origin, false).is_none());
    assert_eq!(p.calls.load(Ordering::SeqCst), 2);
    assert_eq!(run(&d, echo).unwrap(), [9, 1, 0, 0, 0, 0, 42]);
    // what it cannot decode or route is dispatch_from's to answer
    assert!(d
        .dispatch_nonblocking(&Bytes::from_static(&[1, 2]), &origin, false)
        .is_none());
    assert!(d
        .dispatch_nonblocking(&call(400_001, 3, 0, &[]), &origin, false)
        .is_none());
}

#[test]
fn cached_calls_tried_without_a_thread_go_through_the_cache() {
    let (d, p) = disp();
    let origin = tcp_origin();
    let here = call_xid(1, 400_000, 3, 3, &[0]);
    let first = d
        .dispatch_nonblocking(&here, &origin, false)
        .expect("run here");
    let first = first.map(words).unwrap();
    assert_eq!(first, [1, 1, 0, 0, 0, 0, 1]);
    // a retransmission gets the reply kept, here or on a thread, without running again
    let again = d
        .dispatch_nonblocking(&here, &origin, false)
        .expect("answered here");
    assert_eq!(again.map(words).unwrap(), first);
    assert_eq!(run(&d, here).unwrap(), first);
    assert_eq!(p.calls.load(Ordering::SeqCst), 1);
    // one that gives up leaves no mark: the thread that runs it again is not taken for a
    // retransmission (which an entry left in progress would make it)
    let there = call_xid(2, 400_000, 3, 3, &[1]);
    assert!(d.dispatch_nonblocking(&there, &origin, false).is_none());
    assert_eq!(run(&d, there.clone()).unwrap(), [2, 1, 0, 0, 0, 0, 2]);
    assert_eq!(run(&d, there).unwrap(), [2, 1, 0, 0, 0, 0, 2]);
    assert_eq!(p.calls.load(Ordering::SeqCst), 2);
}

/// A transport with one 64-byte buffer, to see where bulk payloads end up.
struct OneBuf(parking_lot::Mutex<Option<Vec<u8>>>);

struct VecBuf(Vec<u8>);

impl BulkBuf for VecBuf {
    fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.0
    }
    fn freeze(self: Box<Self>, len: usize) -> Bytes {
        let mut v = self.0;
        v.truncate(len);
        Bytes::from(v)
    }
}

impl BulkAlloc for OneBuf {
    fn alloc(&self, len: usize) -> Option<Box<dyn BulkBuf>> {
        let v = self.0.lock().take()?;
        (len <= v.len()).then(|| Box::new(VecBuf(v)) as Box<dyn BulkBuf>)
    }
}

fn ctx_with(bulk: Option<Arc<dyn BulkAlloc>>) -> CallContext {
    CallContext {
        xid: 1,
        vers: 3,
        proc_: 6,
        cred: Credential::None,
        gss: None,
        peer: PEER.parse().unwrap(),
        local: None,
        transport: TransportKind::Rdma,
        back: None,
        bulk,
        pages: false,
        alone: false,
    }
}

#[test]
fn rdma_calls_and_low_ports_are_privileged() {
    let at = |transport, port: u16| CallContext {
        peer: SocketAddr::new([10, 0, 0, 1].into(), port),
        transport,
        ..ctx_with(None)
    };
    assert!(at(TransportKind::Tcp, 1023).from_privileged_port());
    assert!(!at(TransportKind::Tcp, 1024).from_privileged_port());
    assert!(!at(TransportKind::Udp, 40000).from_privileged_port());
    // the Linux client's RDMA connections come from any port (knfsd's svcrdma: secure)
    assert!(at(TransportKind::Rdma, 40000).from_privileged_port());
}

#[test]
fn each_call_counts_for_its_client() {
    let (d, _) = disp();
    let peer: SocketAddr = PEER.parse().unwrap();
    let kept = d.metrics().client(peer);
    let origin = Origin {
        client: Some(kept.clone()),
        ..tcp_origin()
    };
    let null = call(400_000, 3, 0, &[]);
    let echo = call(400_000, 3, 1, &[41]);
    // here, on a thread, and without the connection's handle (looked up by address)
    assert!(d.dispatch_nonblocking(&null, &origin, false).is_some());
    assert!(d.dispatch_from(echo.clone(), origin.clone()).is_some());
    assert!(run(&d, call(400_000, 3, 2, &[])).is_some());
    assert_eq!(kept.calls(), 3);
    let t = d.metrics().render();
    let received = null.len() + echo.len() + call(400_000, 3, 2, &[]).len();
    let want = format!("rnfs_client_received_bytes_total{{client=\"127.0.0.1\"}} {received}\n");
    assert!(t.contains(&want), "{t}");
    // NULL: 24 bytes of reply header; echo: and a word; fail: SYSTEM_ERR's header
    let sent = format!(
        "rnfs_client_sent_bytes_total{{client=\"127.0.0.1\"}} {}\n",
        24 + 28 + 24
    );
    assert!(t.contains(&sent), "{t}");
    assert!(t.contains("rnfs_rpc_calls_in_flight 0\n"));
}

#[test]
fn a_payload_fills_transport_memory_when_offered() {
    use xdr::PayloadTarget;
    let bulk = Arc::new(OneBuf(parking_lot::Mutex::new(Some(vec![0u8; 64]))));
    let ctx = ctx_with(Some(bulk.clone()));
    let data = ctx.fill(10, &mut |b: &mut [u8]| {
        assert_eq!(b.len(), 10, "the buffer is cut to the payload's maximum");
        b[..4].copy_from_slice(b"data");
        4
    });
    assert_eq!(data.as_deref(), Some(&b"data"[..]));
    // a count past the buffer is cut to it
    *bulk.0.lock() = Some(vec![0u8; 64]);
    let data = ctx.fill(10, &mut |_| 99);
    assert_eq!(data.map(|d| d.len()), Some(10));
    // the only buffer is taken: no buffer, and the filler is not called
    assert!(ctx.fill(10, &mut |_| panic!("no buffer left")).is_none());
    // and none without a transport allocator at all
    let ctx = ctx_with(None);
    assert!(ctx.fill(10, &mut |_| panic!("no allocator")).is_none());
    assert!(!ctx.takes_pages());
}

/// A program whose calls are held back by the first word of their arguments (an export).
struct Kinds;
impl Program for Kinds {
    fn program(&self) -> u32 {
        400_100
    }
    fn versions(&self) -> (u32, u32) {
        (1, 1)
    }
    fn proc_name(&self, _v: u32, _p: u32) -> Option<&'static str> {
        Some("op")
    }
    fn admission(&self, _v: u32, _p: u32, args: &Decoder) -> Option<u64> {
        args.clone().u32().ok().map(u64::from)
    }
    fn call(&self, _: &CallContext, _: Decoder, _: &mut Encoder) -> Result<(), ProcError> {
        Ok(())
    }
}

/// A call under RPCSEC_GSS with `service`: the credential, a verifier that is never checked
/// here, and `export` as its first argument (for integrity, inside rpc_gss_integ_data).
fn gss_call(
    service: crate::gss::wire::GssService,
    proc_: crate::gss::wire::GssProc,
    export: u32,
) -> Bytes {
    use crate::gss::wire::{GssCred, GssService, RPCSEC_GSS};
    let mut e = Encoder::new();
    for w in [7, 0, 2, 400_100, 1, 1] {
        e.u32(w);
    }
    let mut cred = Encoder::new();
    GssCred {
        proc_,
        seq: 3,
        service,
        handle: Bytes::from_static(b"ctx"),
    }
    .encode(&mut cred);
    e.u32(RPCSEC_GSS);
    e.opaque(&cred.finish().to_bytes());
    e.u32(RPCSEC_GSS);
    e.opaque(b"a MIC");
    match service {
        GssService::None => e.u32(export),
        GssService::Integrity => {
            let mut body = Encoder::new();
            body.u32(3);
            body.u32(export);
            e.opaque(&body.finish().to_bytes());
            e.opaque(b"checksum");
        }
        GssService::Privacy => e.opaque(b"sealed arguments"),
    }
    e.finish().to_bytes()
}

#[test]
fn kerberos_calls_take_their_exports_permits_unless_their_arguments_are_sealed() {
    use crate::gss::wire::{GssProc, GssService};
    let mut d = Dispatcher::new(16, Arc::new(RpcMetrics::default()));
    d.register(Arc::new(Kinds));
    d.set_admission(2);
    let mut e = Encoder::new();
    let cred = Credential::Sys(AuthSys {
        stamp: 0,
        machine: Bytes::new(),
        uid: 1,
        gid: 1,
        gids: vec![],
    });
    msg::encode_call(&mut e, 9, 400_100, 1, 1, &cred);
    e.u32(5);
    let sys5 = d
        .admission_for(&e.finish().to_bytes())
        .expect("AUTH_SYS: export 5's permits");
    for service in [GssService::None, GssService::Integrity] {
        let p = d
            .admission_for(&gss_call(service, GssProc::Data, 5))
            .expect("krb5 and krb5i: the export is read");
        assert!(
            Arc::ptr_eq(&p, &sys5),
            "{service:?}: not export 5's permits"
        );
        let other = d
            .admission_for(&gss_call(service, GssProc::Data, 6))
            .unwrap();
        assert!(!Arc::ptr_eq(&other, &sys5));
    }
    assert!(d
        .admission_for(&gss_call(GssService::Privacy, GssProc::Data, 5))
        .is_none());
    assert!(d
        .admission_for(&gss_call(GssService::Integrity, GssProc::Init, 5))
        .is_none());
}
