//! Emits discriminated unions: the enum, `discriminant()`, its decoder and encoder.

use std::fmt::Write as _;

use super::{Gen, Rec, R_ERR, R_OK};
use crate::model::{Case, Discr, Field, Kind, TypeDef, Union};

impl Gen<'_> {
    /// The Rust value of case `c`'s discriminant, as `discriminant()` returns it.
    fn discr_value(&self, u: &Union, c: &Case) -> String {
        match &u.discr {
            Discr::Int => c.value.to_string(),
            Discr::UInt => c.value.to_string(),
            Discr::Bool => (c.value == 1).to_string(),
            Discr::Closed(e) => {
                let td = self.m.get(e);
                let Kind::Enum { items, .. } = &td.kind else {
                    unreachable!()
                };
                let item = items
                    .iter()
                    .find(|i| i.value == c.value)
                    .expect("checked: the label is a value of the enum");
                format!("{}::{}", td.rust, item.variant)
            }
            Discr::Open(e) => {
                let td = self.m.get(e);
                let Kind::Enum { items, .. } = &td.kind else {
                    unreachable!()
                };
                match items.iter().find(|i| i.name == c.label) {
                    Some(i) => format!("{}::{}", td.rust, crate::names::ident(&i.name)),
                    None => format!("{}({})", td.rust, c.value as i32 as u32),
                }
            }
        }
    }

    /// Emits a union as a Rust `enum` with `discriminant()` and its codec.
    pub(super) fn union(&mut self, t: &TypeDef, u: &Union) {
        if self.cfg.option_unions.contains(&t.name) {
            return self.option_union(t, u);
        }
        let r = t.rust.clone();
        let rec = self.rec[&t.name];
        let drt = self.discr_rty(&u.discr);
        let mut s = format!(
            "\n/// XDR union `{}` switch (`{}`) ({}).\n#[derive(Debug, Clone, PartialEq, Eq)]\n#[allow(clippy::large_enum_variant, clippy::enum_variant_names)]\npub enum {r} {{\n",
            t.name,
            t.xdr,
            self.loc(t)
        );
        for c in &u.cases {
            match &c.field {
                Some(f) => {
                    let _ = writeln!(
                        s,
                        "    /// `case {}: {}`.\n    {}({}),",
                        c.label,
                        f.xdr,
                        c.variant,
                        self.field_rty(&t.name, f)
                    );
                }
                None => {
                    let _ = writeln!(s, "    /// `case {}: void`.\n    {},", c.label, c.variant);
                }
            }
        }
        match &u.default {
            Some(Some(f)) => {
                let _ = writeln!(
                    s,
                    "    /// `default: {}`, with the discriminant it was sent with.\n    {}({drt}, {}),",
                    f.xdr,
                    u.default_variant,
                    self.field_rty(&t.name, f)
                );
            }
            Some(None) => {
                let _ = writeln!(
                    s,
                    "    /// `default: void`, with the discriminant it was sent with.\n    {}({drt}),",
                    u.default_variant
                );
            }
            None => {}
        }
        s.push_str("}\n");
        // discriminant()
        let _ = writeln!(
            s,
            "\nimpl {r} {{\n    /// The discriminant (`{}`) this value is encoded with.\n    pub fn discriminant(&self) -> {drt} {{\n        match self {{",
            t.xdr
        );
        for c in &u.cases {
            let pat = if c.field.is_some() { "(..)" } else { "" };
            let _ = writeln!(
                s,
                "            Self::{}{pat} => {},",
                c.variant,
                self.discr_value(u, c)
            );
        }
        match &u.default {
            Some(Some(_)) => {
                let _ = writeln!(s, "            Self::{}(v, _) => *v,", u.default_variant);
            }
            Some(None) => {
                let _ = writeln!(s, "            Self::{}(v) => *v,", u.default_variant);
            }
            None => {}
        }
        s.push_str("        }\n    }\n");
        if rec == Rec::Depth {
            let _ = writeln!(
                s,
                "\n    /// Decodes a value nested `depth` levels deep in a recursive structure; deeper than {} levels is an error.\n    #[doc(hidden)]\n    pub fn xdrgen_decode_at(d: &mut ::xdr::Decoder, depth: usize) -> ::xdr::Result<Self> {{\n{}\n    }}",
                self.cfg.max_depth,
                self.union_decode_body(t, u, Some(self.scc[&t.name]))
            );
        }
        s.push_str("}\n");
        if rec == Rec::Depth {
            let _ = writeln!(
                s,
                "\nimpl ::xdr::Decode for {r} {{\n    fn decode(d: &mut ::xdr::Decoder) -> ::xdr::Result<Self> {{\n        Self::xdrgen_decode_at(d, 0)\n    }}\n}}"
            );
        } else {
            let _ = writeln!(
                s,
                "\nimpl ::xdr::Decode for {r} {{\n    fn decode(d: &mut ::xdr::Decoder) -> ::xdr::Result<Self> {{\n{}\n    }}\n}}",
                self.union_decode_body(t, u, Some(self.scc[&t.name]))
            );
        }
        // Encoding.
        let _ = writeln!(
            s,
            "\nimpl ::xdr::Encode for {r} {{\n    fn encode(&self, e: &mut ::xdr::Encoder) {{\n        match self {{"
        );
        let put = |v: &str| -> String {
            match &u.discr {
                Discr::Int | Discr::Closed(_) => format!("e.i32({v});"),
                Discr::UInt | Discr::Open(_) => format!("e.u32({v});"),
                Discr::Bool => format!("e.bool({v});"),
            }
        };
        for c in &u.cases {
            let lit = case_literal(&u.discr, c);
            match &c.field {
                Some(f) => {
                    let _ = writeln!(
                        s,
                        "            Self::{}(x) => {{ {} {} }}",
                        c.variant,
                        put(&lit),
                        self.enc_field(&t.name, f, "x")
                    );
                }
                None => {
                    let _ = writeln!(s, "            Self::{} => {{ {} }}", c.variant, put(&lit));
                }
            }
        }
        let dv = match &u.discr {
            Discr::Closed(_) => "*v as i32".to_string(),
            Discr::Open(_) => "v.0".to_string(),
            _ => "*v".to_string(),
        };
        match &u.default {
            Some(Some(f)) => {
                let _ = writeln!(
                    s,
                    "            Self::{}(v, x) => {{ {} {} }}",
                    u.default_variant,
                    put(&dv),
                    self.enc_field(&t.name, f, "x")
                );
            }
            Some(None) => {
                let _ = writeln!(
                    s,
                    "            Self::{}(v) => {{ {} }}",
                    u.default_variant,
                    put(&dv)
                );
            }
            None => {}
        }
        s.push_str("        }\n    }\n}\n");
        self.out.push_str(&s);
    }

    /// The arm of an `option_union`: the TRUE arm's declaration, if `u` is `switch (bool) {
    /// case TRUE: T v; case FALSE: void; }` (or `default: void` for FALSE).
    pub(super) fn option_arm(u: &Union) -> Option<&Field> {
        if u.discr != Discr::Bool {
            return None;
        }
        let yes = u.cases.iter().find(|c| c.value == 1)?.field.as_ref()?;
        let no_case = u.cases.iter().find(|c| c.value == 0);
        let no_is_void = match (no_case, &u.default) {
            (Some(c), None) => c.field.is_none(),
            (None, Some(None)) => true,
            _ => false,
        };
        (no_is_void && u.cases.len() == 1 + no_case.is_some() as usize).then_some(yes)
    }

    /// Emits an `option_union` as `struct X(pub Option<T>)` and its codec.
    fn option_union(&mut self, t: &TypeDef, u: &Union) {
        let r = &t.rust;
        let f = Self::option_arm(u).expect("checked in check_config");
        let _ = writeln!(
            self.out,
            "\n/// XDR union `{}` switch (`{}`) ({}): `Some` is `case TRUE: {}`, `None` the void arm.\n#[derive(Debug, Clone, PartialEq, Eq, Default)]\npub struct {r}(pub ::std::option::Option<{}>);\n\nimpl ::xdr::Decode for {r} {{\n    fn decode(d: &mut ::xdr::Decoder) -> ::xdr::Result<Self> {{\n        {R_OK}(Self(if d.bool()? {{ ::std::option::Option::Some({}) }} else {{ ::std::option::Option::None }}))\n    }}\n}}\n\nimpl ::xdr::Encode for {r} {{\n    fn encode(&self, e: &mut ::xdr::Encoder) {{\n        match &self.0 {{\n            ::std::option::Option::Some(x) => {{ e.bool(true); {} }}\n            ::std::option::Option::None => e.bool(false),\n        }}\n    }}\n}}",
            t.name,
            t.xdr,
            self.loc(t),
            f.xdr,
            self.field_rty(&t.name, f),
            self.dec_field(&t.name, f, Some(self.scc[&t.name])),
            self.enc_field(&t.name, f, "x"),
        );
    }

    /// The body of a union's decode function: read the discriminant, then the arm.
    fn union_decode_body(&self, t: &TypeDef, u: &Union, scc: Option<usize>) -> String {
        let mut s = String::new();
        let read = match &u.discr {
            Discr::Int | Discr::Closed(_) => "d.i32()?",
            Discr::UInt | Discr::Open(_) => "d.u32()?",
            Discr::Bool => "d.bool()?",
        };
        let _ = writeln!(
            s,
            "        let disc = {read};\n        {R_OK}(match disc {{"
        );
        for c in &u.cases {
            let lit = case_literal(&u.discr, c);
            match &c.field {
                Some(f) => {
                    let _ = writeln!(
                        s,
                        "            {lit} => Self::{}({}),",
                        c.variant,
                        self.dec_field(&t.name, f, scc)
                    );
                }
                None => {
                    let _ = writeln!(s, "            {lit} => Self::{},", c.variant);
                }
            }
        }
        let bool_covered = u.discr == Discr::Bool
            && u.cases.iter().any(|c| c.value == 1)
            && u.cases.iter().any(|c| c.value == 0);
        if !bool_covered {
            let bad = match &u.discr {
                Discr::UInt | Discr::Open(_) => "disc",
                _ => "disc as u32",
            };
            let d = match &u.discr {
                Discr::Closed(e) => format!(
                    "{}::from_i32(disc).ok_or(::xdr::XdrError::BadDiscriminant(disc as u32))?",
                    self.m.get(e).rust
                ),
                Discr::Open(e) => format!("{}(disc)", self.m.get(e).rust),
                _ => "disc".to_string(),
            };
            match &u.default {
                Some(Some(f)) => {
                    let _ = writeln!(
                        s,
                        "            _ => Self::{}({d}, {}),",
                        u.default_variant,
                        self.dec_field(&t.name, f, scc)
                    );
                }
                Some(None) => {
                    let _ = writeln!(s, "            _ => Self::{}({d}),", u.default_variant);
                }
                None => {
                    let _ = writeln!(
                        s,
                        "            _ => return {R_ERR}(::xdr::XdrError::BadDiscriminant({bad})),"
                    );
                }
            }
        }
        s.push_str("        })");
        s
    }
}

/// The Rust literal of case `c`'s discriminant value.
fn case_literal(discr: &Discr, c: &Case) -> String {
    match discr {
        Discr::Bool => (c.value == 1).to_string(),
        Discr::Open(_) | Discr::UInt => (c.value as i32 as u32).to_string(),
        _ => c.value.to_string(),
    }
}
