//! Codec tests of the generated NLM v4 and NSM types: layouts checked against hand-written
//! words, bounds (refused from the length word, before anything is allocated), open and closed
//! enums, and round trips of every argument and result type (generated `Arbitrary` values, and
//! larger hand-made ones up to the bounds).

use super::*;
use bytes::Bytes;
use proptest::collection::vec;
use proptest::prelude::*;
use std::fmt::Debug;
use xdr::{Decode, Decoder, Encode, Encoder, XdrError};

fn enc<T: Encode>(v: &T) -> Bytes {
    let mut e = Encoder::new();
    e.encode(v);
    e.finish().to_bytes()
}

fn dec<T: Decode>(b: Bytes) -> xdr::Result<T> {
    let mut d = Decoder::new(b);
    let v = T::decode(&mut d)?;
    assert_eq!(d.remaining(), 0, "trailing bytes after decode");
    Ok(v)
}

fn words(ws: &[u32]) -> Vec<u8> {
    ws.iter().flat_map(|w| w.to_be_bytes()).collect()
}

/// A word holding four bytes of text, as XDR lays out opaque data.
fn w(b: &[u8; 4]) -> u32 {
    u32::from_be_bytes(*b)
}

/// Encodes, checks alignment, decodes and compares; also checks strict prefixes fail.
fn roundtrip<T: Encode + Decode + PartialEq + Debug>(v: &T) -> Result<(), TestCaseError> {
    let b = enc(v);
    prop_assert_eq!(b.len() % 4, 0);
    let mut d = Decoder::new(b.clone());
    let back = T::decode(&mut d);
    prop_assert_eq!(back.as_ref(), Ok(v));
    prop_assert_eq!(d.remaining(), 0);
    let cuts = [
        0,
        b.len() / 2,
        b.len().saturating_sub(4),
        b.len().saturating_sub(1),
    ];
    for &cut in &cuts {
        if cut < b.len() {
            let r = T::decode(&mut Decoder::new(b.slice(..cut)));
            prop_assert!(r.is_err(), "prefix {} of {} decoded: {:?}", cut, b.len(), r);
        }
    }
    Ok(())
}

fn sample_lock() -> Nlm4Lock {
    Nlm4Lock {
        caller_name: Bytes::from_static(b"host"),
        fh: Bytes::from_static(&[0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 1]),
        oh: Bytes::from_static(b"123@client"),
        svid: 123,
        l_offset: 0x1_0000_0000,
        l_len: 0,
    }
}

/// The words of `sample_lock()`.
fn sample_lock_words() -> Vec<u32> {
    vec![
        4,
        w(b"host"), // caller_name
        8,
        0xdead_beef,
        1, // fh
        10,
        w(b"123@"),
        w(b"clie"),
        w(b"nt\0\0"), // oh, padded
        123,          // svid
        1,
        0, // l_offset = 2^32
        0,
        0, // l_len = 0: to the end of the file
    ]
}

// ----- byte-level tests -----

#[test]
fn nlm4_lockargs_layout() {
    let a = Nlm4Lockargs {
        cookie: Bytes::from_static(&[1, 2, 3, 4, 5]),
        block: true,
        exclusive: true,
        alock: sample_lock(),
        reclaim: false,
        state: 3,
    };
    let mut expected = vec![
        5,
        0x0102_0304,
        0x0500_0000, // cookie, padded
        1,           // block
        1,           // exclusive
    ];
    expected.extend(sample_lock_words());
    expected.extend([
        0, // reclaim
        3, // state
    ]);
    let b = enc(&a);
    assert_eq!(&b[..], &words(&expected)[..]);
    assert_eq!(dec::<Nlm4Lockargs>(b), Ok(a));
}

#[test]
fn nlm4_lockargs_fields_point_into_the_receive_buffer() {
    let mut raw = words(&[5, 0x0102_0304, 0x0500_0000, 0, 1]);
    raw.extend(words(&sample_lock_words()));
    raw.extend(words(&[1, 7]));
    let buf = Bytes::from(raw);
    let base = buf.as_ptr() as usize;
    let a: Nlm4Lockargs = dec(buf.clone()).unwrap();
    assert!(!a.block && a.exclusive && a.reclaim);
    assert_eq!(a.state, 7);
    assert_eq!(a.alock, sample_lock());
    assert_eq!(a.cookie.as_ptr() as usize, base + 4);
    assert_eq!(a.alock.caller_name.as_ptr() as usize, base + 24);
    assert_eq!(a.alock.fh.as_ptr() as usize, base + 32);
    assert_eq!(a.alock.oh.as_ptr() as usize, base + 44);
}

#[test]
fn other_nlm4_arguments_layout() {
    let cookie = Bytes::from_static(b"ck");
    let lock = sample_lock_words();
    let t = Nlm4Testargs {
        cookie: cookie.clone(),
        exclusive: false,
        alock: sample_lock(),
    };
    let mut expected = vec![2, w(b"ck\0\0"), 0];
    expected.extend(&lock);
    assert_eq!(&enc(&t)[..], &words(&expected)[..]);
    assert_eq!(dec::<Nlm4Testargs>(enc(&t)), Ok(t));
    let c = Nlm4Cancargs {
        cookie: cookie.clone(),
        block: true,
        exclusive: false,
        alock: sample_lock(),
    };
    let mut expected = vec![2, w(b"ck\0\0"), 1, 0];
    expected.extend(&lock);
    assert_eq!(&enc(&c)[..], &words(&expected)[..]);
    let u = Nlm4Unlockargs {
        cookie: Bytes::new(),
        alock: sample_lock(),
    };
    let mut expected = vec![0];
    expected.extend(&lock);
    assert_eq!(&enc(&u)[..], &words(&expected)[..]);
    assert_eq!(dec::<Nlm4Unlockargs>(enc(&u)), Ok(u));
    let s = Nlm4Shareargs {
        cookie,
        share: Nlm4Share {
            caller_name: Bytes::from_static(b"pc"),
            fh: Bytes::from_static(&[7; 4]),
            oh: Bytes::from_static(b"o"),
            mode: FshMode::FsmDw,
            access: FshAccess::FsaRw,
        },
        reclaim: true,
    };
    assert_eq!(
        &enc(&s)[..],
        &words(&[
            2,
            w(b"ck\0\0"),
            2,
            w(b"pc\0\0"),
            4,
            0x0707_0707,
            1,
            w(b"o\0\0\0"),
            2, // fsm_DW
            3, // fsa_RW
            1, // reclaim
        ])[..]
    );
    assert_eq!(dec::<Nlm4Shareargs>(enc(&s)), Ok(s));
    let n = Nlm4Notify {
        name: Bytes::from_static(b"gone"),
        state: -1,
    };
    assert_eq!(&enc(&n)[..], &words(&[4, w(b"gone"), 0xffff_ffff])[..]);
    assert_eq!(dec::<Nlm4Notify>(enc(&n)), Ok(n));
}

#[test]
fn nlm4_testres_denied_carries_the_holder() {
    let r = Nlm4Testres {
        cookie: Bytes::from_static(b"ck"),
        stat: Nlm4Testrply::Denied(Nlm4Holder {
            exclusive: true,
            svid: 77,
            oh: Bytes::from_static(b"oh"),
            l_offset: 10,
            l_len: u64::MAX,
        }),
    };
    let expected = words(&[
        2,
        w(b"ck\0\0"), // cookie
        1,            // nlm4_denied
        1,            // exclusive
        77,           // svid
        2,
        w(b"oh\0\0"), // oh
        0,
        10, // l_offset
        0xffff_ffff,
        0xffff_ffff, // l_len
    ]);
    let b = enc(&r);
    assert_eq!(&b[..], &expected[..]);
    assert_eq!(dec::<Nlm4Testres>(b), Ok(r.clone()));
    assert_eq!(r.stat.discriminant(), Nlm4Stats::nlm4_denied);
}

#[test]
fn nlm4_testres_other_statuses_are_the_status_alone() {
    let granted = Nlm4Testres {
        cookie: Bytes::new(),
        stat: Nlm4Testrply::Other(Nlm4Stats::nlm4_granted),
    };
    assert_eq!(&enc(&granted)[..], &words(&[0, 0])[..]);
    assert_eq!(dec::<Nlm4Testres>(enc(&granted)), Ok(granted));
    let grace = Bytes::from(words(&[0, 4]));
    assert_eq!(
        dec::<Nlm4Testres>(grace).unwrap().stat,
        Nlm4Testrply::Other(Nlm4Stats::nlm4_denied_grace_period)
    );
    // nlm4_denied without the holder after it is cut short.
    assert!(matches!(
        dec::<Nlm4Testres>(Bytes::from(words(&[0, 1]))),
        Err(XdrError::Truncated { .. })
    ));
}

#[test]
fn nlm4_res_layout() {
    let r = Nlm4Res {
        cookie: Bytes::from_static(&[9, 9, 9, 9]),
        stat: Nlm4Stat {
            stat: Nlm4Stats::nlm4_blocked,
        },
    };
    let b = enc(&r);
    assert_eq!(&b[..], &words(&[4, 0x0909_0909, 3])[..]);
    assert_eq!(dec::<Nlm4Res>(b), Ok(r));
    let sh = Nlm4Shareres {
        cookie: Bytes::new(),
        stat: Nlm4Stats::nlm4_granted,
        sequence: 2,
    };
    assert_eq!(&enc(&sh)[..], &words(&[0, 0, 2])[..]);
    assert_eq!(dec::<Nlm4Shareres>(enc(&sh)), Ok(sh));
}

#[test]
fn sm_mon_args_layout() {
    let mut r#priv = [0u8; 16];
    for (i, b) in r#priv.iter_mut().enumerate() {
        *b = i as u8;
    }
    let m = Mon {
        mon_id: MonId {
            mon_name: Bytes::from_static(b"server"),
            my_id: MyId {
                my_name: Bytes::from_static(b"me"),
                my_prog: NLM_PROG as i32,
                my_vers: 3,
                my_proc: 16,
            },
        },
        r#priv,
    };
    let expected = words(&[
        6,
        w(b"serv"),
        w(b"er\0\0"), // mon_name
        2,
        w(b"me\0\0"), // my_name
        100_021,      // my_prog
        3,            // my_vers
        16,           // my_proc
        0x0001_0203,
        0x0405_0607,
        0x0809_0a0b,
        0x0c0d_0e0f, // priv: 16 bytes, no length word
    ]);
    let b = enc(&m);
    assert_eq!(&b[..], &expected[..]);
    assert_eq!(dec::<Mon>(b), Ok(m.clone()));
    // SM_UNMON's argument is the MonId alone, SM_UNMON_ALL's the MyId alone.
    assert_eq!(&enc(&m.mon_id)[..], &expected[..expected.len() - 16]);
    assert_eq!(
        &enc(&m.mon_id.my_id)[..],
        &expected[12..expected.len() - 16]
    );
    assert_eq!(
        &enc(&SmName {
            mon_name: Bytes::from_static(b"server")
        })[..],
        &expected[..12]
    );
}

#[test]
fn sm_results_layout() {
    let r = SmStatRes {
        res_stat: SmRes::stat_succ,
        state: 7,
    };
    assert_eq!(&enc(&r)[..], &words(&[0, 7])[..]);
    assert_eq!(dec::<SmStatRes>(enc(&r)), Ok(r));
    // sm_res is open: a result this code does not know is carried.
    assert_eq!(
        dec::<SmStatRes>(Bytes::from(words(&[5, 9]))),
        Ok(SmStatRes {
            res_stat: SmRes(5),
            state: 9
        })
    );
    assert_eq!(&enc(&SmStat { state: -3 })[..], &words(&[0xffff_fffd])[..]);
}

#[test]
fn sm_notify_args_layout() {
    let n = StatChge {
        mon_name: Bytes::from_static(b"client1"),
        state: 5,
    };
    let b = enc(&n);
    assert_eq!(&b[..], &words(&[7, w(b"clie"), w(b"nt1\0"), 5])[..]);
    assert_eq!(dec::<StatChge>(b), Ok(n));
}

#[test]
fn status_callback_layout() {
    let s = SmStatus {
        mon_name: Bytes::from_static(b"h"),
        state: 4,
        r#priv: [0xff; 16],
    };
    let b = enc(&s);
    assert_eq!(
        &b[..],
        &words(&[
            1,
            w(b"h\0\0\0"),
            4,
            0xffff_ffff,
            0xffff_ffff,
            0xffff_ffff,
            0xffff_ffff
        ])[..]
    );
    assert_eq!(dec::<SmStatus>(b), Ok(s));
    // priv is exactly 16 bytes: 12 are cut short.
    assert!(matches!(
        dec::<SmStatus>(Bytes::from(words(&[0, 4, 0, 0, 0]))),
        Err(XdrError::Truncated { .. })
    ));
}

// ----- bounds -----

/// Decodes `T` from `prefix` words, a length word `len` and no data at all: the bound is checked
/// on the length word, before the (absent) bytes are looked at or anything is allocated.
fn refused_from_the_length<T: Decode + Debug>(prefix: &[u32], len: usize, max: usize) {
    let mut ws = prefix.to_vec();
    ws.push(len as u32);
    assert_eq!(
        dec::<T>(Bytes::from(words(&ws))).unwrap_err(),
        XdrError::TooLong {
            len: len as u64,
            max
        },
        "{}",
        std::any::type_name::<T>()
    );
}

#[test]
fn oversized_items_are_refused_before_allocation() {
    // cookie (MAX_NETOBJ_SZ), caller_name (LM_MAXSTRLEN), fh (NFS3_FHSIZE), oh.
    refused_from_the_length::<Nlm4Lockargs>(&[], 1025, NLM4_MAX_NETOBJ);
    refused_from_the_length::<Nlm4Lockargs>(&[], u32::MAX as usize, NLM4_MAX_NETOBJ);
    refused_from_the_length::<Nlm4Lockargs>(&[0, 0, 0], 1025, NLM4_MAX_CALLER_NAME);
    refused_from_the_length::<Nlm4Lockargs>(&[0, 0, 0, 0], 65, NLM4_FHSIZE);
    refused_from_the_length::<Nlm4Lockargs>(&[0, 0, 0, 0, 0], 1025, NLM4_MAX_NETOBJ);
    refused_from_the_length::<Nlm4Testargs>(&[0, 0], 1025, NLM4_MAX_CALLER_NAME);
    refused_from_the_length::<Nlm4Unlockargs>(&[0, 0], 65, NLM4_FHSIZE);
    refused_from_the_length::<Nlm4Shareargs>(&[0], 1025, NLM4_MAX_CALLER_NAME);
    refused_from_the_length::<Nlm4Shareargs>(&[0, 0], 65, NLM4_FHSIZE);
    refused_from_the_length::<Nlm4Res>(&[], 1025, NLM4_MAX_NETOBJ);
    refused_from_the_length::<Nlm4Testres>(&[0, 1, 0, 0], 1025, NLM4_MAX_NETOBJ);
    refused_from_the_length::<Nlm4Notify>(&[], 1026, MAXNAMELEN as usize);
    // NSM names: SM_MAXSTRLEN.
    let sm = SM_MAXSTRLEN as usize;
    refused_from_the_length::<SmName>(&[], sm + 1, sm);
    refused_from_the_length::<Mon>(&[], sm + 1, sm);
    refused_from_the_length::<Mon>(&[0], sm + 1, sm);
    refused_from_the_length::<MyId>(&[], sm + 1, sm);
    refused_from_the_length::<StatChge>(&[], sm + 1, sm);
    refused_from_the_length::<SmStatus>(&[], sm + 1, sm);
}

/// An opaque item of `len` bytes of `fill`, as XDR words (length, data, padding).
fn opaque_words(len: usize, fill: u8) -> Vec<u8> {
    let mut v = words(&[len as u32]);
    v.resize(v.len() + len, fill);
    v.resize(v.len() + (4 - len % 4) % 4, 0);
    v
}

#[test]
fn items_at_their_bound_decode() {
    let lock = |name: usize, fh: usize, oh: usize| {
        let mut v = opaque_words(NLM4_MAX_NETOBJ, 1); // cookie
        v.extend(words(&[0, 1])); // block, exclusive
        v.extend(opaque_words(name, b'n'));
        v.extend(opaque_words(fh, 2));
        v.extend(opaque_words(oh, 3));
        v.extend(words(&[0, 0, 0, 0, 0, 0, 0])); // svid, l_offset, l_len, reclaim, state
        Bytes::from(v)
    };
    let a: Nlm4Lockargs = dec(lock(NLM4_MAX_CALLER_NAME, NLM4_FHSIZE, NLM4_MAX_NETOBJ)).unwrap();
    assert_eq!(a.cookie.len(), NLM4_MAX_NETOBJ);
    assert_eq!(a.alock.caller_name.len(), NLM4_MAX_CALLER_NAME);
    assert_eq!(a.alock.fh.len(), NLM4_FHSIZE);
    assert_eq!(a.alock.oh.len(), NLM4_MAX_NETOBJ);
    assert_eq!(
        enc(&a),
        lock(NLM4_MAX_CALLER_NAME, NLM4_FHSIZE, NLM4_MAX_NETOBJ)
    );
    for (name, fh, oh) in [
        (NLM4_MAX_CALLER_NAME + 1, NLM4_FHSIZE, 0),
        (0, NLM4_FHSIZE + 1, 0),
        (0, 0, NLM4_MAX_NETOBJ + 1),
    ] {
        assert!(matches!(
            dec::<Nlm4Lockargs>(lock(name, fh, oh)),
            Err(XdrError::TooLong { .. })
        ));
    }
    // FREE_ALL's name: MAXNAMELEN (LM_MAXSTRLEN + 1), as the .x says.
    let mut raw = opaque_words(MAXNAMELEN as usize, b'x');
    raw.extend(words(&[1]));
    assert_eq!(
        dec::<Nlm4Notify>(Bytes::from(raw)).unwrap().name.len(),
        1025
    );
    let mut raw = opaque_words(SM_MAXSTRLEN as usize, b'x');
    raw.extend(words(&[1]));
    assert_eq!(
        dec::<StatChge>(Bytes::from(raw)).unwrap().mon_name.len(),
        1024
    );
}

// ----- enums, constants -----

#[test]
fn unknown_discriminants() {
    // nlm4_stats is open: an unknown status is carried.
    assert_eq!(
        dec::<Nlm4Res>(Bytes::from(words(&[0, 42]))),
        Ok(Nlm4Res {
            cookie: Bytes::new(),
            stat: Nlm4Stat {
                stat: Nlm4Stats(42)
            }
        })
    );
    assert_eq!(
        dec::<Nlm4Testrply>(Bytes::from(words(&[99]))),
        Ok(Nlm4Testrply::Other(Nlm4Stats(99)))
    );
    // fsh_mode and fsh_access are closed.
    let share = |mode: u32, access: u32| Bytes::from(words(&[0, 0, 0, 0, mode, access, 0]));
    assert!(dec::<Nlm4Shareargs>(share(3, 3)).is_ok());
    assert_eq!(
        dec::<Nlm4Shareargs>(share(4, 0)),
        Err(XdrError::BadDiscriminant(4))
    );
    assert_eq!(
        dec::<Nlm4Shareargs>(share(0, 4)),
        Err(XdrError::BadDiscriminant(4))
    );
    // Booleans are 0 or 1.
    assert_eq!(
        dec::<Nlm4Lockargs>(Bytes::from(words(&[0, 2]))),
        Err(XdrError::BadBool(2))
    );
}

#[test]
fn status_and_procedure_values() {
    let named = (0..=20).filter(|v| Nlm4Stats(*v).name().is_some()).count();
    assert_eq!(named, 10);
    assert_eq!(
        (
            Nlm4Stats::nlm4_granted.0,
            Nlm4Stats::nlm4_denied.0,
            Nlm4Stats::nlm4_denied_nolocks.0,
            Nlm4Stats::nlm4_blocked.0,
            Nlm4Stats::nlm4_denied_grace_period.0,
            Nlm4Stats::nlm4_deadlck.0,
            Nlm4Stats::nlm4_rofs.0,
            Nlm4Stats::nlm4_stale_fh.0,
            Nlm4Stats::nlm4_fbig.0,
            Nlm4Stats::nlm4_failed.0,
        ),
        (0, 1, 2, 3, 4, 5, 6, 7, 8, 9)
    );
    assert_eq!(format!("{:?}", Nlm4Stats::nlm4_stale_fh), "nlm4_stale_fh");
    assert_eq!(format!("{:?}", Nlm4Stats(10)), "Nlm4Stats(10)");
    assert_eq!(NlmStats::NlmDenied as i32, 1);
    assert_eq!((SmRes::stat_succ.0, SmRes::stat_fail.0), (0, 1));
    assert_eq!((NLM_PROG, NLM_VERS4), (100_021, 4));
    assert_eq!(
        [
            NLM4_TEST,
            NLM4_LOCK,
            NLM4_CANCEL,
            NLM4_UNLOCK,
            NLM4_GRANTED,
            NLM4_TEST_MSG,
            NLM4_LOCK_MSG,
            NLM4_CANCEL_MSG,
            NLM4_UNLOCK_MSG,
            NLM4_GRANTED_MSG,
            NLM4_TEST_RES,
            NLM4_LOCK_RES,
            NLM4_CANCEL_RES,
            NLM4_UNLOCK_RES,
            NLM4_GRANTED_RES,
        ],
        [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]
    );
    assert_eq!(
        (NLM4_SHARE, NLM4_UNSHARE, NLM4_NM_LOCK, NLM4_FREE_ALL),
        (20, 21, 22, 23)
    );
    assert_eq!((SM_PROG, SM_VERS), (100_024, 1));
    assert_eq!(
        (
            SM_STAT,
            SM_MON,
            SM_UNMON,
            SM_UNMON_ALL,
            SM_SIMU_CRASH,
            SM_NOTIFY
        ),
        (1, 2, 3, 4, 5, 6)
    );
    assert_eq!(
        (MAX_NETOBJ_SZ, LM_MAXSTRLEN, MAXNAMELEN, SM_MAXSTRLEN),
        (1024, 1024, 1025, 1024)
    );
    assert_eq!(NLM4_MAX_NETOBJ, MAX_NETOBJ_SZ as usize);
    assert_eq!(NLM4_MAX_CALLER_NAME, LM_MAXSTRLEN as usize);
    assert_eq!((FshMode::FsmDrw as i32, FshAccess::FsaW as i32), (3, 2));
}

// ----- round trips -----

fn bytes_up_to(max: usize) -> impl Strategy<Value = Bytes> {
    vec(any::<u8>(), 0..=max).prop_map(Bytes::from)
}

fn netobj() -> impl Strategy<Value = Bytes> {
    prop_oneof![bytes_up_to(16), bytes_up_to(NLM4_MAX_NETOBJ)]
}

fn name() -> impl Strategy<Value = Bytes> {
    prop_oneof![bytes_up_to(16), bytes_up_to(NLM4_MAX_CALLER_NAME)]
}

fn lock() -> impl Strategy<Value = Nlm4Lock> {
    (
        name(),
        bytes_up_to(NLM4_FHSIZE),
        netobj(),
        any::<u32>(),
        any::<u64>(),
        any::<u64>(),
    )
        .prop_map(|(caller_name, fh, oh, svid, l_offset, l_len)| Nlm4Lock {
            caller_name,
            fh,
            oh,
            svid,
            l_offset,
            l_len,
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn rt_nlm4_args(
        a: Nlm4Testargs, b: Nlm4Lockargs, c: Nlm4Cancargs, d: Nlm4Unlockargs, e: Nlm4Shareargs,
        f: Nlm4Notify,
    ) {
        roundtrip(&a)?; roundtrip(&b)?; roundtrip(&c)?; roundtrip(&d)?; roundtrip(&e)?;
        roundtrip(&f)?;
    }

    #[test]
    fn rt_nlm4_results(a: Nlm4Testres, b: Nlm4Res, c: Nlm4Shareres, d: Nlm4Testrply, e: Nlm4Holder) {
        roundtrip(&a)?; roundtrip(&b)?; roundtrip(&c)?; roundtrip(&d)?; roundtrip(&e)?;
    }

    #[test]
    fn rt_nsm(
        a: SmName, b: Mon, c: MonId, d: MyId, e: StatChge, f: SmStatRes, g: SmStat, h: SmStatus,
    ) {
        roundtrip(&a)?; roundtrip(&b)?; roundtrip(&c)?; roundtrip(&d)?; roundtrip(&e)?;
        roundtrip(&f)?; roundtrip(&g)?; roundtrip(&h)?;
    }

    #[test]
    fn rt_large_values(
        cookie in netobj(), alock in lock(), block: bool, exclusive: bool, reclaim: bool,
        state: i32, holder_oh in netobj(), svid: u32, l_offset: u64, l_len: u64,
        mon_name in prop_oneof![bytes_up_to(16), bytes_up_to(SM_MAXSTRLEN as usize)],
        r#priv: [u8; 16],
    ) {
        roundtrip(&Nlm4Lockargs { cookie: cookie.clone(), block, exclusive, alock: alock.clone(), reclaim, state })?;
        roundtrip(&Nlm4Testargs { cookie: cookie.clone(), exclusive, alock: alock.clone() })?;
        roundtrip(&Nlm4Shareargs {
            cookie: cookie.clone(),
            share: Nlm4Share { caller_name: alock.caller_name, fh: alock.fh, oh: alock.oh, mode: FshMode::FsmDr, access: FshAccess::FsaR },
            reclaim,
        })?;
        roundtrip(&Nlm4Testres {
            cookie,
            stat: Nlm4Testrply::Denied(Nlm4Holder { exclusive, svid, oh: holder_oh, l_offset, l_len }),
        })?;
        roundtrip(&Mon {
            mon_id: MonId { mon_name: mon_name.clone(), my_id: MyId { my_name: mon_name.clone(), my_prog: 100_021, my_vers: 4, my_proc: 16 } },
            r#priv,
        })?;
        roundtrip(&StatChge { mon_name: mon_name.clone(), state })?;
        roundtrip(&SmStatus { mon_name, state, r#priv })?;
    }

    #[test]
    fn garbage_never_panics(raw in vec(any::<u8>(), 0..512)) {
        let b = Bytes::from(raw);
        fn go<T: Decode>(b: &Bytes) {
            let _ = T::decode(&mut Decoder::new(b.clone()));
        }
        go::<Nlm4Testargs>(&b);
        go::<Nlm4Lockargs>(&b);
        go::<Nlm4Cancargs>(&b);
        go::<Nlm4Unlockargs>(&b);
        go::<Nlm4Shareargs>(&b);
        go::<Nlm4Notify>(&b);
        go::<Nlm4Testres>(&b);
        go::<Nlm4Res>(&b);
        go::<Nlm4Shareres>(&b);
        go::<SmName>(&b);
        go::<Mon>(&b);
        go::<MonId>(&b);
        go::<MyId>(&b);
        go::<StatChge>(&b);
        go::<SmStatRes>(&b);
        go::<SmStat>(&b);
        go::<SmStatus>(&b);
    }

    #[test]
    fn garbage_words_never_panic(ws in vec(prop_oneof![0u32..4, any::<u32>()], 0..64)) {
        // Small words make lengths, booleans and discriminants valid more often.
        let b = Bytes::from(words(&ws));
        fn go<T: Decode>(b: &Bytes) {
            let _ = T::decode(&mut Decoder::new(b.clone()));
        }
        go::<Nlm4Lockargs>(&b);
        go::<Nlm4Shareargs>(&b);
        go::<Nlm4Testres>(&b);
        go::<Mon>(&b);
        go::<SmStatus>(&b);
    }

    #[test]
    fn truncated_args_fail(a: Nlm4Lockargs, m: Mon, cut in any::<prop::sample::Index>()) {
        let b = enc(&a);
        prop_assert!(dec::<Nlm4Lockargs>(b.slice(..cut.index(b.len()))).is_err());
        let b = enc(&m);
        prop_assert!(dec::<Mon>(b.slice(..cut.index(b.len()))).is_err());
    }
}
