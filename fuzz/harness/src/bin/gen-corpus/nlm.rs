//! Seeds of the `nlmwire_decode` target: valid encodings of NLM v4 and NSM arguments and
//! results, one value each (the target tries every type on every input).

use bytes::Bytes;
use harness::build::val;
use nlmwire::*;

fn lock(fh: &'static [u8]) -> Nlm4Lock {
    Nlm4Lock {
        caller_name: Bytes::from_static(b"client.example"),
        fh: Bytes::from_static(fh),
        oh: Bytes::from_static(b"4242@client.example"),
        svid: 4242,
        l_offset: 0,
        l_len: 0,
    }
}

fn my_id() -> MyId {
    MyId {
        my_name: Bytes::from_static(b"localhost"),
        my_prog: NLM_PROG as i32,
        my_vers: NLM_VERS4 as i32,
        my_proc: 16,
    }
}

pub(crate) fn nlm_seeds() -> Vec<(&'static str, Vec<u8>)> {
    let cookie = Bytes::from_static(&[0, 0, 0, 1]);
    let fh: &'static [u8] = &[1, 0, 0, 0, 0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 2, 0, 0, 0, 7];
    let mon_id = MonId {
        mon_name: Bytes::from_static(b"server.example"),
        my_id: my_id(),
    };
    vec![
        (
            "nlm4_testargs",
            val(&Nlm4Testargs {
                cookie: cookie.clone(),
                exclusive: true,
                alock: lock(fh),
            }),
        ),
        (
            "nlm4_lockargs",
            val(&Nlm4Lockargs {
                cookie: cookie.clone(),
                block: true,
                exclusive: true,
                alock: Nlm4Lock {
                    l_offset: 4096,
                    l_len: 1,
                    ..lock(fh)
                },
                reclaim: false,
                state: 3,
            }),
        ),
        (
            "nlm4_cancargs",
            val(&Nlm4Cancargs {
                cookie: cookie.clone(),
                block: true,
                exclusive: false,
                alock: lock(fh),
            }),
        ),
        (
            "nlm4_unlockargs",
            val(&Nlm4Unlockargs {
                cookie: cookie.clone(),
                alock: lock(fh),
            }),
        ),
        (
            "nlm4_shareargs",
            val(&Nlm4Shareargs {
                cookie: cookie.clone(),
                share: Nlm4Share {
                    caller_name: Bytes::from_static(b"pc"),
                    fh: Bytes::from_static(fh),
                    oh: Bytes::from_static(b"share-owner"),
                    mode: FshMode::FsmDw,
                    access: FshAccess::FsaRw,
                },
                reclaim: false,
            }),
        ),
        (
            "nlm4_notify",
            val(&Nlm4Notify {
                name: Bytes::from_static(b"client.example"),
                state: 5,
            }),
        ),
        (
            "nlm4_testres_denied",
            val(&Nlm4Testres {
                cookie: cookie.clone(),
                stat: Nlm4Testrply::Denied(Nlm4Holder {
                    exclusive: true,
                    svid: 17,
                    oh: Bytes::from_static(b"17@other"),
                    l_offset: 0,
                    l_len: u64::MAX,
                }),
            }),
        ),
        (
            "nlm4_testres_granted",
            val(&Nlm4Testres {
                cookie: cookie.clone(),
                stat: Nlm4Testrply::Other(Nlm4Stats::nlm4_granted),
            }),
        ),
        (
            "nlm4_res_blocked",
            val(&Nlm4Res {
                cookie: cookie.clone(),
                stat: Nlm4Stat {
                    stat: Nlm4Stats::nlm4_blocked,
                },
            }),
        ),
        (
            "nlm4_shareres",
            val(&Nlm4Shareres {
                cookie,
                stat: Nlm4Stats::nlm4_granted,
                sequence: 1,
            }),
        ),
        (
            "sm_name",
            val(&SmName {
                mon_name: Bytes::from_static(b"server.example"),
            }),
        ),
        (
            "sm_mon",
            val(&Mon {
                mon_id: mon_id.clone(),
                r#priv: [7; 16],
            }),
        ),
        ("sm_unmon", val(&mon_id)),
        ("sm_unmon_all", val(&my_id())),
        (
            "sm_notify",
            val(&StatChge {
                mon_name: Bytes::from_static(b"client.example"),
                state: 7,
            }),
        ),
        (
            "sm_stat_res",
            val(&SmStatRes {
                res_stat: SmRes::stat_succ,
                state: 9,
            }),
        ),
        (
            "sm_status_callback",
            val(&SmStatus {
                mon_name: Bytes::from_static(b"client.example"),
                state: 8,
                r#priv: [7; 16],
            }),
        ),
    ]
}
