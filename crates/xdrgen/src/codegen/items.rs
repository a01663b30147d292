//! Emits constants, typedefs and enums (closed and open).

use std::collections::HashSet;
use std::fmt::Write as _;

use super::{Gen, R_OK};
use crate::model::{Ty, TypeDef};

impl Gen<'_> {
    /// Emits a `const`.
    pub(super) fn constant(&mut self, c: &crate::model::Const) {
        let ty = if (0..=u32::MAX as i128).contains(&c.value) {
            "u32"
        } else if c.value > u32::MAX as i128 {
            "u64"
        } else if c.value >= i32::MIN as i128 {
            "i32"
        } else {
            "i64"
        };
        let _ = writeln!(
            self.out,
            "/// {}\npub const {}: {ty} = {};",
            c.doc,
            crate::names::ident(&c.name),
            c.value
        );
    }

    /// Emits a type alias for a typedef.
    pub(super) fn typedef(&mut self, t: &TypeDef, ty: &Ty) {
        if self.cfg.newtypes.contains(&t.name) {
            return self.newtype(t, ty);
        }
        let _ = writeln!(
            self.out,
            "\n/// XDR `typedef {}` ({}).\npub type {} = {};",
            t.xdr,
            self.loc(t),
            t.rust,
            self.rty(ty)
        );
    }

    /// Emits a typedef made a type of its own (`Generator::newtype`) and its codec.
    fn newtype(&mut self, t: &TypeDef, ty: &Ty) {
        let r = &t.rust;
        let (dec, _) = self.dec_named_typedef(ty, &t.name);
        let _ = writeln!(
            self.out,
            "\n/// XDR `typedef {}` ({}), a type of its own.\n#[derive(Debug, Clone, PartialEq, Eq)]\npub struct {r}(pub {});\n\nimpl ::xdr::Decode for {r} {{\n    fn decode(d: &mut ::xdr::Decoder) -> ::xdr::Result<Self> {{\n        {R_OK}(Self({dec}))\n    }}\n}}\n\nimpl ::xdr::Encode for {r} {{\n    fn encode(&self, e: &mut ::xdr::Encoder) {{\n        let Self(x) = self;\n        {}\n    }}\n}}",
            t.xdr,
            self.loc(t),
            self.rty(ty),
            self.enc_ty(ty, "x"),
        );
    }

    /// Emits a closed enum (a Rust `enum`) and its codec.
    pub(super) fn closed_enum(&mut self, t: &TypeDef, items: &[crate::model::EnumItem]) {
        let r = &t.rust;
        let mut s = format!(
            "\n/// XDR enum `{}` ({}); a value it does not define is rejected when decoding.\n#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]\n#[repr(i32)]\n#[allow(clippy::enum_variant_names)]\npub enum {r} {{\n",
            t.name,
            self.loc(t)
        );
        for i in items {
            let _ = writeln!(
                s,
                "    /// `{} = {}`.\n    {} = {},",
                i.name, i.value, i.variant, i.value
            );
        }
        s.push_str("}\n\n");
        let all: Vec<String> = items
            .iter()
            .map(|i| format!("Self::{}", i.variant))
            .collect();
        let _ = writeln!(
            s,
            "impl {r} {{\n    /// Every value, in the order of the specification.\n    pub const ALL: [Self; {}] = [{}];\n",
            items.len(),
            all.join(", ")
        );
        s.push_str("    /// The value for a wire number, if the enum defines one.\n    pub fn from_i32(v: i32) -> ::std::option::Option<Self> {\n        match v {\n");
        for i in items {
            let _ = writeln!(
                s,
                "            {} => ::std::option::Option::Some(Self::{}),",
                i.value, i.variant
            );
        }
        s.push_str("            _ => ::std::option::Option::None,\n        }\n    }\n\n");
        s.push_str("    /// The value's name in the specification.\n    pub fn name(self) -> &'static str {\n        match self {\n");
        for i in items {
            let _ = writeln!(s, "            Self::{} => \"{}\",", i.variant, i.name);
        }
        s.push_str("        }\n    }\n}\n\n");
        let _ = writeln!(
            s,
            "impl ::xdr::Decode for {r} {{\n    fn decode(d: &mut ::xdr::Decoder) -> ::xdr::Result<Self> {{\n        let v = d.i32()?;\n        Self::from_i32(v).ok_or(::xdr::XdrError::BadDiscriminant(v as u32))\n    }}\n}}\n\nimpl ::xdr::Encode for {r} {{\n    fn encode(&self, e: &mut ::xdr::Encoder) {{\n        e.i32(*self as i32);\n    }}\n}}"
        );
        self.out.push_str(&s);
    }

    /// Emits an open enum (a `u32` newtype with associated constants) and its codec.
    pub(super) fn open_enum(&mut self, t: &TypeDef, items: &[crate::model::EnumItem]) {
        let r = &t.rust;
        let mut s = format!(
            "\n/// XDR enum `{}` ({}), open: a value it does not define is kept, not rejected.\n#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]\npub struct {r}(pub u32);\n\n",
            t.name,
            self.loc(t)
        );
        let lower = items
            .iter()
            .any(|i| i.name.chars().any(|c| c.is_ascii_lowercase()));
        if lower {
            s.push_str("#[allow(non_upper_case_globals)]\n");
        }
        let _ = writeln!(s, "impl {r} {{");
        for i in items {
            let _ = writeln!(
                s,
                "    /// `{} = {}`.\n    pub const {}: Self = Self({});",
                i.name,
                i.value,
                crate::names::ident(&i.name),
                i.value as i32 as u32
            );
        }
        s.push_str("\n    /// The value's name in the specification, if it defines the value.\n    pub fn name(self) -> ::std::option::Option<&'static str> {\n        match self.0 {\n");
        let mut seen = HashSet::new();
        for i in items {
            let v = i.value as i32 as u32;
            if seen.insert(v) {
                let _ = writeln!(
                    s,
                    "            {v} => ::std::option::Option::Some(\"{}\"),",
                    i.name
                );
            }
        }
        s.push_str("            _ => ::std::option::Option::None,\n        }\n    }\n}\n\n");
        let _ = writeln!(
            s,
            "impl ::std::fmt::Debug for {r} {{\n    fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {{\n        match self.name() {{\n            ::std::option::Option::Some(n) => f.write_str(n),\n            ::std::option::Option::None => write!(f, \"{r}({{}})\", self.0),\n        }}\n    }}\n}}\n\nimpl ::xdr::Decode for {r} {{\n    fn decode(d: &mut ::xdr::Decoder) -> ::xdr::Result<Self> {{\n        {R_OK}(Self(d.u32()?))\n    }}\n}}\n\nimpl ::xdr::Encode for {r} {{\n    fn encode(&self, e: &mut ::xdr::Encoder) {{\n        e.u32(self.0);\n    }}\n}}"
        );
        self.out.push_str(&s);
    }
}
