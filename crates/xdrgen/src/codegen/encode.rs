//! Encoding statements for XDR types and struct or union fields.

use super::Gen;
use crate::model::{Field, Kind, Ty};

impl Gen<'_> {
    /// Statements encoding the value that the expression `x` (a reference) points to.
    fn enc(&self, ty: &Ty, x: &str, lvl: usize) -> String {
        match ty {
            Ty::I32 => format!("e.i32(*{x});"),
            Ty::U32 => format!("e.u32(*{x});"),
            Ty::I64 => format!("e.i64(*{x});"),
            Ty::U64 => format!("e.u64(*{x});"),
            Ty::Bool => format!("e.bool(*{x});"),
            Ty::Named(n) => match &self.m.get(n).kind {
                Kind::Typedef(inner) if !self.cfg.newtypes.contains(n) => self.enc(inner, x, lvl),
                _ => format!("::xdr::Encode::encode({x}, e);"),
            },
            Ty::OpaqueFixed(n) if *n <= self.cfg.inline_max => {
                format!("e.opaque_fixed(&{x}[..]);")
            }
            Ty::OpaqueFixed(n) => format!(
                "{{ let b: &[u8] = &{x}[..]; if b.len() == {n} {{ e.opaque_fixed(b); }} else {{ let mut v = ::std::vec![0u8; {n}]; let k = b.len().min({n}); v[..k].copy_from_slice(&b[..k]); e.opaque_fixed(&v); }} }}"
            ),
            Ty::OpaqueVar(_) | Ty::StringVar(_) => format!("e.opaque(&{x}[..]);"),
            Ty::Var(t, _) => format!(
                "e.u32({x}.len() as u32); for x{lvl} in {x}.iter() {{ {} }}",
                self.enc(t, &format!("x{lvl}"), lvl + 1)
            ),
            Ty::Fixed(t, _) => format!(
                "for x{lvl} in {x}.iter() {{ {} }}",
                self.enc(t, &format!("x{lvl}"), lvl + 1)
            ),
            Ty::List(s) => format!(
                "for x{lvl} in {x}.iter() {{ e.bool(true); {} }} e.bool(false);",
                self.enc(&Ty::Named(s.clone()), &format!("x{lvl}"), lvl + 1)
            ),
            Ty::Optional(t) => {
                let inner = if self.boxed(t) {
                    format!("&**x{lvl}")
                } else {
                    format!("x{lvl}")
                };
                format!(
                    "match {x} {{ ::std::option::Option::Some(x{lvl}) => {{ e.bool(true); {} }} ::std::option::Option::None => e.bool(false), }}",
                    self.enc(t, &inner, lvl + 1)
                )
            }
        }
    }

    /// Statements encoding `ty`, which the expression `x` (a reference) points to.
    pub(super) fn enc_ty(&self, ty: &Ty, x: &str) -> String {
        self.enc(ty, x, 0)
    }

    /// Statements encoding field `f` of `owner`, which the expression `x` refers to.
    pub(super) fn enc_field(&self, owner: &str, f: &Field, x: &str) -> String {
        let key = format!("{owner}.{}", f.name);
        if self.cfg.body_payload.contains(&key) {
            format!("e.opaque_body_payload({x}.clone());")
        } else if self.cfg.payload.contains(&key) {
            format!("e.opaque_payload({x}.clone());")
        } else if self.cfg.bulk.contains(&key) {
            format!("e.opaque_bulk({x}.clone());")
        } else {
            self.enc(&f.ty, x, 0)
        }
    }
}
