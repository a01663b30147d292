//! Decoding expressions for XDR types and struct or union fields.

use super::{Gen, Rec, R_ERR, R_OK};
use crate::model::{Field, Kind, Ty};

impl Gen<'_> {
    /// An expression decoding `ty` from `d`; `.1` is true when it is a call ending in `?`.
    fn dec(&self, ty: &Ty, keys: &[String], scc: Option<usize>) -> (String, bool) {
        match ty {
            Ty::I32 => ("d.i32()?".into(), true),
            Ty::U32 => ("d.u32()?".into(), true),
            Ty::I64 => ("d.i64()?".into(), true),
            Ty::U64 => ("d.u64()?".into(), true),
            Ty::Bool => ("d.bool()?".into(), true),
            Ty::Named(n) => {
                let t = self.m.get(n);
                if let Kind::Typedef(inner) = &t.kind {
                    if !self.cfg.newtypes.contains(n) {
                        let mut k = keys.to_vec();
                        k.push(n.clone());
                        return self.dec(inner, &k, scc);
                    }
                }
                if scc.is_some_and(|s| self.scc[n] == s) && self.rec[n] == Rec::Depth {
                    let max = self.cfg.max_depth;
                    return (
                        format!(
                            "{{ if depth >= {max} {{ return {R_ERR}(::xdr::XdrError::TooLong {{ len: depth as u64 + 1, max: {max} }}); }} {}::xdrgen_decode_at(d, depth + 1)? }}",
                            t.rust
                        ),
                        false,
                    );
                }
                (format!("<{} as ::xdr::Decode>::decode(d)?", t.rust), true)
            }
            Ty::OpaqueFixed(n) if *n <= self.cfg.inline_max => (
                format!(
                    "{{ let b = d.opaque_fixed({n})?; let mut a = [0u8; {n}]; a.copy_from_slice(&b); a }}"
                ),
                false,
            ),
            Ty::OpaqueFixed(n) => (format!("d.opaque_fixed({n})?"), true),
            Ty::OpaqueVar(b) | Ty::StringVar(b) => {
                (format!("d.opaque({})?", self.limit(keys, *b, true)), true)
            }
            Ty::Var(t, b) => {
                let max = self.limit(keys, *b, false);
                let min = self.min_of(t).max(1);
                (
                    format!(
                        "d.array({max}, {min}, {})?",
                        self.closure(t, scc)
                    ),
                    true,
                )
            }
            Ty::Fixed(t, n) => {
                let min = self.min_of(t).max(1);
                let (inner, _) = self.dec(t, &[], scc);
                (
                    format!(
                        "{{ let need = {n}usize.saturating_mul({min}); if need > d.remaining() {{ return {R_ERR}(::xdr::XdrError::Truncated {{ needed: need, remaining: d.remaining() }}); }} let mut v = ::std::vec::Vec::with_capacity({n}); for _ in 0..{n} {{ v.push({inner}); }} match <[{}; {n}]>::try_from(v) {{ {R_OK}(a) => a, {R_ERR}(_) => return {R_ERR}(::xdr::XdrError::Truncated {{ needed: need, remaining: 0 }}) }} }}",
                        self.rty(t)
                    ),
                    false,
                )
            }
            Ty::List(s) => {
                let mut k = keys.to_vec();
                k.push(s.clone());
                let max = self.limit(&k, None, false);
                let (inner, _) = self.dec(&Ty::Named(s.clone()), &[], scc);
                (
                    format!(
                        "{{ let mut v = ::std::vec::Vec::new(); while d.bool()? {{ if v.len() >= {max} {{ return {R_ERR}(::xdr::XdrError::TooLong {{ len: v.len() as u64 + 1, max: {max} }}); }} v.push({inner}); }} v }}"
                    ),
                    false,
                )
            }
            Ty::Optional(t) => {
                let f = if self.boxed(t) {
                    let (inner, _) = self.dec(t, &[], scc);
                    format!("|d| {R_OK}(::std::boxed::Box::new({inner}))")
                } else {
                    self.closure(t, scc)
                };
                (format!("d.optional({f})?"), true)
            }
        }
    }

    /// The decoding expression of the type a newtype typedef `name` wraps (bounds set for
    /// `name` apply).
    pub(super) fn dec_named_typedef(&self, ty: &Ty, name: &str) -> (String, bool) {
        self.dec(ty, &[name.to_string()], None)
    }

    /// A function (`|d| ...` closure or a `decode` path) returning `xdr::Result<T>`.
    fn closure(&self, t: &Ty, scc: Option<usize>) -> String {
        let (inner, is_try) = self.dec(t, &[], scc);
        match inner.strip_suffix('?') {
            Some(call) if is_try => match call.strip_suffix("(d)") {
                Some(path) if path.ends_with("::decode") => path.to_string(),
                _ => format!("|d| {call}"),
            },
            _ => format!("|d| {R_OK}({inner})"),
        }
    }

    /// An expression decoding field `f` of `owner`.
    pub(super) fn dec_field(&self, owner: &str, f: &Field, scc: Option<usize>) -> String {
        let key = format!("{owner}.{}", f.name);
        if self.cfg.payload.contains(&key) {
            let Ty::OpaqueVar(b) = f.ty else {
                unreachable!("checked in check_config")
            };
            return format!(
                "::xdr::Payload::Bytes(d.opaque({})?)",
                self.limit(&[key], b, true)
            );
        }
        self.dec(&f.ty, &[key], scc).0
    }
}
