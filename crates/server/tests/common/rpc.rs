//! A blocking ONC RPC client that speaks NFSv3 and MOUNT with the generated wire types.

use super::*;
use std::fmt::Debug;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use nfs3wire::*;
use sunrpc::msg::{encode_call, AuthSys, Credential};
use xdr::{Decode, Decoder, Encode, Encoder};

/// A decoded RPC reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RpcReply {
    /// MSG_ACCEPTED / SUCCESS with the procedure's result bytes.
    Success(Bytes),
    /// MSG_ACCEPTED / PROG_UNAVAIL.
    ProgUnavail,
    /// MSG_ACCEPTED / PROG_MISMATCH with the supported range.
    ProgMismatch { low: u32, high: u32 },
    /// MSG_ACCEPTED / PROC_UNAVAIL.
    ProcUnavail,
    /// MSG_ACCEPTED / GARBAGE_ARGS.
    GarbageArgs,
    /// MSG_ACCEPTED / SYSTEM_ERR.
    SystemErr,
    /// MSG_DENIED / RPC_MISMATCH with the supported range.
    RpcMismatch { low: u32, high: u32 },
    /// MSG_DENIED / AUTH_ERROR with the auth_stat.
    AuthError(u32),
}

/// auth_stat AUTH_BADCRED.
pub const AUTH_BADCRED: u32 = 1;

/// Splits a reply record into its xid and decoded header.
pub fn parse_reply(rec: Bytes) -> (u32, RpcReply) {
    let mut d = Decoder::new(rec);
    let xid = d.u32().expect("reply xid");
    assert_eq!(d.u32().expect("msg_type"), 1, "message is not a REPLY");
    let r = match d.u32().expect("reply_stat") {
        0 => {
            let _flavor = d.u32().expect("verifier flavor");
            d.opaque(400).expect("verifier body");
            match d.u32().expect("accept_stat") {
                0 => RpcReply::Success(d.into_rest()),
                1 => RpcReply::ProgUnavail,
                2 => RpcReply::ProgMismatch {
                    low: d.u32().unwrap(),
                    high: d.u32().unwrap(),
                },
                3 => RpcReply::ProcUnavail,
                4 => RpcReply::GarbageArgs,
                5 => RpcReply::SystemErr,
                s => panic!("unknown accept_stat {s}"),
            }
        }
        1 => match d.u32().expect("reject_stat") {
            0 => RpcReply::RpcMismatch {
                low: d.u32().unwrap(),
                high: d.u32().unwrap(),
            },
            1 => RpcReply::AuthError(d.u32().unwrap()),
            s => panic!("unknown reject_stat {s}"),
        },
        s => panic!("unknown reply_stat {s}"),
    };
    (xid, r)
}

/// An AUTH_SYS credential for `uid`/`gid`.
pub fn auth_sys(uid: u32, gid: u32) -> Credential {
    Credential::Sys(AuthSys {
        stamp: 1,
        machine: Bytes::from_static(b"rnfs-test"),
        uid,
        gid,
        gids: vec![gid],
    })
}

/// Decodes a complete result; the whole body must be consumed.
pub fn decode_all<R: Decode>(body: Bytes) -> R {
    let mut d = Decoder::new(body);
    let r = R::decode(&mut d).expect("cannot decode the result");
    assert_eq!(d.remaining(), 0, "bytes left after the result");
    r
}

/// Encodes a value into a flat buffer.
pub fn encode<A: Encode + ?Sized>(a: &A) -> Bytes {
    let mut e = Encoder::new();
    a.encode(&mut e);
    e.finish().to_bytes()
}

/// How the raw client reaches the server.
enum Link {
    /// A TCP connection to an `rnfsd` process.
    Tcp(TcpStream),
    /// The server's programs in this process ([`loopback::LocalServer`]).
    Local(Box<loopback::Loopback>),
}

impl Read for Link {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Link::Tcp(s) => s.read(buf),
            Link::Local(l) => l.read(buf),
        }
    }
}

impl Write for Link {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Link::Tcp(s) => s.write(buf),
            Link::Local(l) => {
                l.send(buf);
                Ok(buf.len())
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Link::Tcp(s) => s.flush(),
            Link::Local(_) => Ok(()),
        }
    }
}

impl Link {
    fn tcp(&self) -> &TcpStream {
        match self {
            Link::Tcp(s) => s,
            Link::Local(_) => panic!("not a TCP connection"),
        }
    }
}

/// A blocking ONC RPC client over one TCP connection (or a [`loopback::Loopback`]).
pub struct RpcClient {
    stream: Link,
    xid: u32,
    /// Credential sent with every call.
    pub cred: Credential,
    /// Calls from the server (the NFSv4.1 back channel) read while a reply was awaited.
    callbacks: std::collections::VecDeque<Bytes>,
    /// An RPCSEC_GSS context: calls go under it instead of [`RpcClient::cred`].
    pub gss: Option<sunrpc::gss::client::GssClient<gss::Krb5Initiator>>,
}

fn name(n: impl AsRef<[u8]>) -> Bytes {
    Bytes::copy_from_slice(n.as_ref())
}

fn first_xid() -> u32 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    (t.subsec_nanos() ^ std::process::id().rotate_left(16)) & 0x7fff_ffff
}

impl RpcClient {
    fn from_stream(stream: TcpStream) -> RpcClient {
        stream.set_nodelay(true).unwrap();
        stream.set_read_timeout(Some(REPLY_TIMEOUT)).unwrap();
        RpcClient {
            stream: Link::Tcp(stream),
            xid: first_xid(),
            cred: auth_sys(TEST_UID, TEST_UID),
            callbacks: Default::default(),
            gss: None,
        }
    }

    /// A client of the programs served in this process by `server`.
    pub fn loopback(server: &loopback::LocalServer) -> RpcClient {
        RpcClient {
            stream: Link::Local(Box::new(server.connect())),
            xid: first_xid(),
            cred: auth_sys(TEST_UID, TEST_UID),
            callbacks: Default::default(),
            gss: None,
        }
    }

    /// Connects to `addr` from an ephemeral (non-privileged) port.
    pub fn connect_to(addr: SocketAddr) -> RpcClient {
        let s = TcpStream::connect_timeout(&addr, std::time::Duration::from_secs(5))
            .expect("connect to rnfsd");
        Self::from_stream(s)
    }

    /// Connects to 127.0.0.1:`port`, or the error (a server restarting is not there yet).
    pub fn try_connect(port: u16) -> io::Result<RpcClient> {
        TcpStream::connect(("127.0.0.1", port)).map(Self::from_stream)
    }

    /// Connects to 127.0.0.1:`port` from an ephemeral (non-privileged) port.
    pub fn connect(port: u16) -> RpcClient {
        let s = TcpStream::connect(("127.0.0.1", port)).expect("connect to rnfsd");
        Self::from_stream(s)
    }

    /// Connects to 127.0.0.1:`port` from a privileged source port (below 1024; needs root).
    pub fn connect_privileged(port: u16) -> RpcClient {
        use socket2::{Domain, Socket, Type};
        let server: SocketAddr = ([127, 0, 0, 1], port).into();
        let start = 600 + (first_xid() % 400) as u16;
        for i in 0..400u16 {
            let p = 600 + (start - 600 + i) % 400;
            let s = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
            s.set_reuse_address(true).unwrap();
            let local: SocketAddr = ([127, 0, 0, 1], p).into();
            if s.bind(&local.into()).is_err() {
                continue;
            }
            if s.connect(&server.into()).is_ok() {
                return Self::from_stream(s.into());
            }
        }
        panic!("no privileged source port available");
    }

    /// Establishes an RPCSEC_GSS context as Kerberos principal `user` with the server's
    /// `nfs@localhost` (over the NFS program's NULL procedure); calls go under it from now on.
    pub fn with_gss(mut self, user: &str, service: sunrpc::gss::wire::GssService) -> RpcClient {
        self.gss = Some(
            self.establish_gss(user, service)
                .expect("RPCSEC_GSS context"),
        );
        self
    }

    /// As [`RpcClient::with_gss`], with the server as `target` (`nfs@alias`: another of the
    /// keys of its keytab).
    pub fn with_gss_to(
        mut self,
        user: &str,
        target: &str,
        service: sunrpc::gss::wire::GssService,
    ) -> RpcClient {
        self.gss = Some(
            self.establish_gss_to(user, target, service)
                .expect("RPCSEC_GSS context"),
        );
        self
    }

    /// A context as `user`, established over this connection, or why not.
    pub fn establish_gss(
        &mut self,
        user: &str,
        service: sunrpc::gss::wire::GssService,
    ) -> Result<sunrpc::gss::client::GssClient<gss::Krb5Initiator>, sunrpc::gss::client::ClientError>
    {
        self.establish_gss_to(user, "nfs@localhost", service)
    }

    /// A context as `user` with the server as `target`, or why not.
    pub fn establish_gss_to(
        &mut self,
        user: &str,
        target: &str,
        service: sunrpc::gss::wire::GssService,
    ) -> Result<sunrpc::gss::client::GssClient<gss::Krb5Initiator>, sunrpc::gss::client::ClientError>
    {
        let init = gss::Krb5Initiator::new(Some(user), target)?;
        let mut rpc = |m: Bytes| {
            self.send_record(&m)?;
            self.read_record()
        };
        sunrpc::gss::client::GssClient::establish(init, service, NFS3_PROGRAM, NFS_V3, &mut rpc)
    }

    /// Sends a call under the GSS context with transaction id `xid` and returns it (the reply
    /// is checked against it by [`RpcClient::recv_gss`]).
    pub fn send_gss<A: Encode + ?Sized>(
        &mut self,
        xid: u32,
        prog: u32,
        vers: u32,
        proc_: u32,
        args: &A,
    ) -> sunrpc::gss::client::GssCall {
        let a = encode(args);
        let g = self.gss.as_mut().expect("no GSS context");
        let c = g.call(xid, prog, vers, proc_, &a);
        self.send_record(&c.msg).expect("send call");
        c
    }

    /// The reply to GSS call `c`: its results checked and unprotected, or the reply's status.
    pub fn recv_gss(&mut self, c: &sunrpc::gss::client::GssCall) -> (u32, RpcReply) {
        let rec = loop {
            let rec = self.read_record().expect("read reply");
            if rec.get(4..8) == Some(&[0, 0, 0, 0]) {
                self.callbacks.push_back(rec);
                continue;
            }
            break rec;
        };
        let (xid, parsed) = parse_reply(rec.clone());
        let g = self.gss.as_mut().expect("no GSS context");
        match parsed {
            RpcReply::Success(_) => (
                xid,
                RpcReply::Success(
                    g.reply(c, rec)
                        .expect("the reply's verifier and protection"),
                ),
            ),
            other => (xid, other),
        }
    }

    /// Calls as `uid`/`gid` from now on.
    pub fn with_user(mut self, uid: u32, gid: u32) -> RpcClient {
        self.cred = auth_sys(uid, gid);
        self
    }

    /// Calls as `uid`/`gid` from now on.
    pub fn set_user(&mut self, uid: u32, gid: u32) {
        self.cred = auth_sys(uid, gid);
    }

    /// A second handle on the same connection, to read replies on another thread while this
    /// one sends.
    pub fn reader(&self) -> RpcClient {
        RpcClient {
            stream: Link::Tcp(self.stream.tcp().try_clone().expect("clone the connection")),
            xid: self.xid,
            cred: self.cred.clone(),
            callbacks: Default::default(),
            gss: None,
        }
    }

    /// The local (source) port of the connection.
    pub fn local_port(&self) -> u16 {
        self.stream.tcp().local_addr().unwrap().port()
    }

    /// How long a read waits.
    pub fn set_read_timeout(&self, t: Duration) {
        self.stream.tcp().set_read_timeout(Some(t)).unwrap();
    }

    /// The next call goes with transaction id `xid` + 1 (a client's sequence, as after a
    /// reconnection).
    pub fn set_xid(&mut self, xid: u32) {
        self.xid = xid;
    }

    /// The transaction id of the last call.
    pub fn last_xid(&self) -> u32 {
        self.xid
    }

    /// A fresh transaction id.
    pub fn next_xid(&mut self) -> u32 {
        self.xid = self.xid.wrapping_add(1);
        self.xid
    }

    /// Encodes a call message (without record marking); returns its xid and bytes.
    pub fn build_call<A: Encode + ?Sized>(
        &mut self,
        prog: u32,
        vers: u32,
        proc_: u32,
        args: &A,
    ) -> (u32, Vec<u8>) {
        let xid = self.next_xid();
        let mut e = Encoder::new();
        encode_call(&mut e, xid, prog, vers, proc_, &self.cred);
        args.encode(&mut e);
        (xid, e.finish().to_bytes().to_vec())
    }

    /// Sends `body` as one record (single last fragment).
    pub fn send_record(&mut self, body: &[u8]) -> io::Result<()> {
        let mut v = Vec::with_capacity(body.len() + 4);
        v.extend_from_slice(&(0x8000_0000u32 | body.len() as u32).to_be_bytes());
        v.extend_from_slice(body);
        self.stream.write_all(&v)
    }

    /// Whether something arrives to be read within `wait` (a TCP connection's next record,
    /// e.g. a callback), without reading it.
    pub fn readable_within(&self, wait: std::time::Duration) -> bool {
        let s = self.stream.tcp();
        s.set_read_timeout(Some(wait)).expect("set a read timeout");
        let got = s.peek(&mut [0u8; 1]).is_ok_and(|n| n > 0);
        s.set_read_timeout(None).expect("clear the read timeout");
        got
    }

    /// Sends raw bytes, record marking included.
    pub fn send_raw(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.stream.write_all(bytes)
    }

    /// Sends a call and returns its xid without waiting for the reply.
    pub fn send_call<A: Encode + ?Sized>(
        &mut self,
        prog: u32,
        vers: u32,
        proc_: u32,
        args: &A,
    ) -> u32 {
        let (xid, body) = self.build_call(prog, vers, proc_, args);
        self.send_record(&body).expect("send call");
        xid
    }

    /// Reads whatever bytes arrive (0 at end of stream).
    pub fn read_raw(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.stream.read(buf)
    }

    /// Reads one record (joining fragments).
    pub fn read_record(&mut self) -> io::Result<Bytes> {
        let mut out = Vec::new();
        loop {
            let mut h = [0u8; 4];
            self.stream.read_exact(&mut h)?;
            let h = u32::from_be_bytes(h);
            let len = (h & 0x7fff_ffff) as usize;
            let start = out.len();
            out.resize(start + len, 0);
            self.stream.read_exact(&mut out[start..])?;
            if h & 0x8000_0000 != 0 {
                return Ok(Bytes::from(out));
            }
        }
    }

    /// Reads and decodes the next reply.
    pub fn recv_reply(&mut self) -> (u32, RpcReply) {
        loop {
            let rec = self.read_record().expect("read reply");
            // a call from the server (msg_type CALL) sent before this reply: kept for
            // next_callback
            if rec.get(4..8) == Some(&[0, 0, 0, 0]) {
                self.callbacks.push_back(rec);
                continue;
            }
            return parse_reply(rec);
        }
    }

    /// A call from the server that arrived while a reply was awaited, if any.
    pub fn take_callback(&mut self) -> Option<Bytes> {
        self.callbacks.pop_front()
    }

    /// Whether a call from the server is at hand, or arrives within `wait`.
    pub fn callback_within(&self, wait: std::time::Duration) -> bool {
        !self.callbacks.is_empty() || self.readable_within(wait)
    }

    /// One call and its reply (the xid must match).
    pub fn call<A: Encode + ?Sized>(
        &mut self,
        prog: u32,
        vers: u32,
        proc_: u32,
        args: &A,
    ) -> RpcReply {
        if self.gss.is_some() {
            let xid = self.next_xid();
            let c = self.send_gss(xid, prog, vers, proc_, args);
            let (rxid, r) = self.recv_gss(&c);
            assert_eq!(rxid, xid, "reply xid does not match the call");
            return r;
        }
        let xid = self.send_call(prog, vers, proc_, args);
        let (rxid, r) = self.recv_reply();
        assert_eq!(rxid, xid, "reply xid does not match the call");
        r
    }

    /// An NFSv3 call that must be accepted; returns the decoded result.
    pub fn nfs<A: Encode + ?Sized, R: Decode>(&mut self, p: u32, args: &A) -> R {
        match self.call(NFS3_PROGRAM, NFS_V3, p, args) {
            RpcReply::Success(body) => decode_all(body),
            other => panic!("NFS {p:?}: call not accepted: {other:?}"),
        }
    }

    /// A MOUNT v3 call that must be accepted; returns the decoded result.
    pub fn mount<A: Encode + ?Sized, R: Decode>(&mut self, p: u32, args: &A) -> R {
        match self.call(MOUNTPROG, MOUNTVERS3, p, args) {
            RpcReply::Success(body) => decode_all(body),
            other => panic!("MOUNT {p:?}: call not accepted: {other:?}"),
        }
    }

    // --- MOUNT -------------------------------------------------------------------------------

    /// MNT of `path`.
    pub fn mnt(&mut self, path: impl AsRef<Path>) -> Mountres3 {
        let p = path.as_ref().as_os_str().as_encoded_bytes();
        self.mount(MOUNTPROC_MNT, &Dirpath(name(p)))
    }

    /// MNT of `path`, which must succeed.
    pub fn mnt_ok(&mut self, path: impl AsRef<Path>) -> NfsFh3 {
        match self.mnt(path.as_ref()) {
            Mountres3::Ok(ok) => fh3(ok.fhandle),
            Mountres3::Fail(s) => panic!("MNT {}: {s:?}", path.as_ref().display()),
        }
    }

    // --- NFSv3 -------------------------------------------------------------------------------

    /// NULL (NFS).
    pub fn null(&mut self) -> RpcReply {
        self.call(NFS3_PROGRAM, NFS_V3, NFSPROC3_NULL, &Void)
    }

    /// GETATTR.
    pub fn getattr(&mut self, fh: &NfsFh3) -> Getattr3res {
        self.nfs(NFSPROC3_GETATTR, &Getattr3args { object: fh.clone() })
    }

    /// SETATTR without guard.
    pub fn setattr(&mut self, fh: &NfsFh3, s: Sattr3) -> Setattr3res {
        self.nfs(
            NFSPROC3_SETATTR,
            &Setattr3args {
                object: fh.clone(),
                new_attributes: s,
                guard: Sattrguard3(None),
            },
        )
    }

    /// LOOKUP.
    pub fn lookup(&mut self, dir: &NfsFh3, n: impl AsRef<[u8]>) -> Lookup3res {
        self.nfs(
            NFSPROC3_LOOKUP,
            &Lookup3args {
                what: Diropargs3 {
                    dir: dir.clone(),
                    name: name(n),
                },
            },
        )
    }

    /// LOOKUP that must succeed; returns the handle.
    pub fn lookup_ok(&mut self, dir: &NfsFh3, n: impl AsRef<[u8]>) -> NfsFh3 {
        let what = format!("LOOKUP {:?}", String::from_utf8_lossy(n.as_ref()));
        self.lookup(dir, n).expect_ok(&what).object
    }

    /// ACCESS.
    pub fn access(&mut self, fh: &NfsFh3, mask: u32) -> Access3res {
        self.nfs(
            NFSPROC3_ACCESS,
            &Access3args {
                object: fh.clone(),
                access: mask,
            },
        )
    }

    /// READLINK.
    pub fn readlink(&mut self, fh: &NfsFh3) -> Readlink3res {
        self.nfs(
            NFSPROC3_READLINK,
            &Readlink3args {
                symlink: fh.clone(),
            },
        )
    }

    /// READ.
    pub fn read(&mut self, fh: &NfsFh3, offset: u64, count: u32) -> Read3res {
        self.nfs(
            NFSPROC3_READ,
            &Read3args {
                file: fh.clone(),
                offset,
                count,
            },
        )
    }

    /// Reads a whole file of `size` bytes in chunks of `chunk`.
    pub fn read_all(&mut self, fh: &NfsFh3, chunk: u32) -> Vec<u8> {
        let mut out = Vec::new();
        loop {
            let r = self.read(fh, out.len() as u64, chunk).expect_ok("READ");
            assert_eq!(r.count as usize, r.data.len());
            out.extend_from_slice(r.data.in_memory().expect("decoded"));
            if r.eof {
                return out;
            }
            assert!(r.count > 0, "READ returned no data before eof");
        }
    }

    /// WRITE.
    pub fn write(&mut self, fh: &NfsFh3, offset: u64, data: Bytes, stable: StableHow) -> Write3res {
        self.nfs(NFSPROC3_WRITE, &write_args(fh, offset, data, stable))
    }

    /// CREATE (GUARDED) with `mode`.
    pub fn create(&mut self, dir: &NfsFh3, n: impl AsRef<[u8]>, mode: u32) -> Create3res {
        self.nfs(
            NFSPROC3_CREATE,
            &Create3args {
                r#where: Diropargs3 {
                    dir: dir.clone(),
                    name: name(n),
                },
                how: Createhow3::Guarded(sattr_mode(mode)),
            },
        )
    }

    /// CREATE that must succeed; returns the new handle.
    pub fn create_ok(&mut self, dir: &NfsFh3, n: impl AsRef<[u8]>, mode: u32) -> NfsFh3 {
        let what = format!("CREATE {:?}", String::from_utf8_lossy(n.as_ref()));
        let ok = self.create(dir, n, mode).expect_ok(&what);
        ok.obj.0.expect("CREATE returned no handle")
    }

    /// MKNOD of a named pipe, mode 0644.
    pub fn mkfifo(&mut self, dir: &NfsFh3, n: impl AsRef<[u8]>) -> Mknod3res {
        self.nfs(
            NFSPROC3_MKNOD,
            &Mknod3args {
                r#where: Diropargs3 {
                    dir: dir.clone(),
                    name: name(n),
                },
                what: Mknoddata3::Nf3fifo(sattr_mode(0o644)),
            },
        )
    }

    /// MKDIR with `mode`.
    pub fn mkdir(&mut self, dir: &NfsFh3, n: impl AsRef<[u8]>, mode: u32) -> Mkdir3res {
        self.nfs(
            NFSPROC3_MKDIR,
            &Mkdir3args {
                r#where: Diropargs3 {
                    dir: dir.clone(),
                    name: name(n),
                },
                attributes: sattr_mode(mode),
            },
        )
    }

    /// SYMLINK `n` -> `target`.
    pub fn symlink(
        &mut self,
        dir: &NfsFh3,
        n: impl AsRef<[u8]>,
        target: impl AsRef<[u8]>,
    ) -> Symlink3res {
        self.nfs(
            NFSPROC3_SYMLINK,
            &Symlink3args {
                r#where: Diropargs3 {
                    dir: dir.clone(),
                    name: name(n),
                },
                symlink: Symlinkdata3 {
                    symlink_attributes: sattr3(),
                    symlink_data: name(target),
                },
            },
        )
    }

    /// REMOVE.
    pub fn remove(&mut self, dir: &NfsFh3, n: impl AsRef<[u8]>) -> Remove3res {
        self.nfs(
            NFSPROC3_REMOVE,
            &Remove3args {
                object: Diropargs3 {
                    dir: dir.clone(),
                    name: name(n),
                },
            },
        )
    }

    /// RMDIR.
    pub fn rmdir(&mut self, dir: &NfsFh3, n: impl AsRef<[u8]>) -> Rmdir3res {
        self.nfs(
            NFSPROC3_RMDIR,
            &Rmdir3args {
                object: Diropargs3 {
                    dir: dir.clone(),
                    name: name(n),
                },
            },
        )
    }

    /// RENAME.
    pub fn rename(
        &mut self,
        from: &NfsFh3,
        from_name: impl AsRef<[u8]>,
        to: &NfsFh3,
        to_name: impl AsRef<[u8]>,
    ) -> Rename3res {
        self.nfs(
            NFSPROC3_RENAME,
            &Rename3args {
                from: Diropargs3 {
                    dir: from.clone(),
                    name: name(from_name),
                },
                to: Diropargs3 {
                    dir: to.clone(),
                    name: name(to_name),
                },
            },
        )
    }

    /// LINK.
    pub fn link(&mut self, file: &NfsFh3, dir: &NfsFh3, n: impl AsRef<[u8]>) -> Link3res {
        self.nfs(
            NFSPROC3_LINK,
            &Link3args {
                file: file.clone(),
                link: Diropargs3 {
                    dir: dir.clone(),
                    name: name(n),
                },
            },
        )
    }

    /// READDIR.
    pub fn readdir(
        &mut self,
        dir: &NfsFh3,
        cookie: u64,
        cookieverf: [u8; 8],
        count: u32,
    ) -> Readdir3res {
        self.nfs(
            NFSPROC3_READDIR,
            &Readdir3args {
                dir: dir.clone(),
                cookie,
                cookieverf,
                count,
            },
        )
    }

    /// READDIRPLUS.
    pub fn readdirplus(
        &mut self,
        dir: &NfsFh3,
        cookie: u64,
        cookieverf: [u8; 8],
        dircount: u32,
        maxcount: u32,
    ) -> Readdirplus3res {
        self.nfs(
            NFSPROC3_READDIRPLUS,
            &Readdirplus3args {
                dir: dir.clone(),
                cookie,
                cookieverf,
                dircount,
                maxcount,
            },
        )
    }

    /// COMMIT of the whole file.
    pub fn commit(&mut self, fh: &NfsFh3) -> Commit3res {
        self.nfs(
            NFSPROC3_COMMIT,
            &Commit3args {
                file: fh.clone(),
                offset: 0,
                count: 0,
            },
        )
    }

    /// FSINFO.
    pub fn fsinfo(&mut self, fh: &NfsFh3) -> Fsinfo3res {
        self.nfs(NFSPROC3_FSINFO, &Fsinfo3args { fsroot: fh.clone() })
    }
}
