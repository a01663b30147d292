//! `Generator::vec_list`: linked lists as `Vec`s, by rewriting the model before it is emitted.

use super::{Gen, Rec};
use crate::model::{Kind, Model, Ty};
use crate::Error;

impl Gen<'_> {
    /// The model with every `S *` of a `vec_list` struct `S` turned into [`Ty::List`] and
    /// `S`'s tail field dropped (after `analyse`, which finds the lists).
    pub(super) fn vec_lists_model(&self) -> Result<Model, Error> {
        for name in &self.cfg.vec_lists {
            if self.rec.get(name) != Some(&Rec::List) {
                return Err(Error::config(format!(
                    "vec_list(\"{name}\"): not a linked-list struct (`struct {name} {{ ...; {name} *next; }}`)"
                )));
            }
        }
        let mut m = Model {
            consts: self.m.consts.clone(),
            types: self.m.types.clone(),
            index: self.m.index.clone(),
        };
        for t in &mut m.types {
            let node = self.cfg.vec_lists.contains(&t.name);
            match &mut t.kind {
                Kind::Typedef(ty) => self.to_list(ty),
                Kind::Struct(fs) => {
                    if node {
                        fs.pop();
                    }
                    fs.iter_mut().for_each(|f| self.to_list(&mut f.ty));
                }
                Kind::Union(u) => u
                    .cases
                    .iter_mut()
                    .filter_map(|c| c.field.as_mut())
                    .chain(u.default.iter_mut().flatten())
                    .for_each(|f| self.to_list(&mut f.ty)),
                Kind::Enum { .. } => {}
            }
        }
        // What still names a list struct would be one node without the rest of its list.
        for t in &m.types {
            let mut tys: Vec<&Ty> = Vec::new();
            match &t.kind {
                Kind::Typedef(ty) => tys.push(ty),
                Kind::Struct(fs) => tys.extend(fs.iter().map(|f| &f.ty)),
                Kind::Union(u) => tys.extend(
                    u.cases
                        .iter()
                        .filter_map(|c| c.field.as_ref())
                        .chain(u.default.iter().flatten())
                        .map(|f| &f.ty),
                ),
                Kind::Enum { .. } => {}
            }
            for ty in tys {
                if let Some(n) = self.names_list_node(ty) {
                    return Err(t.pos.err(format!(
                        "vec_list(\"{n}\"): `{}` uses `{n}` other than as `{n} *`",
                        t.name
                    )));
                }
            }
        }
        Ok(m)
    }

    /// Rewrites `S *` (S a `vec_list` struct) inside `ty` to `Ty::List(S)`.
    fn to_list(&self, ty: &mut Ty) {
        match ty {
            Ty::Optional(inner) => match &**inner {
                Ty::Named(n) if self.cfg.vec_lists.contains(n) => *ty = Ty::List(n.clone()),
                _ => self.to_list(inner),
            },
            Ty::Fixed(t, _) | Ty::Var(t, _) => self.to_list(t),
            _ => {}
        }
    }

    /// A `vec_list` struct that `ty` names other than inside `Ty::List`.
    fn names_list_node(&self, ty: &Ty) -> Option<String> {
        match ty {
            Ty::Named(n) if self.cfg.vec_lists.contains(n) => Some(n.clone()),
            Ty::Optional(t) | Ty::Fixed(t, _) | Ty::Var(t, _) => self.names_list_node(t),
            _ => None,
        }
    }
}
