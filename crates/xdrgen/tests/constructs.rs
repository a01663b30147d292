//! Runtime behaviour of code generated from tests/fixtures/constructs.x (the generated file
//! is committed as tests/generated/constructs.rs; `golden_file_is_current` checks that it is
//! what the generator produces now).

use bytes::Bytes;
use proptest::prelude::*;
use xdr::{Decode, Decoder, Encode, Encoder, XdrError};

#[allow(missing_docs, dead_code)]
mod generated {
    include!("generated/constructs.rs");
}
use generated::*;

fn generator() -> xdrgen::Generator {
    xdrgen::Generator::new()
        .open_enum("status")
        .bound("everything.i", 10)
        .bound("node", 5)
        .max_depth(8)
        .payload("blob.data")
        .bulk("blob.bulk")
        .vec_list("vnode")
        .bound("vnode", 4)
        .option_union("opt_point")
        .option_union("opt_int")
        .newtype("path")
        .newtype("vlist")
        .variant_name("rstat", "RS_OK", "Ok")
        .variant_name("rstat", "default", "Fail")
        .proptest(true)
}

fn fixture() -> String {
    format!("{}/tests/fixtures/constructs.x", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn golden_file_is_current() {
    let path = format!(
        "{}/tests/generated/constructs.rs",
        env!("CARGO_MANIFEST_DIR")
    );
    let fresh = generator().generate(&[fixture()]).unwrap();
    if std::env::var_os("XDRGEN_BLESS").is_some() {
        std::fs::write(&path, &fresh).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap();
    assert!(
        committed == fresh,
        "tests/generated/constructs.rs is stale: rerun with XDRGEN_BLESS=1"
    );
}

fn encode<T: Encode>(v: &T) -> Bytes {
    let mut e = Encoder::new();
    v.encode(&mut e);
    e.finish().to_bytes()
}

fn decode<T: Decode>(b: Bytes) -> Result<T, XdrError> {
    let mut d = Decoder::new(b);
    let v = T::decode(&mut d)?;
    assert_eq!(d.remaining(), 0, "decoding left bytes over");
    Ok(v)
}

fn words(w: &[u32]) -> Bytes {
    Bytes::from(w.iter().flat_map(|x| x.to_be_bytes()).collect::<Vec<u8>>())
}

#[test]
fn constants_and_program_numbers() {
    assert_eq!(SMALL, 4u32);
    assert_eq!(NEG, -2i32);
    assert_eq!(BIG, 0x1_0000_0000u64);
    assert_eq!(OCT, 8u32);
    assert_eq!(TEST_PROG, 0x2000_0001u32);
    assert_eq!((TEST_V1, TEST_NULL, TEST_DRAW), (1, 0, 1));
}

#[test]
fn type_mapping() {
    // Aliases are plain Rust types; compile-time checks of the mapping.
    let _: IntAlias = -1i32;
    let _: UintAlias = 1u32;
    let _: PlainUnsigned = 1u32;
    let _: HyperAlias = -1i64;
    let _: UhyperAlias = 1u64;
    let _: BoolAlias = true;
    let _: CU32 = 1u32;
    let _: FixedBytes = [0u8; 4];
    let _: BigFixed = Bytes::new();
    let _: VarBytes = Bytes::new();
    let _: AnyName = Bytes::new();
    let _: FixedInts = [1, 2, 3];
    let _: SomeInts = vec![1];
    let _: NestedBytes = vec![Bytes::new()];
    let _: MaybePoint = Some(Point { x: 1, y: 2 });
    let _: Option<Box<Node>> = Holder {
        first: None,
        count: 0,
    }
    .first;
    let _: Option<Box<Tree>> = None;
    let _: xdr::Payload = Blob {
        data: xdr::Payload::default(),
        bulk: Bytes::new(),
    }
    .data;
}

#[test]
fn closed_enum_rejects_unknown_values_and_accepts_negative_ones() {
    assert_eq!(decode::<Color>(words(&[2])), Ok(Color::Blue));
    assert_eq!(decode::<Color>(words(&[(-2i32) as u32])), Ok(Color::Minus));
    assert_eq!(
        decode::<Color>(words(&[3])),
        Err(XdrError::BadDiscriminant(3))
    );
    assert_eq!(Color::from_i32(1), Some(Color::Green));
    assert_eq!(Color::Green.name(), "GREEN");
    assert_eq!(Color::ALL.len(), 4);
}

#[test]
fn open_enum_keeps_unknown_values() {
    assert_eq!(decode::<Status>(words(&[7])), Ok(Status::LATER));
    let odd = decode::<Status>(words(&[12345])).unwrap();
    assert_eq!(odd, Status(12345));
    assert_eq!(odd.name(), None);
    assert_eq!(format!("{odd:?} {:?}", Status::FAIL), "Status(12345) FAIL");
    assert_eq!(encode(&odd), words(&[12345]));
}

#[test]
fn union_arms_default_and_shared_labels() {
    // RED and GREEN share an arm but stay distinct variants, so each encodes back.
    let red = decode::<Shape>(words(&[0, 1, 2])).unwrap();
    assert_eq!(red, Shape::Red(Point { x: 1, y: 2 }));
    let green = decode::<Shape>(words(&[1, 1, 2])).unwrap();
    assert_eq!(green, Shape::Green(Point { x: 1, y: 2 }));
    assert_eq!(encode(&green), words(&[1, 1, 2]));
    assert_eq!(decode::<Shape>(words(&[2])), Ok(Shape::Blue));
    assert_eq!(
        decode::<Shape>(words(&[(-2i32) as u32, 9])),
        Ok(Shape::Default(Color::Minus, 9))
    );
    // The default arm only takes values of the (closed) enum.
    assert_eq!(
        decode::<Shape>(words(&[77, 9])),
        Err(XdrError::BadDiscriminant(77))
    );
    assert_eq!(green.discriminant(), Color::Green);
    assert_eq!(Shape::Default(Color::Minus, 0).discriminant(), Color::Minus);
}

#[test]
fn union_without_default_rejects_unknown_discriminants() {
    assert_eq!(decode::<Outcome>(words(&[1])), Ok(Outcome::Fail));
    // status is open, yet an arm it does not have is still an error.
    assert_eq!(
        decode::<Outcome>(words(&[7])),
        Err(XdrError::BadDiscriminant(7))
    );
    assert_eq!(
        decode::<ByUint>(words(&[6])),
        Err(XdrError::BadDiscriminant(6))
    );
    assert_eq!(
        decode::<HalfBool>(words(&[0])),
        Err(XdrError::BadDiscriminant(0))
    );
    assert_eq!(decode::<HalfBool>(words(&[2])), Err(XdrError::BadBool(2)));
}

#[test]
fn int_uint_and_bool_discriminants() {
    assert_eq!(decode::<ByInt>(words(&[1, 5])), Ok(ByInt::Case1(5)));
    assert_eq!(
        decode::<ByInt>(words(&[u32::MAX, 0, 3])),
        Ok(ByInt::CaseMinus1(3))
    );
    assert_eq!(decode::<ByInt>(words(&[40])), Ok(ByInt::Default(40)));
    assert_eq!(encode(&ByInt::Default(40)), words(&[40]));
    assert_eq!(
        decode::<ByUint>(words(&[5, 2, 0x6869_0000])),
        Ok(ByUint::Case5(Bytes::from_static(b"hi")))
    );
    assert_eq!(
        decode::<ByBool>(words(&[1, 3, 4])),
        Ok(ByBool::True(Point { x: 3, y: 4 }))
    );
    assert_eq!(decode::<ByBool>(words(&[0])), Ok(ByBool::False));
}

#[test]
fn bounds_from_the_spec_and_from_the_generator() {
    // string five<4>: 5 bytes is over the .x bound.
    assert_eq!(
        decode::<ByUint>(words(&[5, 5, 0, 0])),
        Err(XdrError::TooLong { len: 5, max: 4 })
    );
    // typedef var_bytes nested_bytes<2>: 3 elements is over.
    let mut v = everything();
    v.p = vec![Bytes::new(), Bytes::new(), Bytes::new()];
    assert_eq!(
        decode::<Everything>(encode(&v)),
        Err(XdrError::TooLong { len: 3, max: 2 })
    );
    // typedef opaque var_bytes<8>, inside nested_bytes: 9 bytes is over.
    v.p = vec![Bytes::from(vec![0u8; 9])];
    assert_eq!(
        decode::<Everything>(encode(&v)),
        Err(XdrError::TooLong { len: 9, max: 8 })
    );
}

fn everything() -> Everything {
    Everything {
        a: -1,
        b: 2,
        c: -3,
        d: 4,
        e: true,
        f: Color::Blue,
        g: [1, 2, 3],
        h: Bytes::from_static(b"abc"),
        i: Bytes::from_static(b"name"),
        j: [Point { x: 1, y: 2 }, Point { x: 3, y: 4 }],
        k: vec![Point { x: 5, y: 6 }],
        l: Some(Point { x: 7, y: 8 }),
        m: Bytes::from_static(b"m"),
        r#type: 9,
        anon: EverythingAnon { inner: 10 },
        n: Bytes::from(vec![7u8; 100]),
        o: vec![1, 2],
        p: vec![Bytes::from_static(b"p")],
        q: [1, 2, 3],
        r: 11,
        s: None,
        t: [9, 8, 7, 6],
    }
}

#[test]
fn struct_with_every_declaration_round_trips() {
    let v = everything();
    let b = encode(&v);
    assert_eq!(b.len() % 4, 0);
    assert_eq!(decode::<Everything>(b), Ok(v));
}

#[test]
fn generator_bound_overrides_an_unbounded_string() {
    // everything.i is `string i<>`, bounded to 10 by the generator settings.
    let mut v = everything();
    v.i = Bytes::from(vec![b'x'; 11]);
    assert_eq!(
        decode::<Everything>(encode(&v)),
        Err(XdrError::TooLong { len: 11, max: 10 })
    );
}

#[test]
fn lengths_are_checked_against_the_bytes_left_before_allocating() {
    // `point k<>` claims 1000 points (8 bytes each) with 8 bytes left.
    let mut d = Decoder::new(words(&[1000, 1, 2]));
    assert_eq!(
        d.array(1024, 8, <Point as Decode>::decode).unwrap_err(),
        XdrError::Truncated {
            needed: 8000,
            remaining: 8
        }
    );
    // A struct that is not all there.
    assert_eq!(
        decode::<Point>(words(&[1])),
        Err(XdrError::Truncated {
            needed: 4,
            remaining: 0
        })
    );
}

#[test]
fn opaque_data_is_a_slice_of_the_input() {
    let v = everything();
    let b = encode(&v);
    let range = b.as_ptr() as usize..b.as_ptr() as usize + b.len();
    let back: Everything = decode(b).unwrap();
    assert!(range.contains(&(back.h.as_ptr() as usize)));
    assert!(range.contains(&(back.n.as_ptr() as usize)));
}

fn list(n: usize) -> Node {
    let mut head = Node {
        v: 0,
        label: Bytes::new(),
        next: None,
    };
    for i in (1..n).rev() {
        head = Node {
            v: i as i32,
            label: Bytes::from_static(b"l"),
            next: Some(Box::new(head)),
        };
    }
    head
}

#[test]
fn linked_list_is_iterative_and_bounded() {
    let l = list(5);
    let b = encode(&l);
    let back: Node = decode(b).unwrap();
    assert_eq!(back, l);
    assert_eq!(back.clone(), l);
    assert!(format!("{back:?}").starts_with("[Node { v: 1, label: b\"l\" }, Node { v: 2"));
    // bound("node", 5): a sixth node is refused.
    assert_eq!(
        decode::<Node>(encode(&list(6))),
        Err(XdrError::TooLong { len: 6, max: 5 })
    );
    let h = Holder {
        first: Some(Box::new(list(3))),
        count: 3,
    };
    assert_eq!(decode::<Holder>(encode(&h)), Ok(h));
}

#[test]
fn a_list_is_decoded_in_order_and_a_list_cut_short_is_refused() {
    // Every length up to the bound comes back node for node, in order.
    for n in 1..=5 {
        let l = list(n);
        let back: Node = decode(encode(&l)).unwrap();
        let mut got = Vec::new();
        let mut cur = Some(&back);
        while let Some(x) = cur {
            got.push(x.v);
            cur = x.next.as_deref();
        }
        assert_eq!(got, (1..n as i32).chain([0]).collect::<Vec<_>>());
    }
    // The wire says another node follows the third, and the message ends there: the nodes
    // read so far are dropped and the list is refused.
    let b = encode(&list(4));
    let cut = b.slice(..b.len() - 12);
    assert_eq!(
        decode::<Node>(cut),
        Err(XdrError::Truncated {
            needed: 4,
            remaining: 0
        })
    );
}

#[test]
fn long_lists_are_encoded_compared_cloned_and_dropped_without_recursion() {
    // Far more nodes than a recursive drop or clone could take on a test thread's stack.
    let n = 300_000;
    let l = list(n);
    let c = l.clone();
    assert_eq!(c, l);
    let b = encode(&l);
    // Each node: v, label length, label padded to 4 (empty in the last node), more-flag.
    assert_eq!(b.len(), (n - 1) * 16 + 12);
    drop(c);
    drop(l);
}

fn tree(depth: u32) -> Tree {
    let sub = |d: u32| {
        if d == 0 {
            None
        } else {
            Some(Box::new(tree(d - 1)))
        }
    };
    Tree {
        v: depth as i32,
        left: sub(depth),
        right: None,
    }
}

#[test]
fn other_recursion_has_a_depth_bound() {
    let t = tree(8);
    assert_eq!(decode::<Tree>(encode(&t)), Ok(t));
    assert_eq!(
        decode::<Tree>(encode(&tree(9))),
        Err(XdrError::TooLong { len: 9, max: 8 })
    );
    let e = Expr::Case1(Pair {
        a: Some(Box::new(Expr::Case0(1))),
        b: Some(Box::new(Expr::Case1(Pair { a: None, b: None }))),
    });
    assert_eq!(decode::<Expr>(encode(&e)), Ok(e));
}

#[test]
fn payload_and_bulk_fields_stay_separate_segments() {
    let b = Blob {
        data: xdr::Payload::Bytes(Bytes::from_static(b"payload")),
        bulk: Bytes::from_static(b"bulk"),
    };
    let mut e = Encoder::new();
    b.encode(&mut e);
    let r = e.finish();
    let bulk = r
        .segments
        .iter()
        .filter(|s| matches!(s, xdr::Segment::Bulk(_)))
        .count();
    assert_eq!(bulk, 2);
    assert_eq!(decode::<Blob>(r.to_bytes()), Ok(b));
}

#[test]
fn rpcgen_long_is_an_int() {
    let _: UlongAlias = u32::MAX;
    let _: LongAlias = i32::MIN;
}

#[test]
fn bsd_u_int_typedefs_are_unsigned_int_and_hyper() {
    let _: BsdU64 = u64::MAX;
    let v = BsdInts {
        a: u32::MAX,
        b: 0x0000_0100_0000_0002,
    };
    assert_eq!(encode(&v), words(&[0xffff_ffff, 0x100, 2]));
    assert_eq!(decode::<BsdInts>(encode(&v)), Ok(v));
    assert!(decode::<BsdInts>(words(&[0, 0])).is_err());
}

fn vnodes(n: i32) -> Vec<Vnode> {
    (0..n)
        .map(|v| Vnode {
            v,
            label: Bytes::from_static(b"ab"),
        })
        .collect()
}

#[test]
fn vec_list_keeps_the_linked_list_encoding() {
    let h = Vholder {
        first: vnodes(2),
        rest: Vlist(vec![]),
        eof: true,
    };
    let ab = u32::from_be_bytes(*b"ab\0\0");
    // TRUE before each node, FALSE after the last; the node has no tail field of its own.
    assert_eq!(encode(&h), words(&[1, 0, 2, ab, 1, 1, 2, ab, 0, 0, 1]));
    assert_eq!(decode::<Vholder>(encode(&h)), Ok(h));
    // The typedef'd list (a newtype) decodes on its own, bounded by bound("vnode", 4).
    assert_eq!(
        decode::<Vlist>(encode(&Vlist(vnodes(4)))),
        Ok(Vlist(vnodes(4)))
    );
    assert_eq!(
        decode::<Vlist>(encode(&Vlist(vnodes(5)))),
        Err(XdrError::TooLong { len: 5, max: 4 })
    );
    // A bad more-flag, and a list that promises a node and ends, are refused.
    assert_eq!(decode::<Vlist>(words(&[2])), Err(XdrError::BadBool(2)));
    assert!(decode::<Vlist>(words(&[1, 7])).is_err());
    // The node's own bounds still hold.
    assert!(matches!(
        decode::<Vlist>(words(&[1, 0, 9, 0, 0, 0, 0])),
        Err(XdrError::TooLong { len: 9, max: 8 })
    ));
}

#[test]
fn option_unions_are_options() {
    assert_eq!(OptPoint::default(), OptPoint(None));
    assert_eq!(encode(&OptPoint(None)), words(&[0]));
    let p = OptPoint(Some(Point { x: 1, y: -1 }));
    assert_eq!(encode(&p), words(&[1, 1, u32::MAX]));
    assert_eq!(decode::<OptPoint>(encode(&p)), Ok(p));
    // `default: void` for FALSE: the discriminant is still a bool.
    assert_eq!(encode(&OptInt(Some(5))), words(&[1, 5]));
    assert_eq!(decode::<OptInt>(words(&[0])), Ok(OptInt(None)));
    assert_eq!(decode::<OptInt>(words(&[2])), Err(XdrError::BadBool(2)));
}

#[test]
fn newtype_typedefs_have_their_own_codec_and_bound() {
    let p = Path(Bytes::from_static(b"/a/b"));
    assert_eq!(encode(&p), words(&[4, u32::from_be_bytes(*b"/a/b")]));
    assert_eq!(decode::<Path>(encode(&p)), Ok(p));
    let long = Path(Bytes::from_static(b"/123456789012"));
    assert_eq!(
        decode::<Path>(encode(&long)),
        Err(XdrError::TooLong { len: 13, max: 12 })
    );
}

#[test]
fn renamed_variants() {
    let ok = Rres::Ok(Point { x: 2, y: 3 });
    assert_eq!(ok.discriminant(), Rstat::RsOk);
    assert_eq!(encode(&ok), words(&[0, 2, 3]));
    let fail = Rres::Fail(Rstat::RsBusy, Path(Bytes::from_static(b"x")));
    assert_eq!(fail.discriminant(), Rstat::RsBusy);
    assert_eq!(
        encode(&fail),
        words(&[2, 1, u32::from_be_bytes(*b"x\0\0\0")])
    );
    assert_eq!(decode::<Rres>(encode(&fail)), Ok(fail));
}

proptest! {
    #[test]
    fn rpcgen_and_setting_constructs_round_trip(a: Vholder, b: Vlist, c: OptPoint, d: OptInt, e: Path, f: Rres, g: BsdInts) {
        prop_assert_eq!(decode::<Vholder>(encode(&a)), Ok(a));
        prop_assert_eq!(decode::<Vlist>(encode(&b)), Ok(b));
        prop_assert_eq!(decode::<OptPoint>(encode(&c)), Ok(c));
        prop_assert_eq!(decode::<OptInt>(encode(&d)), Ok(d));
        prop_assert_eq!(decode::<Path>(encode(&e)), Ok(e));
        prop_assert_eq!(decode::<Rres>(encode(&f)), Ok(f));
        prop_assert_eq!(decode::<BsdInts>(encode(&g)), Ok(g));
    }

    #[test]
    fn everything_round_trips(v: Everything) {
        prop_assert_eq!(decode::<Everything>(encode(&v)), Ok(v));
    }

    #[test]
    fn unions_round_trip(a: Shape, b: Outcome, c: ByInt, d: ByUint, e: ByBool, f: HalfBool, g: Expr) {
        prop_assert_eq!(decode::<Shape>(encode(&a)), Ok(a));
        prop_assert_eq!(decode::<Outcome>(encode(&b)), Ok(b));
        prop_assert_eq!(decode::<ByInt>(encode(&c)), Ok(c));
        prop_assert_eq!(decode::<ByUint>(encode(&d)), Ok(d));
        prop_assert_eq!(decode::<ByBool>(encode(&e)), Ok(e));
        prop_assert_eq!(decode::<HalfBool>(encode(&f)), Ok(f));
        prop_assert_eq!(decode::<Expr>(encode(&g)), Ok(g));
    }

    #[test]
    fn recursive_types_round_trip(a: Node, b: Holder, c: Tree, d: Status, e: Color) {
        prop_assert_eq!(decode::<Node>(encode(&a)), Ok(a));
        prop_assert_eq!(decode::<Holder>(encode(&b)), Ok(b));
        prop_assert_eq!(decode::<Tree>(encode(&c)), Ok(c));
        prop_assert_eq!(decode::<Status>(encode(&d)), Ok(d));
        prop_assert_eq!(decode::<Color>(encode(&e)), Ok(e));
    }

    #[test]
    fn decoding_garbage_never_panics(v in proptest::collection::vec(any::<u8>(), 0..256)) {
        let b = Bytes::from(v);
        let _ = Everything::decode(&mut Decoder::new(b.clone()));
        let _ = Shape::decode(&mut Decoder::new(b.clone()));
        let _ = Node::decode(&mut Decoder::new(b.clone()));
        let _ = Tree::decode(&mut Decoder::new(b.clone()));
        let _ = Expr::decode(&mut Decoder::new(b));
    }
}
