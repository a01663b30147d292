//! Emits proptest strategies (`arbitrary` module) for the generated types.

use std::fmt::Write as _;

use super::Gen;
use crate::model::{Discr, Field, Kind, Ty, TypeDef, Union};

impl Gen<'_> {
    /// A boxed proptest strategy for `ty` (`keys` as for [`Gen::limit`]).
    fn strat(&self, ty: &Ty, keys: &[String]) -> String {
        let any = |t: &str| format!("::proptest::arbitrary::any::<{t}>().boxed()");
        match ty {
            Ty::I32 => any("i32"),
            Ty::U32 => any("u32"),
            Ty::I64 => any("i64"),
            Ty::U64 => any("u64"),
            Ty::Bool => any("bool"),
            Ty::Named(n) => {
                let t = self.m.get(n);
                if let Kind::Typedef(inner) = &t.kind {
                    if !self.cfg.newtypes.contains(n) {
                        let mut k = keys.to_vec();
                        k.push(n.clone());
                        return self.strat(inner, &k);
                    }
                }
                format!("arb_{}(depth)", t.rust)
            }
            Ty::OpaqueFixed(n) if *n <= self.cfg.inline_max => format!(
                "::proptest::collection::vec(::proptest::arbitrary::any::<u8>(), {n}).prop_map(|v| {{ let mut a = [0u8; {n}]; a.copy_from_slice(&v); a }}).boxed()"
            ),
            Ty::OpaqueFixed(n) => format!(
                "::proptest::collection::vec(::proptest::arbitrary::any::<u8>(), {n}).prop_map(::bytes::Bytes::from).boxed()"
            ),
            Ty::OpaqueVar(b) | Ty::StringVar(b) => format!(
                "::proptest::collection::vec(::proptest::arbitrary::any::<u8>(), 0..={}).prop_map(::bytes::Bytes::from).boxed()",
                self.limit(keys, *b, true).min(16)
            ),
            Ty::Var(t, b) => format!(
                "if depth == 0 {{ ::proptest::strategy::Just(::std::vec::Vec::new()).boxed() }} else {{ let depth = depth - 1; ::proptest::collection::vec({}, 0..={}).boxed() }}",
                self.strat(t, &[]),
                self.limit(keys, *b, false).min(3)
            ),
            Ty::List(s) => {
                let mut k = keys.to_vec();
                k.push(s.clone());
                format!(
                    "if depth == 0 {{ ::proptest::strategy::Just(::std::vec::Vec::new()).boxed() }} else {{ let depth = depth - 1; ::proptest::collection::vec(arb_{}(depth), 0..={}).boxed() }}",
                    self.m.get(s).rust,
                    self.limit(&k, None, false).min(3)
                )
            }
            Ty::Fixed(t, n) => format!(
                "::proptest::collection::vec({}, {n}).prop_filter_map(\"fixed-size array\", |v| <[{}; {n}]>::try_from(v).ok()).boxed()",
                self.strat(t, &[]),
                self.rty(t)
            ),
            Ty::Optional(t) => {
                let inner = if self.boxed(t) {
                    format!("{}.prop_map(::std::boxed::Box::new)", self.strat(t, &[]))
                } else {
                    self.strat(t, &[])
                };
                format!(
                    "if depth == 0 {{ ::proptest::strategy::Just(::std::option::Option::None).boxed() }} else {{ let depth = depth - 1; ::proptest::option::of({inner}).boxed() }}"
                )
            }
        }
    }

    /// A strategy for field `f` of `owner`.
    fn field_strat(&self, owner: &str, f: &Field) -> String {
        let key = format!("{owner}.{}", f.name);
        let s = self.strat(&f.ty, std::slice::from_ref(&key));
        if self.cfg.payload.contains(&key) {
            format!("{s}.prop_map(::xdr::Payload::Bytes).boxed()")
        } else {
            s
        }
    }

    /// A strategy for a tuple of many values (nested in tuples of at most ten) and the
    /// matching pattern.
    fn tuple(parts: &[String]) -> (String, String) {
        if parts.len() <= 10 {
            let pats: Vec<String> = (0..parts.len()).map(|i| format!("v{i}")).collect();
            return (
                format!("({},)", parts.join(", ")),
                format!("({},)", pats.join(", ")),
            );
        }
        let mut strats = Vec::new();
        let mut pats = Vec::new();
        for (ci, chunk) in parts.chunks(10).enumerate() {
            strats.push(format!("({},)", chunk.join(", ")));
            let p: Vec<String> = (0..chunk.len())
                .map(|i| format!("v{}", ci * 10 + i))
                .collect();
            pats.push(format!("({},)", p.join(", ")));
        }
        (
            format!("({},)", strats.join(", ")),
            format!("({},)", pats.join(", ")),
        )
    }

    /// Emits the `arbitrary` module of proptest strategies.
    pub(super) fn arbitrary(&mut self) {
        let mut s = String::from(
            "\n/// proptest strategies for the generated types (test builds only).\n#[cfg(test)]\n#[allow(non_snake_case, unused_variables, clippy::redundant_clone)]\npub mod arbitrary {\n    use ::proptest::strategy::Strategy as _;\n    use super::*;\n",
        );
        for t in &self.m.types {
            let r = &t.rust;
            let body = match &t.kind {
                Kind::Typedef(ty) if self.cfg.newtypes.contains(&t.name) => format!(
                    "{}.prop_map({r}).boxed()",
                    self.strat(ty, std::slice::from_ref(&t.name))
                ),
                Kind::Typedef(_) => continue,
                Kind::Enum { items, open: false } => {
                    let _ = items;
                    format!("::proptest::sample::select({r}::ALL.to_vec()).boxed()")
                }
                Kind::Enum { items, open: true } => {
                    let vals: Vec<String> = items
                        .iter()
                        .map(|i| format!("{r}({})", i.value as i32 as u32))
                        .collect();
                    format!(
                        "::proptest::prop_oneof![::proptest::sample::select(::std::vec![{}]), ::proptest::arbitrary::any::<u32>().prop_map({r})].boxed()",
                        vals.join(", ")
                    )
                }
                Kind::Struct(fs) => {
                    let parts: Vec<String> =
                        fs.iter().map(|f| self.field_strat(&t.name, f)).collect();
                    let (st, pat) = Self::tuple(&parts);
                    let inits: Vec<String> = fs
                        .iter()
                        .enumerate()
                        .map(|(i, f)| format!("{}: v{i}", f.rust))
                        .collect();
                    format!(
                        "{st}.prop_map(|{pat}| {r} {{ {} }}).boxed()",
                        inits.join(", ")
                    )
                }
                Kind::Union(u) => self.union_strat(t, u),
            };
            let _ = writeln!(
                s,
                "\n    /// Values of `{r}`; `depth` bounds nesting through optional data and arrays.\n    pub fn arb_{r}(depth: u32) -> ::proptest::strategy::BoxedStrategy<{r}> {{\n        {body}\n    }}"
            );
        }
        for t in &self.m.types {
            if let Kind::Typedef(_) = t.kind {
                if !self.cfg.newtypes.contains(&t.name) {
                    continue;
                }
            }
            let r = &t.rust;
            let _ = writeln!(
                s,
                "\n    impl ::proptest::arbitrary::Arbitrary for {r} {{\n        type Parameters = ();\n        type Strategy = ::proptest::strategy::BoxedStrategy<Self>;\n        fn arbitrary_with(_: ()) -> Self::Strategy {{\n            arb_{r}({})\n        }}\n    }}",
                self.cfg.arbitrary_depth
            );
        }
        s.push_str("}\n");
        self.out.push_str(&s);
    }

    /// A strategy choosing among a union's arms (and its default, if a value is left for it).
    fn union_strat(&self, t: &TypeDef, u: &Union) -> String {
        let r = &t.rust;
        if self.cfg.option_unions.contains(&t.name) {
            let f = Self::option_arm(u).expect("checked in check_config");
            return format!(
                "::proptest::option::of({}).prop_map({r}).boxed()",
                self.field_strat(&t.name, f)
            );
        }
        let mut arms = Vec::new();
        for c in &u.cases {
            match &c.field {
                Some(f) => arms.push(format!(
                    "{}.prop_map({r}::{}).boxed()",
                    self.field_strat(&t.name, f),
                    c.variant
                )),
                None => arms.push(format!(
                    "::proptest::strategy::Just({r}::{}).boxed()",
                    c.variant
                )),
            }
        }
        if let Some(def) = &u.default {
            let taken: Vec<i128> = u.cases.iter().map(|c| c.value).collect();
            let disc = match &u.discr {
                Discr::Closed(e) => {
                    let td = self.m.get(e);
                    let Kind::Enum { items, .. } = &td.kind else {
                        unreachable!()
                    };
                    let free: Vec<String> = items
                        .iter()
                        .filter(|i| !taken.contains(&i.value))
                        .map(|i| format!("{}::{}", td.rust, i.variant))
                        .collect();
                    if free.is_empty() {
                        None
                    } else {
                        Some(format!(
                            "::proptest::sample::select(::std::vec![{}]).boxed()",
                            free.join(", ")
                        ))
                    }
                }
                Discr::Open(_) | Discr::UInt => {
                    let lits: Vec<String> = taken
                        .iter()
                        .map(|v| format!("{}u32", *v as i32 as u32))
                        .collect();
                    let wrap = match &u.discr {
                        Discr::Open(e) => format!(".prop_map({})", self.m.get(e).rust),
                        _ => String::new(),
                    };
                    Some(format!(
                        "::proptest::arbitrary::any::<u32>().prop_filter(\"a value no case takes\", |v| ![{}].contains(v)){wrap}.boxed()",
                        lits.join(", ")
                    ))
                }
                Discr::Int => {
                    let lits: Vec<String> = taken.iter().map(|v| format!("{v}i32")).collect();
                    Some(format!(
                        "::proptest::arbitrary::any::<i32>().prop_filter(\"a value no case takes\", |v| ![{}].contains(v)).boxed()",
                        lits.join(", ")
                    ))
                }
                Discr::Bool => {
                    let free: Vec<&str> = [("false", 0), ("true", 1)]
                        .iter()
                        .filter(|(_, v)| !taken.contains(v))
                        .map(|(s, _)| *s)
                        .collect();
                    free.first()
                        .map(|b| format!("::proptest::strategy::Just({b}).boxed()"))
                }
            };
            if let Some(disc) = disc {
                match def {
                    Some(f) => arms.push(format!(
                        "({disc}, {}).prop_map(|(a, b)| {r}::{}(a, b)).boxed()",
                        self.field_strat(&t.name, f),
                        u.default_variant
                    )),
                    None => arms.push(format!(
                        "{disc}.prop_map({r}::{}).boxed()",
                        u.default_variant
                    )),
                }
            }
        }
        format!(
            "::proptest::strategy::Union::new(::std::vec![{}]).boxed()",
            arms.join(", ")
        )
    }
}
