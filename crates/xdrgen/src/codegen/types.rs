//! XDR types to Rust types, and the typedef, bound and copy queries that mapping needs.

use super::Gen;
use crate::model::{Discr, Field, Kind, Ty};

impl Gen<'_> {
    /// Follows typedefs without modifiers to the type they name.
    fn target(&self, ty: &Ty) -> Ty {
        let mut t = ty.clone();
        for _ in 0..256 {
            match &t {
                Ty::Named(n) => match &self.m.get(n).kind {
                    Kind::Typedef(inner) => t = inner.clone(),
                    _ => return t,
                },
                _ => return t,
            }
        }
        t
    }

    /// Whether an optional `inner` must be boxed (it names a recursive type).
    pub(super) fn boxed(&self, inner: &Ty) -> bool {
        match self.target(inner) {
            Ty::Named(n) => self.recursive.contains(&n),
            _ => false,
        }
    }

    /// Whether the Rust type of `ty` is `Copy`.
    pub(super) fn is_copy(&self, ty: &Ty) -> bool {
        match ty {
            Ty::I32 | Ty::U32 | Ty::I64 | Ty::U64 | Ty::Bool => true,
            Ty::OpaqueFixed(n) => *n <= self.cfg.inline_max,
            Ty::Fixed(t, _) => self.is_copy(t),
            Ty::Named(n) => match &self.m.get(n).kind {
                Kind::Typedef(t) if !self.cfg.newtypes.contains(n) => self.is_copy(t),
                Kind::Enum { .. } => true,
                _ => false,
            },
            _ => false,
        }
    }

    /// The maximum length: the first configured bound among `keys` (capping `declared`), else
    /// `declared`, else the default for bytes or elements.
    pub(super) fn limit(&self, keys: &[String], declared: Option<u32>, bytes: bool) -> usize {
        for k in keys {
            if let Some(v) = self.cfg.bounds.get(k) {
                return declared.map_or(*v, |d| (d as usize).min(*v));
            }
        }
        declared.map_or(
            if bytes {
                self.cfg.max_opaque
            } else {
                self.cfg.max_array
            },
            |d| d as usize,
        )
    }

    /// The Rust type of `ty`.
    pub(super) fn rty(&self, ty: &Ty) -> String {
        match ty {
            Ty::I32 => "i32".into(),
            Ty::U32 => "u32".into(),
            Ty::I64 => "i64".into(),
            Ty::U64 => "u64".into(),
            Ty::Bool => "bool".into(),
            Ty::Named(n) => self.m.get(n).rust.clone(),
            Ty::OpaqueFixed(n) if *n <= self.cfg.inline_max => format!("[u8; {n}]"),
            Ty::OpaqueFixed(_) | Ty::OpaqueVar(_) | Ty::StringVar(_) => "::bytes::Bytes".into(),
            Ty::Fixed(t, n) => format!("[{}; {n}]", self.rty(t)),
            Ty::Var(t, _) => format!("::std::vec::Vec<{}>", self.rty(t)),
            Ty::List(s) => format!("::std::vec::Vec<{}>", self.m.get(s).rust),
            Ty::Optional(t) => {
                if self.boxed(t) {
                    format!("::std::option::Option<::std::boxed::Box<{}>>", self.rty(t))
                } else {
                    format!("::std::option::Option<{}>", self.rty(t))
                }
            }
        }
    }

    /// The Rust type of field `f` of `owner` (`xdr::Payload` for a payload field).
    pub(super) fn field_rty(&self, owner: &str, f: &Field) -> String {
        if self.cfg.payload.contains(&format!("{owner}.{}", f.name)) {
            "::xdr::Payload".into()
        } else {
            self.rty(&f.ty)
        }
    }

    /// The Rust type of a union discriminant.
    pub(super) fn discr_rty(&self, d: &Discr) -> String {
        match d {
            Discr::Int => "i32".into(),
            Discr::UInt => "u32".into(),
            Discr::Bool => "bool".into(),
            Discr::Closed(e) | Discr::Open(e) => self.m.get(e).rust.clone(),
        }
    }
}
