//! The exports parser and client matching against hand-checked cases and random input.

use super::clients::glob_match;
use super::*;
use proptest::prelude::*;
use std::net::{Ipv4Addr, Ipv6Addr};

fn ip(s: &str) -> IpAddr {
    s.parse().expect("test address")
}

fn parse(text: &str) -> Vec<ExportEntry> {
    match parse_exports(text, "/etc/exports") {
        Ok(entries) => entries,
        Err(e) => panic!("unexpected error: {e}"),
    }
}

fn parse_err(text: &str) -> String {
    match parse_exports(text, "/etc/exports") {
        Ok(entries) => panic!("expected an error, got {entries:?}"),
        Err(e) => e.to_string(),
    }
}

/// Options of the single client of the single entry parsed from `/x host(opts)`.
fn opts(list: &str) -> ExportOptions {
    let entries = parse(&format!("/x h({list})"));
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].clients.len(), 1);
    entries[0].clients[0].options.clone()
}

fn client(spec: &str) -> ClientMatch {
    let name = spec.split('(').next().unwrap_or(spec);
    match super::parse_client(name) {
        Ok(c) => c,
        Err(e) => panic!("{spec}: {e}"),
    }
}

#[test]
fn defaults() {
    let d = ExportOptions::default();
    assert!(!d.rw);
    assert_eq!(d.squash, Squash::Root);
    assert_eq!(d.anonuid, 65534);
    assert_eq!(d.anongid, 65534);
    assert!(d.secure);
    assert!(d.sync);
    assert_eq!(d.fsid, None);
    assert!(d.sec.is_empty());
    assert_eq!(d.flavors(), vec![SecFlavor::Sys]);
    assert!(d.admits(SecFlavor::Sys) && d.admits(SecFlavor::None));
    assert!(!opts("sec=sys").admits(SecFlavor::None));
    assert!(!d.mountpoint);
    assert_eq!(d.mountpoint_path, None);
    assert_eq!(Squash::default(), Squash::Root);

    // A client without options, and an empty option list, get the defaults.
    let e = parse("/srv host1 host2()");
    assert_eq!(e[0].clients[0].options, d);
    assert_eq!(e[0].clients[1].options, d);
}

#[test]
fn every_option() {
    assert!(opts("rw").rw);
    assert!(!opts("rw,ro").rw);
    assert!(!opts("ro").rw);
    assert_eq!(opts("root_squash").squash, Squash::Root);
    assert_eq!(opts("no_root_squash").squash, Squash::None);
    assert_eq!(opts("all_squash").squash, Squash::All);
    assert_eq!(opts("all_squash,no_all_squash").squash, Squash::Root);
    assert_eq!(
        opts("no_root_squash,all_squash,no_all_squash").squash,
        Squash::None
    );
    // all_squash covers root even after no_root_squash, as in nfs-utils.
    assert_eq!(opts("all_squash,no_root_squash").squash, Squash::All);
    assert_eq!(opts("no_all_squash").squash, Squash::Root);
    assert_eq!(opts("anonuid=1000").anonuid, 1000);
    assert_eq!(opts("anonuid=0").anonuid, 0);
    assert_eq!(opts("anonuid=4294967295").anonuid, u32::MAX);
    assert_eq!(opts("anongid=100").anongid, 100);
    assert!(!opts("insecure").secure);
    assert!(opts("insecure,secure").secure);
    assert!(!opts("async").sync);
    assert!(opts("async,sync").sync);
    assert_eq!(opts("fsid=0").fsid.as_deref(), Some("0"));
    assert_eq!(opts("fsid=42").fsid.as_deref(), Some("42"));
    assert_eq!(opts("fsid=root").fsid.as_deref(), Some("root"));
    let uuid = "3f0f7d6a-9b3c-4c1e-8e5a-2b7c9d0e1f23";
    assert_eq!(opts(&format!("fsid={uuid}")).fsid.as_deref(), Some(uuid));
    let uuid = "3f0f7d6a:9b3c4c1e:8e5a2b7c:9d0e1f23";
    assert_eq!(opts(&format!("fsid={uuid}")).fsid.as_deref(), Some(uuid));
    for same in ["no_subtree_check", "wdelay", "no_wdelay", "hide", "acl"] {
        assert_eq!(opts(same), ExportOptions::default(), "{same}");
    }
    assert!(ExportOptions::default().acl);
    assert!(!opts("no_acl").acl);
    assert!(opts("no_acl,acl").acl);
    assert_eq!(opts("sec=sys").sec, vec![SecFlavor::Sys]);
    assert_eq!(opts("sec=none").sec, vec![SecFlavor::None]);
    assert_eq!(
        opts("sec=none:sys:none").sec,
        vec![SecFlavor::None, SecFlavor::Sys]
    );
    let k = opts("sec=krb5p:krb5i:krb5:sys");
    assert_eq!(
        k.sec,
        vec![
            SecFlavor::Krb5p,
            SecFlavor::Krb5i,
            SecFlavor::Krb5,
            SecFlavor::Sys
        ]
    );
    assert_eq!(k.flavors(), k.sec, "listed in exports order");
    assert!(k.admits(SecFlavor::Krb5i) && !k.admits(SecFlavor::None));
    // without sec=, Kerberos is not admitted (knfsd's default)
    let d = ExportOptions::default();
    assert!(!d.admits(SecFlavor::Krb5) && !d.admits(SecFlavor::Krb5p));
    assert!(opts("mountpoint").mountpoint);
    assert!(opts("mp").mountpoint);
    let o = opts("mp=/mnt/disk");
    assert!(o.mountpoint);
    assert_eq!(o.mountpoint_path, Some(PathBuf::from("/mnt/disk")));
    let o = opts("mountpoint=/mnt/a,mountpoint");
    assert!(o.mountpoint);
    assert_eq!(o.mountpoint_path, None);

    let all = opts(
        "rw,no_root_squash,anonuid=1,anongid=2,insecure,async,fsid=7,\
         no_subtree_check,no_wdelay,hide,no_acl,sec=sys,mp,pnfs",
    );
    assert_eq!(
        all,
        ExportOptions {
            rw: true,
            squash: Squash::None,
            anonuid: 1,
            anongid: 2,
            secure: false,
            sync: false,
            fsid: Some("7".into()),
            sec: vec![SecFlavor::Sys],
            mountpoint: true,
            mountpoint_path: None,
            pnfs: true,
            acl: false,
        }
    );
    assert!(!opts("pnfs,no_pnfs").pnfs);
}

#[test]
fn client_forms() {
    assert_eq!(client("*"), ClientMatch::Any);
    assert_eq!(client("*(rw)"), ClientMatch::Any);
    assert_eq!(client("(rw)"), ClientMatch::Any);
    assert_eq!(client("10.1.2.3"), ClientMatch::Addr(ip("10.1.2.3")));
    assert_eq!(client("fd00::1(rw)"), ClientMatch::Addr(ip("fd00::1")));
    assert_eq!(client("::ffff:10.1.2.3"), ClientMatch::Addr(ip("10.1.2.3")));
    assert_eq!(
        client("10.0.0.0/8"),
        ClientMatch::Net {
            addr: ip("10.0.0.0"),
            prefix: 8
        }
    );
    assert_eq!(
        client("192.168.1.0/255.255.255.0"),
        ClientMatch::Net {
            addr: ip("192.168.1.0"),
            prefix: 24
        }
    );
    assert_eq!(
        client("fd00::/64"),
        ClientMatch::Net {
            addr: ip("fd00::"),
            prefix: 64
        }
    );
    // Host bits are cleared.
    assert_eq!(
        client("10.1.2.3/8"),
        ClientMatch::Net {
            addr: ip("10.0.0.0"),
            prefix: 8
        }
    );
    assert_eq!(
        client("::ffff:10.0.0.0/104"),
        ClientMatch::Net {
            addr: ip("10.0.0.0"),
            prefix: 8
        }
    );
    assert_eq!(
        client("server.example.com"),
        ClientMatch::Host("server.example.com".into())
    );
    assert_eq!(client("host_1"), ClientMatch::Host("host_1".into()));
    assert_eq!(
        client("*.example.com"),
        ClientMatch::HostPattern("*.example.com".into())
    );
    assert_eq!(
        client("node?[0-9]"),
        ClientMatch::HostPattern("node?[0-9]".into())
    );
    assert_eq!(
        client("@trusted(rw)"),
        ClientMatch::Netgroup("trusted".into())
    );

    for spec in ["*", "10.0.0.0/8", "fd00::1", "host", "*.example.com", "@ng"] {
        assert_eq!(client(spec).to_string(), spec);
    }
}

#[test]
fn matching() {
    let a = ip("10.1.2.3");
    let b = ip("192.168.7.9");
    assert!(ClientMatch::Any.matches(a, None));
    assert!(ClientMatch::Addr(a).matches(a, None));
    assert!(!ClientMatch::Addr(a).matches(b, None));
    let net = client("10.0.0.0/8");
    assert!(net.matches(a, None));
    assert!(!net.matches(b, None));
    assert!(!net.matches(ip("fd00::1"), None));
    let v6 = client("fd00::/64");
    assert!(v6.matches(ip("fd00::1234"), None));
    assert!(!v6.matches(ip("fd00:0:0:1::1"), None));
    assert!(!v6.matches(a, None));

    let host = ClientMatch::Host("Server.Example.COM".into());
    assert!(host.matches(a, Some("server.example.com")));
    assert!(host.matches(a, Some("server.example.com.")));
    assert!(!host.matches(a, Some("other.example.com")));
    assert!(!host.matches(a, None), "no DNS lookup by address");

    let pat = client("*.example.com");
    assert!(pat.matches(a, Some("a.example.com")));
    assert!(pat.matches(a, Some("a.b.EXAMPLE.com")), "* matches dots");
    assert!(!pat.matches(a, Some("example.com")));
    assert!(!pat.matches(a, Some("a.example.org")));
    assert!(!pat.matches(a, None));
    let pat = client("node?[0-3]");
    assert!(pat.matches(a, Some("nodea2")));
    assert!(!pat.matches(a, Some("nodea4")));
    assert!(!pat.matches(a, Some("node2")));
    let pat = client("n[!a-c]x");
    assert!(pat.matches(a, Some("ndx")));
    assert!(!pat.matches(a, Some("nbx")));
    let pat = ClientMatch::HostPattern("a*b*c".into());
    assert!(pat.matches(a, Some("aXbYbZc")));
    assert!(!pat.matches(a, Some("aXbYcZ")));
    assert!(ClientMatch::HostPattern("*".into()).matches(a, Some("")));
    assert!(ClientMatch::HostPattern("[x".into()).matches(a, Some("[x")));

    let ng = client("@trusted");
    assert!(!ng.matches(a, Some("trusted")), "netgroups never match");
    assert!(!ng.matches(a, None));

    // Hand-built invalid networks never match and do not panic.
    assert!(!ClientMatch::Net {
        addr: ip("10.0.0.0"),
        prefix: 33
    }
    .matches(a, None));
    assert!(!ClientMatch::Net {
        addr: ip("::"),
        prefix: 200
    }
    .matches(ip("::1"), None));
}

#[test]
fn ipv4_mapped_clients_match_ipv4_rules() {
    let mapped = ip("::ffff:10.1.2.3");
    assert!(client("10.1.2.3").matches(mapped, None));
    assert!(client("10.0.0.0/8").matches(mapped, None));
    assert!(!client("11.0.0.0/8").matches(mapped, None));
    assert!(client("0.0.0.0/0").matches(mapped, None));
    assert!(
        !client("::/0").matches(mapped, None),
        "mapped clients are IPv4"
    );
    // Rules written in mapped form, even hand-built ones, match plain IPv4 clients.
    assert!(client("::ffff:10.1.2.3").matches(ip("10.1.2.3"), None));
    assert!(ClientMatch::Addr(mapped).matches(ip("10.1.2.3"), None));
    assert!(ClientMatch::Net {
        addr: ip("::ffff:10.0.0.0"),
        prefix: 104
    }
    .matches(ip("10.9.9.9"), None));
    let e = &parse("/x 10.0.0.0/8(rw) *(ro)")[0];
    assert!(e.options_for(mapped, None).is_some_and(|o| o.rw));
}

#[test]
fn cidr_edges() {
    let any4 = client("0.0.0.0/0");
    assert!(any4.matches(ip("1.2.3.4"), None));
    assert!(any4.matches(ip("255.255.255.255"), None));
    assert!(!any4.matches(ip("::1"), None));
    let one = client("10.1.2.3/32");
    assert_eq!(
        one,
        ClientMatch::Net {
            addr: ip("10.1.2.3"),
            prefix: 32
        }
    );
    assert!(one.matches(ip("10.1.2.3"), None));
    assert!(!one.matches(ip("10.1.2.4"), None));
    let any6 = client("::/0");
    assert!(any6.matches(ip("fd00::1"), None));
    assert!(!any6.matches(ip("1.2.3.4"), None));
    let one6 = client("fd00::1/128");
    assert!(one6.matches(ip("fd00::1"), None));
    assert!(!one6.matches(ip("fd00::2"), None));
    assert_eq!(
        client("10.0.0.0/0.0.0.0"),
        ClientMatch::Net {
            addr: ip("0.0.0.0"),
            prefix: 0
        }
    );
    assert_eq!(
        client("10.1.2.3/255.255.255.255"),
        ClientMatch::Net {
            addr: ip("10.1.2.3"),
            prefix: 32
        }
    );
    assert_eq!(
        client("10.0.0.0/008"),
        ClientMatch::Net {
            addr: ip("10.0.0.0"),
            prefix: 8
        }
    );

    for bad in [
        "10.0.0.0/33",
        "fd00::/129",
        "10.0.0.0/",
        "10.0.0.0/-1",
        "10.0.0.0/+8",
        "10.0.0.0/0008",
        "10.0.0.0/256",
        "10.0.0.0/8/8",
        "10.0.0.0/255.0.255.0",
        "10.0.0.0/255.255.255.1",
        "fd00::/ffff::",
        "10.0.0/8",
        "host/24",
        "/8",
    ] {
        assert_eq!(
            parse_err(&format!("/x {bad}(rw)")),
            format!("/etc/exports:1: bad network {bad:?}"),
        );
    }
}

#[test]
fn first_match_wins() {
    let e = &parse("/x 10.1.2.3(rw,no_root_squash) 10.0.0.0/8(ro) *(rw,all_squash)")[0];
    let o = e.options_for(ip("10.1.2.3"), None).expect("matches");
    assert!(o.rw);
    assert_eq!(o.squash, Squash::None);
    let o = e.options_for(ip("10.9.9.9"), None).expect("matches");
    assert!(!o.rw);
    assert_eq!(o.squash, Squash::Root);
    let o = e.options_for(ip("8.8.8.8"), None).expect("matches");
    assert_eq!(o.squash, Squash::All);

    // A broad rule first shadows later specific ones.
    let e = &parse("/x 10.0.0.0/8(ro) 10.1.2.3(rw)")[0];
    assert!(!e.options_for(ip("10.1.2.3"), None).expect("matches").rw);
    assert_eq!(
        e.rule_for(ip("10.1.2.3"), None).map(|r| &r.client),
        Some(&ClientMatch::Net {
            addr: ip("10.0.0.0"),
            prefix: 8
        })
    );

    let e = &parse("/x 10.0.0.0/8(rw) host.example.com(rw)")[0];
    assert!(e.options_for(ip("192.168.0.1"), None).is_none());
    assert!(e
        .options_for(ip("192.168.0.1"), Some("host.example.com"))
        .is_some());
}

#[test]
fn path_only_and_default_options() {
    let e = parse("/x\n");
    assert_eq!(
        e[0].clients,
        vec![ClientRule {
            client: ClientMatch::Any,
            options: ExportOptions::default()
        }]
    );

    let e = &parse("/x -rw,async host1 host2(ro) -no_root_squash host3 host4(all_squash)")[0];
    let o: Vec<_> = e
        .clients
        .iter()
        .map(|c| (c.options.rw, c.options.sync, c.options.squash))
        .collect();
    assert_eq!(
        o,
        vec![
            (true, false, Squash::Root),
            (false, false, Squash::Root),
            (true, false, Squash::None),
            (true, false, Squash::All),
        ]
    );
    // Defaults apply to the line only.
    let e = parse("/x -rw h1\n/y h2");
    assert!(e[0].clients[0].options.rw);
    assert!(!e[1].clients[0].options.rw);
    // Defaults with no client export to everyone.
    let e = parse("/x -rw");
    assert_eq!(e[0].clients[0].client, ClientMatch::Any);
    assert!(e[0].clients[0].options.rw);
}

#[test]
fn comments_and_blank_lines() {
    let text = "# header\n\n   \t\n/a h1(rw) # trailing comment (with parens)\n  # indented\n/b#c h2 #x\n/d\t*";
    let e = parse(text);
    let paths: Vec<_> = e.iter().map(|e| e.path.clone()).collect();
    assert_eq!(
        paths,
        vec![
            PathBuf::from("/a"),
            PathBuf::from("/b#c"),
            PathBuf::from("/d")
        ]
    );
    assert_eq!(e[0].clients.len(), 1);
    assert_eq!(e[1].clients.len(), 1);
    assert!(parse("").is_empty());
    assert!(parse("# only\n#comments\n").is_empty());
    // A `#` inside quotes is not a comment.
    assert_eq!(parse("\"/a #b\" h")[0].path, PathBuf::from("/a #b"));
    // CRLF line ends.
    let e = parse("/a h1(rw)\r\n/b h2\r\n");
    assert_eq!(e.len(), 2);
    assert!(e[0].clients[0].options.rw);
}

#[test]
fn continuation_lines() {
    let text = "/a h1(rw) \\\n   h2(ro) \\  \n\th3\n/b h4";
    let e = parse(text);
    assert_eq!(e.len(), 2);
    let names: Vec<_> = e[0].clients.iter().map(|c| c.client.to_string()).collect();
    assert_eq!(names, vec!["h1", "h2", "h3"]);
    // Continuation directly after a token, and a comment after a continued line.
    let e = parse("/a h1\\\nh2 # c\n/b");
    assert_eq!(e[0].clients.len(), 2);
    assert_eq!(e.len(), 2);
    // Errors name the physical line of the offending token.
    assert_eq!(
        parse_err("/a h1 \\\n h2 \\\n h3(rww)"),
        "/etc/exports:3: unknown option \"rww\""
    );
    // A backslash at the very end of the file is harmless.
    assert_eq!(parse("/a h1 \\").len(), 1);
    // A backslash in the middle of a token is literal.
    assert_eq!(parse("/a\\b h")[0].path, PathBuf::from("/a\\b"));
}

#[test]
fn quoted_and_escaped_paths() {
    assert_eq!(
        parse("\"/srv/my data\" h(rw)")[0].path,
        PathBuf::from("/srv/my data")
    );
    assert_eq!(
        parse("/srv/my\\040data h")[0].path,
        PathBuf::from("/srv/my data")
    );
    assert_eq!(
        parse("\"/srv/a\\040b c\" h")[0].path,
        PathBuf::from("/srv/a b c")
    );
    assert_eq!(
        parse("/srv/\"x y\"/z h")[0].path,
        PathBuf::from("/srv/x y/z")
    );
    assert_eq!(
        parse("/srv/tab\\011x")[0].path,
        PathBuf::from("/srv/tab\tx")
    );
    assert_eq!(parse("/srv/\\04x")[0].path, PathBuf::from("/srv/\\04x"));
    assert_eq!(parse("/srv/\\400")[0].path, PathBuf::from("/srv/\\400"));
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let p = &parse("/srv/\\377")[0].path;
        assert_eq!(p.as_os_str().as_bytes(), b"/srv/\xff");
    }
    assert_eq!(
        parse("/srv/caf\u{e9} h")[0].path,
        PathBuf::from("/srv/caf\u{e9}")
    );
    assert_eq!(
        parse_err("\"/a b h"),
        "/etc/exports:1: missing closing quote"
    );
    assert_eq!(
        parse_err("/ok\n\"/a b\nh"),
        "/etc/exports:2: missing closing quote"
    );
    assert_eq!(parse_err("\"\" h"), "/etc/exports:1: path must be absolute");
    assert_eq!(
        parse_err("/a\\000b h"),
        "/etc/exports:1: path contains a NUL byte"
    );
}

#[test]
fn error_messages() {
    let cases: &[(&str, &str)] = &[
        (
            "/a h\n/b h\n/c h(rww)",
            "/etc/exports:3: unknown option \"rww\"",
        ),
        ("srv h(rw)", "/etc/exports:1: path must be absolute"),
        ("\n\nh(rw) /srv", "/etc/exports:3: path must be absolute"),
        ("/a h(anonuid=x)", "/etc/exports:1: bad anonuid \"x\""),
        ("/a h(anonuid=-1)", "/etc/exports:1: bad anonuid \"-1\""),
        ("/a h(anonuid=+1)", "/etc/exports:1: bad anonuid \"+1\""),
        (
            "/a h(anonuid=4294967296)",
            "/etc/exports:1: bad anonuid \"4294967296\"",
        ),
        ("/a h(anonuid=)", "/etc/exports:1: bad anonuid \"\""),
        ("/a h(anongid=y)", "/etc/exports:1: bad anongid \"y\""),
        (
            "/a h(anonuid)",
            "/etc/exports:1: option \"anonuid\" needs a value",
        ),
        (
            "/a h(fsid)",
            "/etc/exports:1: option \"fsid\" needs a value",
        ),
        ("/a h(fsid=abc)", "/etc/exports:1: bad fsid \"abc\""),
        ("/a h(fsid=-1)", "/etc/exports:1: bad fsid \"-1\""),
        ("/a h(fsid=)", "/etc/exports:1: bad fsid \"\""),
        (
            "/a 10.0.0.0/33(rw)",
            "/etc/exports:1: bad network \"10.0.0.0/33\"",
        ),
        ("/a h(rw", "/etc/exports:1: missing \")\""),
        ("/a h(rw, sync)", "/etc/exports:1: missing \")\""),
        (
            "/a h(rw)x",
            "/etc/exports:1: unexpected text \"x\" after \")\"",
        ),
        (
            "/a h(rw)(ro)",
            "/etc/exports:1: unexpected text \"(ro)\" after \")\"",
        ),
        ("/a h(rw,,sync)", "/etc/exports:1: empty option"),
        ("/a h(rw,)", "/etc/exports:1: empty option"),
        ("/a -", "/etc/exports:1: empty option"),
        ("/a h(rw=foo)", "/etc/exports:1: unknown option \"rw=foo\""),
        ("/a h(RW)", "/etc/exports:1: unknown option \"RW\""),
        ("/a -rww h", "/etc/exports:1: unknown option \"rww\""),
        (
            "/a h(sec=krb4)",
            "/etc/exports:1: unsupported security flavor \"krb4\" (sys, none, krb5, krb5i, krb5p)",
        ),
        (
            "/a h(sec=sys:spkm3)",
            "/etc/exports:1: unsupported security flavor \"spkm3\" (sys, none, krb5, krb5i, krb5p)",
        ),
        ("/a h(mp=rel)", "/etc/exports:1: bad mountpoint \"rel\""),
        ("/a h(mp=)", "/etc/exports:1: bad mountpoint \"\""),
        ("/a bad!host", "/etc/exports:1: bad client \"bad!host\""),
        ("/a h)", "/etc/exports:1: bad client \"h)\""),
        ("/a @", "/etc/exports:1: bad client \"@\""),
        ("/a @a/b", "/etc/exports:1: bad client \"@a/b\""),
        ("/a ..", "/etc/exports:1: bad client \"..\""),
        ("/a *.exa%mple", "/etc/exports:1: bad client \"*.exa%mple\""),
        (
            "/a h\n# c\n/a/ h2",
            "/etc/exports:3: duplicate export \"/a/\" (first at line 1)",
        ),
        (
            "/a h\n/b h\n/a h2",
            "/etc/exports:3: duplicate export \"/a\" (first at line 1)",
        ),
    ];
    for (text, want) in cases {
        assert_eq!(&parse_err(text), want, "for {text:?}");
    }

    let e = parse_exports("/a h(rww)", "exports").expect_err("must fail");
    assert_eq!(e.file, "exports");
    assert_eq!(e.line, 1);
    assert!(matches!(&e.kind, ExportsErrorKind::UnknownOption(o) if o == "rww"));

    // options and client forms rnfsd does not implement are refused, never ignored
    for (text, what) in [
        ("/a\n/b h(rw,subtree_check)", "subtree_check"),
        ("/a\n/b h(nohide)", "nohide"),
        ("/a\n/b -crossmnt h", "crossmnt"),
        ("/a\n/b *.example.com(rw)", "*.example.com"),
        ("/a\n/b @trusted", "@trusted"),
    ] {
        let e = parse_exports(text, "exports").expect_err(text);
        assert_eq!(e.line, 2, "{text}");
        assert!(
            matches!(&e.kind, ExportsErrorKind::Unsupported { what: w, .. } if w == what),
            "{text}: {e}"
        );
        assert!(e.to_string().starts_with("exports:2: "), "{e}");
    }
    let e = parse_exports("/a h(rww)", "exports").expect_err("must fail");
    assert_eq!(e.file, "exports");
    assert_eq!(e.line, 1);
    assert!(matches!(&e.kind, ExportsErrorKind::UnknownOption(o) if o == "rww"));
    assert!(std::error::Error::source(&e).is_none());
}

#[test]
fn load_from_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("exports");
    std::fs::write(&path, "/srv 10.0.0.0/8(rw)\n/home *(ro)\n").expect("write");
    let e = load_exports(&path).expect("loads");
    assert_eq!(e.len(), 2);
    assert!(e[0].options_for(ip("10.0.0.1"), None).is_some_and(|o| o.rw));

    std::fs::write(&path, "/srv h\n/x h(bogus)\n").expect("write");
    let err = load_exports(&path).expect_err("bad option");
    assert_eq!(
        err.to_string(),
        format!("{}:2: unknown option \"bogus\"", path.display())
    );

    std::fs::write(&path, b"/srv h\n/x\xff h\n").expect("write");
    let err = load_exports(&path).expect_err("not utf-8");
    assert_eq!(
        err.to_string(),
        format!("{}:2: not valid UTF-8", path.display())
    );

    let missing = dir.path().join("missing");
    let err = load_exports(&missing).expect_err("missing file");
    assert_eq!(err.line, 0);
    assert!(
        matches!(&err.kind, ExportsErrorKind::Io(io) if io.kind() == std::io::ErrorKind::NotFound)
    );
    let msg = err.to_string();
    assert!(
        msg.starts_with(&format!("{}: cannot read: ", missing.display())),
        "{msg}"
    );
    assert!(std::error::Error::source(&err).is_some());
}

/// Lines built from the characters the syntax cares about.
fn line_strategy() -> impl Strategy<Value = String> {
    proptest::string::string_regex(concat!(
        r#"[ \t]{0,2}(/[a-z\\0-7#]{0,8}|"/[a-z #\\0-7]{0,8}")?"#,
        r#"( {1,2}(\*|[a-z]{1,6}(\.[a-z]{1,4})?|\*\.[a-z]{1,4}|@[a-z]{1,4}"#,
        r#"|10\.[0-9]{1,3}\.0\.0/[0-9]{1,2}|fd00::[0-9]{0,2}(/[0-9]{1,3})?"#,
        r#"|-|[-a-z0-9*?@./:\[\]!()#\\]{0,10})"#,
        r#"(\(((rw|ro|sync|async|no_root_squash|all_squash|anonuid=[0-9x]{1,3}"#,
        r#"|fsid=[0-9a-z]{1,4}|sec=(sys|krb5)|crossmnt|[a-z_=0-9:/. -]{0,8}),?){0,4}\)?)?){0,4}"#,
        r#"[ \t]*(\\|#[^\n]{0,6})?"#,
    ))
    .expect("valid regex")
}

proptest! {
    #[test]
    fn never_panics_on_arbitrary_text(text in any::<String>()) {
        if let Ok(entries) = parse_exports(&text, "f") {
            for e in &entries {
                let _ = e.options_for(ip("10.0.0.1"), Some("h"));
            }
        }
    }

    #[test]
    fn never_panics_on_line_shaped_text(
        lines in proptest::collection::vec(line_strategy(), 0..8),
        crlf in any::<bool>(),
        v4 in any::<u32>(),
        v6 in any::<u128>(),
        name in "[a-z.*?\\[\\]-]{0,10}",
    ) {
        let text = lines.join(if crlf { "\r\n" } else { "\n" });
        match parse_exports(&text, "f") {
            Ok(entries) => {
                for e in &entries {
                    prop_assert!(e.path.is_absolute());
                    prop_assert!(!e.clients.is_empty());
                    for addr in [IpAddr::V4(Ipv4Addr::from(v4)), IpAddr::V6(Ipv6Addr::from(v6))] {
                        let _ = e.options_for(addr, Some(&name));
                        let _ = e.options_for(addr, None);
                    }
                }
            }
            Err(e) => {
                prop_assert!(e.line >= 1);
                prop_assert!(e.to_string().starts_with("f:"));
            }
        }
    }

    #[test]
    fn glob_never_panics(pattern in "[a-c*?\\[\\]!^-]{0,12}", name in "[a-c.\\[\\]-]{0,12}") {
        let _ = glob_match(pattern.as_bytes(), name.as_bytes());
    }

    #[test]
    fn networks_contain_their_own_address(v4 in any::<u32>(), prefix in 0u8..=32) {
        let addr = IpAddr::V4(Ipv4Addr::from(v4));
        let entries = parse_exports(&format!("/x {addr}/{prefix}"), "f");
        prop_assert!(entries.is_ok());
        if let Ok(entries) = entries {
            prop_assert!(entries[0].clients[0].client.matches(addr, None));
            let mapped = IpAddr::V6(Ipv4Addr::from(v4).to_ipv6_mapped());
            prop_assert!(entries[0].clients[0].client.matches(mapped, None));
        }
    }
}
