//! Emits structs: the type, its decoder and encoder, and for a linked list the iterative
//! decode, clone, compare, debug and drop.

use std::fmt::Write as _;

use super::{Gen, Rec, R_ERR, R_OK};
use crate::model::{Field, TypeDef};
use crate::names::bare;

impl Gen<'_> {
    /// Emits a struct and its codec (iterative for a linked list).
    pub(super) fn structure(&mut self, t: &TypeDef, fields: &[Field]) {
        let r = t.rust.clone();
        let rec = self.rec[&t.name];
        let derive = if rec == Rec::List {
            ""
        } else {
            "#[derive(Debug, Clone, PartialEq, Eq)]\n"
        };
        let mut s = format!(
            "\n/// XDR struct `{}` ({}).\n{derive}pub struct {r} {{\n",
            t.name,
            self.loc(t)
        );
        for f in fields {
            let _ = writeln!(
                s,
                "    /// `{}`.\n    pub {}: {},",
                f.xdr,
                f.rust,
                self.field_rty(&t.name, f)
            );
        }
        s.push_str("}\n");
        let scc = Some(self.scc[&t.name]);
        let build = |g: &Gen, fs: &[Field], tail: Option<&str>| -> String {
            let mut b = String::new();
            for f in fs {
                let _ = writeln!(
                    b,
                    "        let f_{} = {};",
                    bare(&f.rust),
                    g.dec_field(&t.name, f, scc)
                );
            }
            let mut inits: Vec<String> = fs
                .iter()
                .map(|f| format!("{}: f_{}", f.rust, bare(&f.rust)))
                .collect();
            if let Some(tail) = tail {
                inits.push(format!("{tail}: ::std::option::Option::None"));
            }
            let _ = write!(b, "        Self {{ {} }}", inits.join(", "));
            b
        };
        match rec {
            Rec::No => {
                let _ = writeln!(
                    s,
                    "\nimpl ::xdr::Decode for {r} {{\n    fn decode(d: &mut ::xdr::Decoder) -> ::xdr::Result<Self> {{\n{}\n        {R_OK}(v)\n    }}\n}}",
                    build(self, fields, None).replacen("        Self {", "        let v = Self {", 1) + ";"
                );
            }
            Rec::Depth => {
                let _ = writeln!(
                    s,
                    "\nimpl {r} {{\n    /// Decodes a value nested `depth` levels deep in a recursive structure; deeper than {} levels is an error.\n    #[doc(hidden)]\n    pub fn xdrgen_decode_at(d: &mut ::xdr::Decoder, depth: usize) -> ::xdr::Result<Self> {{\n{}\n        {R_OK}(v)\n    }}\n}}\n\nimpl ::xdr::Decode for {r} {{\n    fn decode(d: &mut ::xdr::Decoder) -> ::xdr::Result<Self> {{\n        Self::xdrgen_decode_at(d, 0)\n    }}\n}}",
                    self.cfg.max_depth,
                    build(self, fields, None).replacen("        Self {", "        let v = Self {", 1) + ";"
                );
            }
            Rec::List => {
                let (last, rest) = fields.split_last().expect("a list has a tail field");
                self.list_impls(&mut s, t, rest, last, &build(self, rest, Some(&last.rust)));
            }
        }
        // Encoding.
        if rec == Rec::List {
            let (last, rest) = fields.split_last().expect("a list has a tail field");
            let binds: Vec<String> = rest
                .iter()
                .map(|f| format!("{}: x_{}", f.rust, bare(&f.rust)))
                .collect();
            let mut body = String::new();
            for f in rest {
                body.push_str(&self.enc_field(&t.name, f, &format!("x_{}", bare(&f.rust))));
                body.push('\n');
            }
            let _ = writeln!(
                s,
                "\nimpl ::xdr::Encode for {r} {{\n    fn encode(&self, e: &mut ::xdr::Encoder) {{\n        let mut cur = self;\n        loop {{\n            let Self {{ {}, .. }} = cur;\n            {body}            match &cur.{} {{\n                ::std::option::Option::Some(n) => {{ e.bool(true); cur = n; }}\n                ::std::option::Option::None => {{ e.bool(false); break; }}\n            }}\n        }}\n    }}\n}}",
                binds.join(", "),
                last.rust
            );
        } else {
            let binds: Vec<String> = fields
                .iter()
                .map(|f| format!("{}: x_{}", f.rust, bare(&f.rust)))
                .collect();
            let mut body = String::new();
            for f in fields {
                body.push_str("        ");
                body.push_str(&self.enc_field(&t.name, f, &format!("x_{}", bare(&f.rust))));
                body.push('\n');
            }
            let _ = writeln!(
                s,
                "\nimpl ::xdr::Encode for {r} {{\n    fn encode(&self, e: &mut ::xdr::Encoder) {{\n        let Self {{ {} }} = self;\n{body}    }}\n}}",
                binds.join(", ")
            );
        }
        self.out.push_str(&s);
    }

    /// Decode, Clone, PartialEq, Debug and Drop of a linked-list struct, all iterative so
    /// that a long list cannot overflow the stack.
    fn list_impls(&self, s: &mut String, t: &TypeDef, rest: &[Field], last: &Field, node: &str) {
        let r = &t.rust;
        let next = &last.rust;
        let max = self.limit(std::slice::from_ref(&t.name), None, false);
        let _ = writeln!(
            s,
            "\nimpl {r} {{\n    /// Decodes one node (its `{next}` left empty) and whether another follows.\n    fn xdrgen_decode_node(d: &mut ::xdr::Decoder) -> ::xdr::Result<(Self, bool)> {{\n{node_let};\n        let more = d.bool()?;\n        {R_OK}((v, more))\n    }}\n}}\n\nimpl ::xdr::Decode for {r} {{\n    /// Decodes the whole list iteratively, each node linked at the tail as it is read (no\n    /// intermediate buffer); more than {max} nodes is an error.\n    fn decode(d: &mut ::xdr::Decoder) -> ::xdr::Result<Self> {{\n        let (mut head, mut more) = Self::xdrgen_decode_node(d)?;\n        let mut nodes: usize = 1;\n        let mut tail = &mut head.{next};\n        while more {{\n            if nodes >= {max} {{\n                return {R_ERR}(::xdr::XdrError::TooLong {{ len: nodes as u64 + 1, max: {max} }});\n            }}\n            let (n, m) = Self::xdrgen_decode_node(d)?;\n            tail = &mut tail.insert(::std::boxed::Box::new(n)).{next};\n            nodes += 1;\n            more = m;\n        }}\n        {R_OK}(head)\n    }}\n}}",
            node_let = node.replacen("        Self {", "        let v = Self {", 1)
        );
        let clone_fields = |src: &str| -> String {
            let mut v: Vec<String> = rest
                .iter()
                .map(|f| {
                    if self.is_copy(&f.ty) {
                        format!("{}: {src}.{}", f.rust, f.rust)
                    } else {
                        format!("{}: {src}.{}.clone()", f.rust, f.rust)
                    }
                })
                .collect();
            v.push(format!("{next}: ::std::option::Option::None"));
            v.join(", ")
        };
        let eqs: Vec<String> = rest
            .iter()
            .map(|f| format!("a.{0} != b.{0}", f.rust))
            .collect();
        let fmt_names: Vec<String> = rest
            .iter()
            .map(|f| format!("{}: {{:?}}", bare(&f.rust)))
            .collect();
        let fmt_args: Vec<String> = rest.iter().map(|f| format!("n.{}", f.rust)).collect();
        let _ = writeln!(
            s,
            "\nimpl ::std::clone::Clone for {r} {{\n    fn clone(&self) -> Self {{\n        let mut head = Self {{ {} }};\n        let mut rest: ::std::vec::Vec<Self> = ::std::vec::Vec::new();\n        let mut cur = self.{next}.as_deref();\n        while let ::std::option::Option::Some(n) = cur {{\n            rest.push(Self {{ {} }});\n            cur = n.{next}.as_deref();\n        }}\n        let mut tail: ::std::option::Option<::std::boxed::Box<Self>> = ::std::option::Option::None;\n        while let ::std::option::Option::Some(mut n) = rest.pop() {{\n            n.{next} = tail;\n            tail = ::std::option::Option::Some(::std::boxed::Box::new(n));\n        }}\n        head.{next} = tail;\n        head\n    }}\n}}\n\nimpl ::std::cmp::PartialEq for {r} {{\n    fn eq(&self, other: &Self) -> bool {{\n        let (mut a, mut b) = (self, other);\n        loop {{\n            if {} {{\n                return false;\n            }}\n            match (&a.{next}, &b.{next}) {{\n                (::std::option::Option::Some(x), ::std::option::Option::Some(y)) => {{ a = x; b = y; }}\n                (::std::option::Option::None, ::std::option::Option::None) => return true,\n                _ => return false,\n            }}\n        }}\n    }}\n}}\n\nimpl ::std::cmp::Eq for {r} {{}}\n\nimpl ::std::fmt::Debug for {r} {{\n    /// Shows the list as a sequence of nodes.\n    fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {{\n        let mut l = f.debug_list();\n        let mut cur = ::std::option::Option::Some(self);\n        while let ::std::option::Option::Some(n) = cur {{\n            l.entry(&format_args!(\"{r} {{{{ {} }}}}\", {}));\n            cur = n.{next}.as_deref();\n        }}\n        l.finish()\n    }}\n}}\n\nimpl ::std::ops::Drop for {r} {{\n    fn drop(&mut self) {{\n        let mut next = self.{next}.take();\n        while let ::std::option::Option::Some(mut n) = next {{\n            next = n.{next}.take();\n        }}\n    }}\n}}",
            clone_fields("self"),
            clone_fields("n"),
            if eqs.is_empty() { "false".to_string() } else { eqs.join(" || ") },
            fmt_names.join(", "),
            fmt_args.join(", "),
        );
    }
}
