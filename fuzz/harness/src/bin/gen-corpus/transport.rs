//! Seeds of the transport-level targets: RPC records and calls, RPC-over-RDMA headers and
//! private data, exports files.

use super::nfs3::fh;
use super::*;
pub(crate) fn record_seeds() -> Vec<(&'static str, Vec<u8>)> {
    let frag = |last: bool, d: &[u8]| {
        let mut v = ((d.len() as u32) | if last { 0x8000_0000 } else { 0 })
            .to_be_bytes()
            .to_vec();
        v.extend_from_slice(d);
        v
    };
    let pre = |max: u16, seed: u8, stream: Vec<u8>| {
        let mut v = max.to_be_bytes().to_vec();
        v.push(seed);
        v.extend(stream);
        v
    };
    let one_call = call(1, NFS, 3, 0, &Credential::None, &[]);
    vec![
        ("single", pre(1024, 7, frag(true, &one_call))),
        (
            "multi_fragment",
            pre(
                1024,
                3,
                [
                    frag(false, &one_call[..8]),
                    frag(false, &one_call[8..20]),
                    frag(true, &one_call[20..]),
                ]
                .concat(),
            ),
        ),
        (
            "two_records",
            pre(
                4096,
                200,
                [frag(true, b"abcd"), frag(true, &one_call)].concat(),
            ),
        ),
        (
            "partial",
            pre(1024, 1, frag(true, &one_call)[..30].to_vec()),
        ),
        (
            "empty_last",
            pre(64, 9, [frag(false, b"ab"), frag(true, b"")].concat()),
        ),
        ("empty_nonfinal", pre(64, 9, frag(false, b""))),
        ("too_large", pre(16, 4, frag(true, &[0; 40]))),
        (
            "too_large_sum",
            pre(
                48,
                4,
                [frag(false, &[1; 30]), frag(true, &[2; 30])].concat(),
            ),
        ),
    ]
}

pub(crate) fn call_seeds() -> Vec<(&'static str, Vec<u8>)> {
    let user = sys(1000, 1000);
    let many_gids = Credential::Sys(sunrpc::AuthSys {
        stamp: 1,
        machine: Bytes::from_static(b"a-long-machine-name.example.com"),
        uid: 0,
        gid: 0,
        gids: (0..16).collect(),
    });
    let mut v = vec![
        ("null_none", call(1, NFS, 3, 0, &Credential::None, &[])),
        (
            "getattr_sys",
            call(
                2,
                NFS,
                3,
                1,
                &user,
                &val(&Getattr3args {
                    object: fh(b"@FH@ROOT"),
                }),
            ),
        ),
        (
            "sys_16_gids",
            call(
                3,
                MOUNT,
                3,
                1,
                &many_gids,
                &val(&Dirpath(Bytes::from_static(b"/srv"))),
            ),
        ),
        (
            "reply",
            enc(|e| sunrpc::msg::encode_accepted(e, 5, sunrpc::msg::AcceptStat::Success)),
        ),
    ];
    let mut bad = call(4, NFS, 3, 0, &Credential::None, &[]);
    bad[11] = 3;
    v.push(("rpcvers_3", bad));
    let mut bad = call(4, NFS, 3, 0, &user, &[]);
    bad[27] = 6;
    v.push(("flavor_6", bad));
    v
}

pub(crate) fn rdma_seeds() -> Vec<(&'static str, Vec<u8>)> {
    let seg = |handle: u32, length: u32, offset: u64| RdmaSegment {
        handle,
        length,
        offset,
    };
    let rpc = |xid: u32| call(xid, NFS, 3, 0, &Credential::None, &[]);
    let with = |h: &Header, inline: &[u8]| {
        let mut v = h.encode().to_vec();
        v.extend_from_slice(inline);
        v
    };
    let msg = Header::msg(0x11, 32);
    let mut long = Header::msg(0x22, 32);
    long.proc_ = Proc::NoMsg;
    long.read_list = vec![ReadChunk {
        position: 0,
        segments: vec![seg(1, 200, 0x1000), seg(2, 100, 0x2000)],
    }];
    let mut write_payload = Header::msg(0x33, 8);
    write_payload.read_list = vec![ReadChunk {
        position: 8,
        segments: vec![seg(3, 4097, 0x3000)],
    }];
    let mut chunks = Header::msg(0x44, 8);
    chunks.write_list = vec![WriteChunk(vec![
        seg(4, 65536, 0x4000),
        seg(5, 4096, 0x5000),
    ])];
    chunks.reply_chunk = Some(WriteChunk(vec![seg(6, 4096, 0x6000)]));
    let mut both = long.clone();
    both.xid = 0x55;
    both.read_list.push(ReadChunk {
        position: 12,
        segments: vec![seg(7, 3, 0)],
    });
    vec![
        ("msg_inline", with(&msg, &rpc(0x11))),
        ("nomsg_call_chunk", with(&long, &[])),
        (
            "msg_write_payload_chunk",
            with(&write_payload, &rpc(0x33)[..16]),
        ),
        ("msg_write_list_reply_chunk", with(&chunks, &rpc(0x44))),
        ("nomsg_call_and_data_chunks", with(&both, &[])),
        (
            "error_vers",
            Header::error(1, 1, 1, ErrorKind::Vers { low: 1, high: 1 })
                .encode()
                .to_vec(),
        ),
        (
            "error_chunk",
            Header::error(2, 1, 1, ErrorKind::Chunk).encode().to_vec(),
        ),
        ("bad_version", {
            let mut v = with(&msg, &rpc(0x11));
            v[7] = 2;
            v
        }),
        ("msgp", {
            let mut v = with(&msg, &rpc(0x11));
            v[15] = 2;
            v
        }),
        ("xid_mismatch", with(&msg, &rpc(0x12))),
    ]
}

pub(crate) fn private_data_seeds() -> Vec<(&'static str, Vec<u8>)> {
    let cfg = |s: u32, r: u32| [s.to_be_bytes(), r.to_be_bytes()].concat();
    let ours = InlineConfig::default().private_data().encode();
    let big = InlineConfig::new(65536, 32768)
        .with_remote_invalidate(true)
        .private_data()
        .encode();
    let mut zeroed = vec![0u8; 56];
    zeroed[..8].copy_from_slice(&ours);
    vec![
        ("default", [cfg(4096, 4096), ours.to_vec()].concat()),
        ("big_invalidate", [cfg(65536, 1024), big.to_vec()].concat()),
        ("cm_area_zero_filled", [cfg(8192, 8192), zeroed].concat()),
        (
            "wrong_magic",
            [cfg(4096, 4096), vec![0xf6, 0xab, 0x0e, 0x19, 1, 0, 3, 3]].concat(),
        ),
        (
            "wrong_version",
            [cfg(4096, 4096), vec![0xf6, 0xab, 0x0e, 0x18, 2, 1, 255, 0]].concat(),
        ),
        ("short", [cfg(0, u32::MAX), vec![0xf6, 0xab, 0x0e]].concat()),
    ]
}

pub(crate) fn exports_seeds() -> Vec<(&'static str, &'static str)> {
    vec![
        (
            "doc_example",
            "# comment\n/srv/data      10.0.0.0/8(rw,no_root_squash) *.example.com(ro) @trusted\n\"/srv/my data\" fd00::/64(rw,sync) \\\n               (ro)                       # continuation\n/srv/odd\\040name -rw,async host1 host2(ro)\n",
        ),
        ("localhost", "/srv/rnfs 127.0.0.0/8(rw,insecure,root_squash) ::1(rw,insecure)\n"),
        (
            "all_options",
            "/export *(rw,sync,no_subtree_check,all_squash,anonuid=1000,anongid=1000,insecure,fsid=0,crossmnt,nohide,no_wdelay,no_acl,sec=sys:none,mp=/export)\n/e2 192.168.1.0/255.255.255.0(ro,fsid=root) h?st[0-9].lan(rw,fsid=0123456789abcdef0123456789abcdef,mountpoint)\n",
        ),
        ("bare_path", "/pub\n/pub2 (ro)\n"),
        ("errors", "relative(rw)\n/x *(rw,,sync)\n/y host(rw\n/z 10.0.0.0/33(rw)\n/w *(sec=krb5)\n/v *(anonuid=-1)\n/x *(ro)\n"),
        ("octal_quote", "\"/a b\\011c\" *(rw)\n/d\\000 *(rw)\n\"/unterminated *(rw)\n"),
    ]
}
