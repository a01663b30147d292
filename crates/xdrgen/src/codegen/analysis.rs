//! Analysis before emitting: configuration checks, recursive types (strongly connected
//! components, linked lists, infinitely large types) and minimum encoded sizes.

use super::{pad4, Gen, Rec};
use crate::model::{Kind, Ty, TypeDef};
use crate::Error;

impl Gen<'_> {
    /// Checks that every configured bound, payload and bulk name exists and fits.
    pub(super) fn check_config(&self) -> Result<(), Error> {
        let field_of = |key: &str| -> Option<Ty> {
            let (t, f) = key.split_once('.')?;
            let td = self.m.types.get(*self.m.index.get(t)?)?;
            match &td.kind {
                Kind::Struct(fs) => fs.iter().find(|x| x.name == f).map(|x| x.ty.clone()),
                Kind::Union(u) => u
                    .cases
                    .iter()
                    .filter_map(|c| c.field.as_ref())
                    .chain(u.default.iter().flatten())
                    .find(|x| x.name == f)
                    .map(|x| x.ty.clone()),
                _ => None,
            }
        };
        for key in self.cfg.bounds.keys() {
            if !self.m.index.contains_key(key) && field_of(key).is_none() {
                return Err(Error::config(format!(
                    "bound(\"{key}\"): no type, and no struct or union field (`type.field`), of that name"
                )));
            }
        }
        for name in &self.cfg.vec_lists {
            if !matches!(
                self.m.index.get(name).map(|&i| &self.m.types[i].kind),
                Some(Kind::Struct(_))
            ) {
                return Err(Error::config(format!(
                    "vec_list(\"{name}\"): no struct of that name"
                )));
            }
        }
        for name in &self.cfg.newtypes {
            if !matches!(
                self.m.index.get(name).map(|&i| &self.m.types[i].kind),
                Some(Kind::Typedef(_))
            ) {
                return Err(Error::config(format!(
                    "newtype(\"{name}\"): no typedef of that name"
                )));
            }
        }
        for name in &self.cfg.option_unions {
            let shape = match self.m.index.get(name).map(|&i| &self.m.types[i].kind) {
                Some(Kind::Union(u)) => Self::option_arm(u).is_some(),
                _ => false,
            };
            if !shape {
                return Err(Error::config(format!(
                    "option_union(\"{name}\"): not a union `switch (bool ..) {{ case TRUE: T v; case FALSE: void; }}` (or `default: void` for FALSE)"
                )));
            }
        }
        for key in self.cfg.payload.iter().chain(self.cfg.bulk.iter()) {
            match field_of(key) {
                Some(Ty::OpaqueVar(_)) => {}
                _ => {
                    return Err(Error::config(format!(
                        "payload/bulk(\"{key}\"): not a `type.field` declared `opaque name<...>`"
                    )))
                }
            }
        }
        Ok(())
    }

    /// Pushes the named types `ty` refers to, with whether each is behind indirection.
    fn refs(ty: &Ty, out: &mut Vec<(String, bool)>, indirect: bool) {
        match ty {
            Ty::Named(n) => out.push((n.clone(), indirect)),
            Ty::Fixed(t, _) => Self::refs(t, out, indirect),
            Ty::Var(t, _) | Ty::Optional(t) => Self::refs(t, out, true),
            Ty::List(s) => out.push((s.clone(), true)),
            _ => {}
        }
    }

    /// Named types a type refers to, with whether the reference is behind an optional or a
    /// variable-length array.
    fn edges(&self, t: &TypeDef) -> Vec<(String, bool)> {
        let mut out = Vec::new();
        match &t.kind {
            Kind::Typedef(ty) => Self::refs(ty, &mut out, false),
            Kind::Enum { .. } => {}
            Kind::Struct(fs) => fs.iter().for_each(|f| Self::refs(&f.ty, &mut out, false)),
            Kind::Union(u) => u
                .cases
                .iter()
                .filter_map(|c| c.field.as_ref())
                .chain(u.default.iter().flatten())
                .for_each(|f| Self::refs(&f.ty, &mut out, false)),
        }
        out
    }

    /// Finds the recursive types and how each is decoded, rejects infinitely large types and
    /// computes minimum encoded sizes.
    pub(super) fn analyse(&mut self) -> Result<(), Error> {
        // Tarjan's strongly connected components over every named type.
        let n = self.m.types.len();
        let adj: Vec<Vec<usize>> = self
            .m
            .types
            .iter()
            .map(|t| {
                self.edges(t)
                    .into_iter()
                    .map(|(x, _)| self.m.index[&x])
                    .collect()
            })
            .collect();
        let mut index = vec![usize::MAX; n];
        let mut low = vec![0; n];
        let mut on = vec![false; n];
        let mut stack = Vec::new();
        let mut comp = vec![usize::MAX; n];
        let mut next = 0;
        let mut ncomp = 0;
        // Iterative Tarjan (the type graph of a big .x is deep).
        for root in 0..n {
            if index[root] != usize::MAX {
                continue;
            }
            let mut call: Vec<(usize, usize)> = vec![(root, 0)];
            index[root] = next;
            low[root] = next;
            next += 1;
            stack.push(root);
            on[root] = true;
            while let Some(&mut (v, ref mut ei)) = call.last_mut() {
                if *ei < adj[v].len() {
                    let w = adj[v][*ei];
                    *ei += 1;
                    if index[w] == usize::MAX {
                        index[w] = next;
                        low[w] = next;
                        next += 1;
                        stack.push(w);
                        on[w] = true;
                        call.push((w, 0));
                    } else if on[w] {
                        low[v] = low[v].min(index[w]);
                    }
                } else {
                    call.pop();
                    if let Some(&(p, _)) = call.last() {
                        low[p] = low[p].min(low[v]);
                    }
                    if low[v] == index[v] {
                        while let Some(w) = stack.pop() {
                            on[w] = false;
                            comp[w] = ncomp;
                            if w == v {
                                break;
                            }
                        }
                        ncomp += 1;
                    }
                }
            }
        }
        let mut size = vec![0usize; ncomp];
        for &c in &comp {
            size[c] += 1;
        }
        for (i, t) in self.m.types.iter().enumerate() {
            self.scc.insert(t.name.clone(), comp[i]);
            let self_loop = adj[i].contains(&i);
            if size[comp[i]] > 1 || self_loop {
                if let Kind::Typedef(_) = t.kind {
                    // A typedef only takes part through the struct or union it names.
                }
                self.recursive.insert(t.name.clone());
            }
        }
        // Recursion that is not behind an optional or a variable-length array has no finite
        // encoding (and no finite Rust type): the direct references must not form a cycle.
        let direct: Vec<Vec<usize>> = self
            .m
            .types
            .iter()
            .map(|t| {
                self.edges(t)
                    .into_iter()
                    .filter(|(_, indirect)| !indirect)
                    .map(|(x, _)| self.m.index[&x])
                    .collect()
            })
            .collect();
        let mut state = vec![0u8; n]; // 0 new, 1 on the path, 2 done
        for root in 0..n {
            if state[root] != 0 {
                continue;
            }
            let mut path: Vec<(usize, usize)> = vec![(root, 0)];
            state[root] = 1;
            while let Some(&mut (v, ref mut ei)) = path.last_mut() {
                if *ei < direct[v].len() {
                    let w = direct[v][*ei];
                    *ei += 1;
                    if state[w] == 1 {
                        let t = &self.m.types[w];
                        return Err(t.pos.err(format!(
                            "`{}` contains itself (through `{}`) other than behind `*` or `<>`: it would be infinitely large",
                            t.name, self.m.types[v].name
                        )));
                    }
                    if state[w] == 0 {
                        state[w] = 1;
                        path.push((w, 0));
                    }
                } else {
                    state[v] = 2;
                    path.pop();
                }
            }
        }
        for t in &self.m.types {
            let r = if !self.recursive.contains(&t.name) {
                Rec::No
            } else if self.is_list(t) {
                Rec::List
            } else {
                Rec::Depth
            };
            self.rec.insert(t.name.clone(), r);
        }
        for t in &self.m.types {
            let _ = self.min_named(&t.name);
        }
        Ok(())
    }

    /// `struct S { ...; S *next; }` where nothing else in S refers back to S.
    fn is_list(&self, t: &TypeDef) -> bool {
        let Kind::Struct(fs) = &t.kind else {
            return false;
        };
        let Some((last, rest)) = fs.split_last() else {
            return false;
        };
        // The tail is `S *`, or a typedef of it (`typedef struct S *list;`, as RFC 1813's
        // MOUNT lists are written).
        let mut tail = last.ty.clone();
        let mut via = Vec::new();
        while let Ty::Named(n) = &tail {
            match &self.m.get(n).kind {
                Kind::Typedef(inner) if via.len() < 64 => {
                    via.push(n.clone());
                    tail = inner.clone();
                }
                _ => break,
            }
        }
        if tail != Ty::Optional(Box::new(Ty::Named(t.name.clone()))) {
            return false;
        }
        let comp = self.scc[&t.name];
        let others_are_the_tail_typedefs = self
            .scc
            .iter()
            .filter(|(n, c)| **c == comp && *n != &t.name)
            .all(|(n, _)| via.contains(n));
        if !others_are_the_tail_typedefs {
            return false;
        }
        rest.iter().all(|f| {
            let mut r = Vec::new();
            Self::refs(&f.ty, &mut r, false);
            r.iter().all(|(x, _)| self.scc[x] != comp)
        })
    }

    /// The minimum encoded size of the named type in bytes, memoised.
    fn min_named(&mut self, name: &str) -> u64 {
        if let Some(v) = self.min.get(name) {
            return *v;
        }
        // Recursion is behind optional data or arrays, whose minimum is their 4-byte header,
        // so this terminates; the placeholder only guards against a cycle check gap.
        self.min.insert(name.to_string(), 4);
        let t = self.m.get(name);
        let v = match &t.kind {
            Kind::Typedef(ty) => self.min_ty(ty),
            Kind::Enum { .. } => 4,
            Kind::Struct(fs) => fs
                .iter()
                .map(|f| self.min_ty(&f.ty))
                .fold(0u64, |a, b| a.saturating_add(b)),
            Kind::Union(u) => {
                let arms = u
                    .cases
                    .iter()
                    .map(|c| c.field.as_ref())
                    .chain(u.default.iter().map(|d| d.as_ref()))
                    .map(|f| f.map_or(0, |f| self.min_ty(&f.ty)))
                    .min()
                    .unwrap_or(0);
                4 + arms
            }
        };
        self.min.insert(name.to_string(), v);
        v
    }

    /// The minimum encoded size of `ty` in bytes, computing named types as needed.
    fn min_ty(&mut self, ty: &Ty) -> u64 {
        match ty {
            Ty::I32 | Ty::U32 | Ty::Bool => 4,
            Ty::I64 | Ty::U64 => 8,
            Ty::OpaqueFixed(n) => pad4(*n as u64),
            Ty::OpaqueVar(_) | Ty::StringVar(_) | Ty::Var(..) | Ty::Optional(_) | Ty::List(_) => 4,
            Ty::Fixed(t, n) => self.min_ty(t).saturating_mul(*n as u64),
            Ty::Named(n) => self.min_named(n),
        }
    }

    /// The minimum encoded size of `ty` in bytes (after `analyse`).
    pub(super) fn min_of(&self, ty: &Ty) -> u64 {
        match ty {
            Ty::I32 | Ty::U32 | Ty::Bool => 4,
            Ty::I64 | Ty::U64 => 8,
            Ty::OpaqueFixed(n) => pad4(*n as u64),
            Ty::OpaqueVar(_) | Ty::StringVar(_) | Ty::Var(..) | Ty::Optional(_) | Ty::List(_) => 4,
            Ty::Fixed(t, n) => self.min_of(t).saturating_mul(*n as u64),
            Ty::Named(n) => self.min.get(n).copied().unwrap_or(4),
        }
    }
}
