//! Checks a parsed specification and resolves it into the form the code generator uses:
//! every value is a number, every type reference exists, inline types are hoisted to named
//! ones, and Rust names are chosen (and checked for collisions).

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::ast::{self, Decl, DeclKind, DeclType, Def, TypeSpec, Value};
use crate::lexer::Pos;
use crate::names::{camel, snake};
use crate::Error;

/// A resolved type expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ty {
    /// `int`.
    I32,
    /// `unsigned int`.
    U32,
    /// `hyper`.
    I64,
    /// `unsigned hyper`.
    U64,
    /// `bool`.
    Bool,
    /// A named type (typedef, enum, struct or union).
    Named(String),
    /// `opaque x[N]`.
    OpaqueFixed(u32),
    /// `opaque x<N>` (`None`: `<>`).
    OpaqueVar(Option<u32>),
    /// `string x<N>` (`None`: `<>`).
    StringVar(Option<u32>),
    /// `T x[N]`.
    Fixed(Box<Ty>, u32),
    /// `T x<N>` (`None`: `<>`).
    Var(Box<Ty>, Option<u32>),
    /// `T *x`.
    Optional(Box<Ty>),
    /// `S *x` where `S` is a linked-list struct made a `Vec` (`Generator::vec_list`): the
    /// list's nodes, each encoded after a TRUE, then FALSE.
    List(String),
}

/// A struct field or a union arm's declaration.
#[derive(Debug, Clone)]
pub struct Field {
    /// The XDR name.
    pub name: String,
    /// The Rust name (snake case, raw identifier where needed).
    pub rust: String,
    /// The type.
    pub ty: Ty,
    /// The declaration as written (for docs).
    pub xdr: String,
}

/// An enum item.
#[derive(Debug, Clone)]
pub struct EnumItem {
    /// The XDR name.
    pub name: String,
    /// Its value.
    pub value: i128,
    /// The Rust variant name (closed enums).
    pub variant: String,
}

/// How a union's discriminant is typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Discr {
    /// `int` (or a typedef of it).
    Int,
    /// `unsigned int`.
    UInt,
    /// `bool`.
    Bool,
    /// A closed enum (type name).
    Closed(String),
    /// An open enum (type name).
    Open(String),
}

/// One case label of a union with its arm.
#[derive(Debug, Clone)]
pub struct Case {
    /// The label as written (for docs).
    pub label: String,
    /// The label's value.
    pub value: i128,
    /// The Rust variant name.
    pub variant: String,
    /// The arm's declaration (`None`: `void`).
    pub field: Option<Field>,
}

/// A resolved union.
#[derive(Debug, Clone)]
pub struct Union {
    /// The discriminant's type.
    pub discr: Discr,
    /// Every label, in order.
    pub cases: Vec<Case>,
    /// The default arm: `None` when absent, `Some(None)` for `default: void`.
    pub default: Option<Option<Field>>,
    /// The Rust variant name of the default arm.
    pub default_variant: String,
}

/// What a named type is.
#[derive(Debug, Clone)]
pub enum Kind {
    /// A typedef (a Rust type alias).
    Typedef(Ty),
    /// An enum; `open` enums keep unknown values.
    Enum {
        /// Items in order.
        items: Vec<EnumItem>,
        /// Whether unknown values are kept.
        open: bool,
    },
    /// A struct.
    Struct(Vec<Field>),
    /// A union.
    Union(Union),
}

/// A named type.
#[derive(Debug, Clone)]
pub struct TypeDef {
    /// The XDR name.
    pub name: String,
    /// The Rust name.
    pub rust: String,
    /// What it is.
    pub kind: Kind,
    /// Where it was defined.
    pub pos: Pos,
    /// The typedef's declaration, or the union's discriminant declaration, as written.
    pub xdr: String,
}

/// A constant to emit.
#[derive(Debug, Clone)]
pub struct Const {
    /// Name.
    pub name: String,
    /// Value.
    pub value: i128,
    /// Doc line.
    pub doc: String,
}

/// The checked specification.
#[derive(Debug, Default)]
pub struct Model {
    /// Constants (including program, version and procedure numbers), in order.
    pub consts: Vec<Const>,
    /// Types in definition order.
    pub types: Vec<TypeDef>,
    /// Type name to index in `types`.
    pub index: HashMap<String, usize>,
}

impl Model {
    /// The named type.
    pub fn get(&self, name: &str) -> &TypeDef {
        &self.types[self.index[name]]
    }
}

/// An extension of an existing enum or union (for example RFC 8276's additions to
/// `nfs_opnum4` and `nfs_argop4`).
#[derive(Debug, Clone)]
pub enum Extension {
    /// Items to add to the enum.
    Enum(String, ast::EnumBody),
    /// Arms to add to the union.
    Union(String, Vec<ast::Arm>),
}

/// C fixed-width integer typedefs that `.x` files use without defining (rpcgen passes them to
/// C): the C99 names RFC 7863 assumes, and the BSD spellings `u_int32_t` and `u_int64_t` of the
/// rpcsvc files (FreeBSD's `nlm_prot.x`).
const BUILTIN_ALIASES: [(&str, Ty); 6] = [
    ("int32_t", Ty::I32),
    ("uint32_t", Ty::U32),
    ("int64_t", Ty::I64),
    ("uint64_t", Ty::U64),
    ("u_int32_t", Ty::U32),
    ("u_int64_t", Ty::U64),
];

/// A definition after inline types were hoisted.
enum Flat {
    Const(String, Value, Pos),
    Typedef(Decl),
    Enum(String, ast::EnumBody, Pos),
    Struct(String, ast::StructBody, Pos),
    Union(String, Box<ast::UnionBody>, Pos),
    Program(String, Vec<ast::Version>, Value, Pos),
}

/// Builds the model from parsed definitions.
pub fn build(
    defs: Vec<Def>,
    extensions: &[Extension],
    open_enums: &[String],
) -> Result<Model, Error> {
    let mut flat = Vec::new();
    for d in defs {
        hoist_def(d, &mut flat)?;
    }
    for ext in extensions {
        apply_extension(ext, &mut flat)?;
    }
    let mut r = Resolver::default();
    r.collect(&flat)?;
    for name in open_enums {
        match r.type_pos.get(name) {
            Some(_) if r.enum_names.contains(name) => {}
            _ => {
                return Err(Error::config(format!(
                    "open_enum(\"{name}\"): no enum of that name"
                )))
            }
        }
    }
    r.open = open_enums.iter().cloned().collect();
    r.resolve(&flat)
}

fn hoist_spec(
    spec: TypeSpec,
    synth: &str,
    pos: &Pos,
    out: &mut Vec<Flat>,
) -> Result<TypeSpec, Error> {
    Ok(match spec {
        TypeSpec::Enum(b) => {
            out.push(Flat::Enum(synth.to_string(), b, pos.clone()));
            TypeSpec::Named(synth.to_string(), pos.clone())
        }
        TypeSpec::Struct(b) => {
            let b = hoist_struct(b, synth, out)?;
            out.push(Flat::Struct(synth.to_string(), b, pos.clone()));
            TypeSpec::Named(synth.to_string(), pos.clone())
        }
        TypeSpec::Union(b) => {
            let b = hoist_union(*b, synth, out)?;
            out.push(Flat::Union(synth.to_string(), Box::new(b), pos.clone()));
            TypeSpec::Named(synth.to_string(), pos.clone())
        }
        other => other,
    })
}

fn hoist_decl(d: Decl, parent: &str, out: &mut Vec<Flat>) -> Result<Decl, Error> {
    match d {
        Decl::Named {
            name,
            ty: DeclType::Spec(spec),
            kind,
            pos,
        } => {
            let synth = format!("{parent}_{name}");
            let spec = hoist_spec(spec, &synth, &pos, out)?;
            Ok(Decl::Named {
                name,
                ty: DeclType::Spec(spec),
                kind,
                pos,
            })
        }
        other => Ok(other),
    }
}

fn hoist_struct(
    b: ast::StructBody,
    parent: &str,
    out: &mut Vec<Flat>,
) -> Result<ast::StructBody, Error> {
    let mut fields = Vec::new();
    for f in b.fields {
        fields.push(hoist_decl(f, parent, out)?);
    }
    Ok(ast::StructBody { fields })
}

fn hoist_union(
    b: ast::UnionBody,
    parent: &str,
    out: &mut Vec<Flat>,
) -> Result<ast::UnionBody, Error> {
    let discr = hoist_decl(b.discr, parent, out)?;
    let mut arms = Vec::new();
    for a in b.arms {
        arms.push(ast::Arm {
            labels: a.labels,
            decl: hoist_decl(a.decl, parent, out)?,
        });
    }
    let default = match b.default {
        Some(d) => Some(hoist_decl(d, parent, out)?),
        None => None,
    };
    Ok(ast::UnionBody {
        discr,
        arms,
        default,
    })
}

fn hoist_def(d: Def, out: &mut Vec<Flat>) -> Result<(), Error> {
    match d {
        Def::Const(n, v, p) => out.push(Flat::Const(n, v, p)),
        Def::Typedef(decl) => {
            let parent = match &decl {
                Decl::Named { name, .. } => name.clone(),
                Decl::Void(_) => String::new(),
            };
            // An inline type in a typedef takes the typedef's own name.
            match decl {
                Decl::Named {
                    name,
                    ty:
                        DeclType::Spec(
                            spec @ (TypeSpec::Enum(_) | TypeSpec::Struct(_) | TypeSpec::Union(_)),
                        ),
                    kind: DeclKind::Plain,
                    pos,
                } => match spec {
                    TypeSpec::Enum(b) => out.push(Flat::Enum(name, b, pos)),
                    TypeSpec::Struct(b) => {
                        let b = hoist_struct(b, &name, out)?;
                        out.push(Flat::Struct(name, b, pos))
                    }
                    TypeSpec::Union(b) => {
                        let b = hoist_union(*b, &name, out)?;
                        out.push(Flat::Union(name, Box::new(b), pos))
                    }
                    _ => {}
                },
                decl => {
                    let decl = hoist_decl(decl, &parent, out)?;
                    out.push(Flat::Typedef(decl));
                }
            }
        }
        Def::Enum(n, b, p) => out.push(Flat::Enum(n, b, p)),
        Def::Struct(n, b, p) => {
            let b = hoist_struct(b, &n, out)?;
            out.push(Flat::Struct(n, b, p))
        }
        Def::Union(n, b, p) => {
            let b = hoist_union(*b, &n, out)?;
            out.push(Flat::Union(n, Box::new(b), p))
        }
        Def::Program(n, v, num, p) => out.push(Flat::Program(n, v, num, p)),
    }
    Ok(())
}

fn apply_extension(ext: &Extension, flat: &mut [Flat]) -> Result<(), Error> {
    match ext {
        Extension::Enum(name, body) => {
            for f in flat.iter_mut() {
                if let Flat::Enum(n, b, _) = f {
                    if n == name {
                        b.items.extend(body.items.iter().cloned());
                        return Ok(());
                    }
                }
            }
            Err(Error::config(format!(
                "extend_enum(\"{name}\"): no enum of that name"
            )))
        }
        Extension::Union(name, arms) => {
            for f in flat.iter_mut() {
                if let Flat::Union(n, b, _) = f {
                    if n == name {
                        b.arms.extend(arms.iter().cloned());
                        return Ok(());
                    }
                }
            }
            Err(Error::config(format!(
                "extend_union(\"{name}\"): no union of that name"
            )))
        }
    }
}

#[derive(Default)]
struct Resolver {
    /// Every type name and where it was defined.
    type_pos: HashMap<String, Pos>,
    enum_names: HashSet<String>,
    /// Constant and enum item names, with their unevaluated values.
    value_defs: HashMap<String, (Value, Pos)>,
    /// Enum item name to its enum.
    item_enum: HashMap<String, String>,
    values: HashMap<String, i128>,
    open: HashSet<String>,
}

impl Resolver {
    fn define_value(&mut self, name: &str, v: Value, pos: &Pos) -> Result<(), Error> {
        if let Some((_, prev)) = self.value_defs.get(name) {
            return Err(pos.err(format!(
                "`{name}` is already defined at {}:{}:{}",
                prev.file, prev.line, prev.col
            )));
        }
        self.value_defs.insert(name.to_string(), (v, pos.clone()));
        Ok(())
    }

    fn define_type(&mut self, name: &str, pos: &Pos) -> Result<(), Error> {
        if let Some(prev) = self.type_pos.get(name) {
            return Err(pos.err(format!(
                "type `{name}` is already defined at {}:{}:{}",
                prev.file, prev.line, prev.col
            )));
        }
        self.type_pos.insert(name.to_string(), pos.clone());
        Ok(())
    }

    fn collect(&mut self, flat: &[Flat]) -> Result<(), Error> {
        for f in flat {
            match f {
                Flat::Const(n, v, p) => self.define_value(n, v.clone(), p)?,
                Flat::Typedef(Decl::Named { name, pos, .. }) => self.define_type(name, pos)?,
                Flat::Typedef(Decl::Void(_)) => {}
                Flat::Enum(n, b, p) => {
                    self.define_type(n, p)?;
                    self.enum_names.insert(n.clone());
                    for (item, v, ip) in &b.items {
                        self.define_value(item, v.clone(), ip)?;
                        self.item_enum.insert(item.clone(), n.clone());
                    }
                }
                Flat::Struct(n, _, p) | Flat::Union(n, _, p) => self.define_type(n, p)?,
                Flat::Program(..) => {}
            }
        }
        Ok(())
    }

    fn eval(&mut self, v: &Value, stack: &mut Vec<String>) -> Result<i128, Error> {
        match v {
            Value::Num(n, _) => Ok(*n),
            Value::Name(n, p) => {
                if n == "TRUE" {
                    return Ok(1);
                }
                if n == "FALSE" {
                    return Ok(0);
                }
                if let Some(x) = self.values.get(n) {
                    return Ok(*x);
                }
                let Some((def, _)) = self.value_defs.get(n).cloned() else {
                    return Err(p.err(format!("undefined constant `{n}`")));
                };
                if stack.contains(n) {
                    return Err(p.err(format!("constant `{n}` is defined in terms of itself")));
                }
                stack.push(n.clone());
                let x = self.eval(&def, stack)?;
                stack.pop();
                self.values.insert(n.clone(), x);
                Ok(x)
            }
        }
    }

    fn eval_u32(&mut self, v: &Value, what: &str) -> Result<u32, Error> {
        let x = self.eval(v, &mut Vec::new())?;
        u32::try_from(x).map_err(|_| {
            v.pos()
                .err(format!("{what} {x} is not between 0 and 2^32-1"))
        })
    }

    fn ty_of(&mut self, d: &Decl) -> Result<Ty, Error> {
        let Decl::Named { ty, kind, pos, .. } = d else {
            return Err(d.pos().err("`void` here"));
        };
        let base = match ty {
            DeclType::Opaque => {
                return Ok(match kind {
                    DeclKind::Fixed(v) => Ty::OpaqueFixed(self.eval_u32(v, "opaque size")?),
                    DeclKind::Var(v) => Ty::OpaqueVar(match v {
                        Some(v) => Some(self.eval_u32(v, "opaque bound")?),
                        None => None,
                    }),
                    _ => return Err(pos.err("opaque needs [N] or <N>")),
                })
            }
            DeclType::String => {
                return Ok(match kind {
                    DeclKind::Var(v) => Ty::StringVar(match v {
                        Some(v) => Some(self.eval_u32(v, "string bound")?),
                        None => None,
                    }),
                    _ => return Err(pos.err("string needs <N>")),
                })
            }
            DeclType::Spec(s) => match s {
                TypeSpec::Int => Ty::I32,
                TypeSpec::UInt => Ty::U32,
                TypeSpec::Hyper => Ty::I64,
                TypeSpec::UHyper => Ty::U64,
                TypeSpec::Bool => Ty::Bool,
                TypeSpec::Named(n, p) => {
                    if self.type_pos.contains_key(n) {
                        Ty::Named(n.clone())
                    } else if let Some((_, t)) = BUILTIN_ALIASES.iter().find(|(b, _)| b == n) {
                        t.clone()
                    } else {
                        return Err(p.err(format!("undefined type `{n}`")));
                    }
                }
                _ => return Err(pos.err("internal: inline type was not hoisted")),
            },
        };
        Ok(match kind {
            DeclKind::Plain => base,
            DeclKind::Fixed(v) => Ty::Fixed(Box::new(base), self.eval_u32(v, "array size")?),
            DeclKind::Var(v) => Ty::Var(
                Box::new(base),
                match v {
                    Some(v) => Some(self.eval_u32(v, "array bound")?),
                    None => None,
                },
            ),
            DeclKind::Optional => Ty::Optional(Box::new(base)),
        })
    }

    fn field(&mut self, d: &Decl) -> Result<Field, Error> {
        let Decl::Named { name, .. } = d else {
            return Err(d.pos().err("`void` here"));
        };
        Ok(Field {
            name: name.clone(),
            rust: snake(name),
            ty: self.ty_of(d)?,
            xdr: decl_text(d),
        })
    }

    /// Follows plain typedefs from a discriminant's type to what decides its encoding.
    fn discr_of(&mut self, d: &Decl, flat_types: &HashMap<String, Ty>) -> Result<Discr, Error> {
        let mut ty = self.ty_of(d)?;
        let pos = d.pos().clone();
        for _ in 0..64 {
            match ty {
                Ty::I32 => return Ok(Discr::Int),
                Ty::U32 => return Ok(Discr::UInt),
                Ty::Bool => return Ok(Discr::Bool),
                Ty::Named(ref n) if self.enum_names.contains(n) => {
                    return Ok(if self.open.contains(n) {
                        Discr::Open(n.clone())
                    } else {
                        Discr::Closed(n.clone())
                    })
                }
                Ty::Named(ref n) if flat_types.contains_key(n) => ty = flat_types[n].clone(),
                _ => break,
            }
        }
        Err(pos.err("a union discriminant must be int, unsigned int, bool or an enum"))
    }

    fn resolve(mut self, flat: &[Flat]) -> Result<Model, Error> {
        let mut model = Model::default();
        // Typedef targets, for following discriminant types.
        let mut typedefs: HashMap<String, Ty> = HashMap::new();
        for f in flat {
            if let Flat::Typedef(d @ Decl::Named { name, .. }) = f {
                let t = self.ty_of(d)?;
                typedefs.insert(name.clone(), t);
            }
        }
        let mut rust_names: BTreeMap<String, (String, Pos)> = BTreeMap::new();
        for f in flat {
            let (name, pos, kind, xdr) = match f {
                Flat::Const(n, v, _) => {
                    let x = self.eval(v, &mut Vec::new())?;
                    model.consts.push(Const {
                        name: n.clone(),
                        value: x,
                        doc: format!("XDR `const {n}`."),
                    });
                    continue;
                }
                Flat::Program(name, versions, num, pos) => {
                    self.program(name, versions, num, pos, &mut model)?;
                    continue;
                }
                Flat::Typedef(d) => {
                    let Decl::Named { name, pos, .. } = d else {
                        continue;
                    };
                    (
                        name.clone(),
                        pos.clone(),
                        Kind::Typedef(self.ty_of(d)?),
                        decl_text(d),
                    )
                }
                Flat::Enum(n, b, p) => {
                    let mut items = Vec::new();
                    let mut seen: HashMap<i128, String> = HashMap::new();
                    let open = self.open.contains(n);
                    for (item, v, ip) in &b.items {
                        let x = self.eval(v, &mut Vec::new())?;
                        if !(i32::MIN as i128..=u32::MAX as i128).contains(&x)
                            || (!open && x > i32::MAX as i128)
                        {
                            return Err(ip.err(format!(
                                "enum value {x} of `{item}` does not fit in 32 bits"
                            )));
                        }
                        if let Some(prev) = seen.get(&x) {
                            if !open {
                                return Err(ip.err(format!(
                                    "`{item}` has the same value ({x}) as `{prev}`; make `{n}` an open enum to allow that"
                                )));
                            }
                        }
                        seen.insert(x, item.clone());
                        items.push(EnumItem {
                            name: item.clone(),
                            value: x,
                            variant: camel(item),
                        });
                    }
                    check_unique(items.iter().map(|i| (&i.variant, &i.name)), p, "variant")?;
                    (
                        n.clone(),
                        p.clone(),
                        Kind::Enum { items, open },
                        String::new(),
                    )
                }
                Flat::Struct(n, b, p) => {
                    let mut fields = Vec::new();
                    for d in &b.fields {
                        fields.push(self.field(d)?);
                    }
                    check_unique(fields.iter().map(|f| (&f.rust, &f.name)), p, "field")?;
                    (n.clone(), p.clone(), Kind::Struct(fields), String::new())
                }
                Flat::Union(n, b, p) => {
                    let u = self.union(n, b, p, &typedefs)?;
                    (n.clone(), p.clone(), Kind::Union(u), decl_text(&b.discr))
                }
            };
            let rust = type_name(&name);
            if let Some((other, opos)) = rust_names.get(&rust) {
                return Err(pos.err(format!(
                    "`{name}` and `{other}` (at {}:{}) both become the Rust type `{rust}`",
                    opos.file, opos.line
                )));
            }
            rust_names.insert(rust.clone(), (name.clone(), pos.clone()));
            model.index.insert(name.clone(), model.types.len());
            model.types.push(TypeDef {
                name,
                rust,
                kind,
                pos,
                xdr,
            });
        }
        let mut const_names: HashMap<&str, ()> = HashMap::new();
        for c in &model.consts {
            if const_names.insert(&c.name, ()).is_some() {
                return Err(Error::config(format!(
                    "constant `{}` is defined twice",
                    c.name
                )));
            }
        }
        Ok(model)
    }

    fn program(
        &mut self,
        name: &str,
        versions: &[ast::Version],
        num: &Value,
        pos: &Pos,
        model: &mut Model,
    ) -> Result<(), Error> {
        let pnum = self.eval_u32(num, "program number")?;
        self.define_value(name, Value::Num(pnum as i128, pos.clone()), pos)?;
        model.consts.push(Const {
            name: name.to_string(),
            value: pnum as i128,
            doc: format!("RPC program `{name}`."),
        });
        for v in versions {
            let vnum = self.eval_u32(&v.number, "version number")?;
            self.define_value(&v.name, Value::Num(vnum as i128, v.pos.clone()), &v.pos)?;
            model.consts.push(Const {
                name: v.name.clone(),
                value: vnum as i128,
                doc: format!("Version `{}` of RPC program `{name}`.", v.name),
            });
            for pr in &v.procs {
                let n = self.eval_u32(&pr.number, "procedure number")?;
                for t in pr.result.iter().chain(pr.args.iter()) {
                    let builtin = t.contains(' ')
                        || ["int", "hyper", "bool"].contains(&t.as_str())
                        || BUILTIN_ALIASES.iter().any(|(b, _)| b == t);
                    if !builtin && !self.type_pos.contains_key(t) {
                        return Err(pr.pos.err(format!("undefined type `{t}`")));
                    }
                }
                self.define_value(&pr.name, Value::Num(n as i128, pr.pos.clone()), &pr.pos)?;
                let args = if pr.args.is_empty() {
                    "void".to_string()
                } else {
                    pr.args.join(", ")
                };
                model.consts.push(Const {
                    name: pr.name.clone(),
                    value: n as i128,
                    doc: format!(
                        "Procedure `{}({args})` -> `{}` of version `{}` of RPC program `{name}`.",
                        pr.name,
                        pr.result.as_deref().unwrap_or("void"),
                        v.name
                    ),
                });
            }
        }
        Ok(())
    }

    fn union(
        &mut self,
        name: &str,
        b: &ast::UnionBody,
        pos: &Pos,
        typedefs: &HashMap<String, Ty>,
    ) -> Result<Union, Error> {
        let discr = self.discr_of(&b.discr, typedefs)?;
        let mut cases = Vec::new();
        let mut seen: HashMap<i128, String> = HashMap::new();
        for arm in &b.arms {
            let field = match &arm.decl {
                Decl::Void(_) => None,
                d => Some(self.field(d)?),
            };
            for label in &arm.labels {
                let value = self.eval(label, &mut Vec::new())?;
                let text = match label {
                    Value::Num(n, _) => n.to_string(),
                    Value::Name(n, _) => n.clone(),
                };
                match &discr {
                    Discr::Bool => {
                        if value != 0 && value != 1 {
                            return Err(label
                                .pos()
                                .err(format!("case `{text}` is not a bool (TRUE or FALSE)")));
                        }
                    }
                    Discr::Closed(e) | Discr::Open(e) => {
                        let member = match label {
                            Value::Name(n, _) => self.item_enum.get(n) == Some(e),
                            Value::Num(..) => false,
                        };
                        let in_enum = member || self.enum_has_value(e, value);
                        if !in_enum && matches!(discr, Discr::Closed(_)) {
                            return Err(label
                                .pos()
                                .err(format!("case `{text}` is not a value of enum `{e}`")));
                        }
                        if !(i32::MIN as i128..=u32::MAX as i128).contains(&value) {
                            return Err(label
                                .pos()
                                .err(format!("case `{text}` does not fit in 32 bits")));
                        }
                    }
                    Discr::Int => {
                        if !(i32::MIN as i128..=i32::MAX as i128).contains(&value) {
                            return Err(label
                                .pos()
                                .err(format!("case `{text}` does not fit in an int")));
                        }
                    }
                    Discr::UInt => {
                        if !(0..=u32::MAX as i128).contains(&value) {
                            return Err(label
                                .pos()
                                .err(format!("case `{text}` does not fit in an unsigned int")));
                        }
                    }
                }
                if let Some(prev) = seen.get(&value) {
                    return Err(label.pos().err(format!(
                        "case `{text}` repeats the value {value} of case `{prev}` in union `{name}`"
                    )));
                }
                seen.insert(value, text.clone());
                let variant = match label {
                    Value::Name(n, _) if n == "TRUE" => "True".to_string(),
                    Value::Name(n, _) if n == "FALSE" => "False".to_string(),
                    Value::Name(n, _) => camel(n),
                    Value::Num(n, _) if *n < 0 => format!("CaseMinus{}", -n),
                    Value::Num(n, _) => format!("Case{n}"),
                };
                cases.push(Case {
                    label: text,
                    value,
                    variant,
                    field: field.clone(),
                });
            }
        }
        let default = match &b.default {
            None => None,
            Some(Decl::Void(_)) => Some(None),
            Some(d) => Some(Some(self.field(d)?)),
        };
        let mut names: Vec<(String, String)> = cases
            .iter()
            .map(|c| (c.variant.clone(), c.label.clone()))
            .collect();
        if default.is_some() {
            names.push(("Default".into(), "default".into()));
        }
        check_unique(names.iter().map(|(a, b)| (a, b)), pos, "variant")?;
        Ok(Union {
            discr,
            cases,
            default,
            default_variant: "Default".into(),
        })
    }

    fn enum_has_value(&mut self, e: &str, value: i128) -> bool {
        let items: Vec<String> = self
            .item_enum
            .iter()
            .filter(|(_, en)| en.as_str() == e)
            .map(|(i, _)| i.clone())
            .collect();
        items.iter().any(|i| {
            let v = Value::Name(
                i.clone(),
                Pos {
                    file: "".into(),
                    line: 0,
                    col: 0,
                },
            );
            self.eval(&v, &mut Vec::new()).ok() == Some(value)
        })
    }
}

fn check_unique<'a>(
    names: impl Iterator<Item = (&'a String, &'a String)>,
    pos: &Pos,
    what: &str,
) -> Result<(), Error> {
    let mut seen: HashMap<&String, &String> = HashMap::new();
    for (rust, xdr) in names {
        if let Some(prev) = seen.insert(rust, xdr) {
            return Err(pos.err(format!(
                "`{prev}` and `{xdr}` both become the Rust {what} `{rust}`"
            )));
        }
    }
    Ok(())
}

/// Renames union variants: in every union whose discriminant is the enum `discr`, the arm of
/// the item `label` (matched by value, so `case 0:` is the arm of the item whose value is 0), or
/// the `default` arm, is called `variant`. Each rename must apply to at least one union.
pub fn rename_variants(m: &mut Model, renames: &[(String, String, String)]) -> Result<(), Error> {
    for (discr, label, variant) in renames {
        let Some(&ei) = m.index.get(discr) else {
            return Err(Error::config(format!(
                "variant_name(\"{discr}\", ..): no enum of that name"
            )));
        };
        let value = match &m.types[ei].kind {
            Kind::Enum { .. } if label == "default" => None,
            Kind::Enum { items, .. } => match items.iter().find(|i| &i.name == label) {
                Some(i) => Some(i.value),
                None => {
                    return Err(Error::config(format!(
                        "variant_name(\"{discr}\", \"{label}\", ..): `{label}` is not an item of `{discr}` (nor `default`)"
                    )))
                }
            },
            _ => {
                return Err(Error::config(format!(
                    "variant_name(\"{discr}\", ..): no enum of that name"
                )))
            }
        };
        let mut applied = false;
        for t in &mut m.types {
            let Kind::Union(u) = &mut t.kind else {
                continue;
            };
            if !matches!(&u.discr, Discr::Closed(e) | Discr::Open(e) if e == discr) {
                continue;
            }
            match value {
                None if u.default.is_some() => {
                    u.default_variant = variant.clone();
                    applied = true;
                }
                None => {}
                Some(v) => {
                    for c in u.cases.iter_mut().filter(|c| c.value == v) {
                        c.variant = variant.clone();
                        applied = true;
                    }
                }
            }
            let mut names: Vec<(String, String)> = u
                .cases
                .iter()
                .map(|c| (c.variant.clone(), c.label.clone()))
                .collect();
            if u.default.is_some() {
                names.push((u.default_variant.clone(), "default".into()));
            }
            check_unique(names.iter().map(|(a, b)| (a, b)), &t.pos, "variant")?;
        }
        if !applied {
            return Err(Error::config(format!(
                "variant_name(\"{discr}\", \"{label}\", ..): no union switching on `{discr}` has that arm"
            )));
        }
    }
    Ok(())
}

/// The Rust name of an XDR type.
pub fn type_name(name: &str) -> String {
    let c = camel(name);
    if c == "Self" {
        "SelfXdr".to_string()
    } else {
        c
    }
}

/// An XDR declaration written back as text, for doc comments.
pub fn decl_text(d: &Decl) -> String {
    let Decl::Named { name, ty, kind, .. } = d else {
        return "void".into();
    };
    let v = |v: &Value| match v {
        Value::Num(n, _) => n.to_string(),
        Value::Name(n, _) => n.clone(),
    };
    let t = match ty {
        DeclType::Opaque => "opaque".to_string(),
        DeclType::String => "string".to_string(),
        DeclType::Spec(s) => match s {
            TypeSpec::Int => "int".into(),
            TypeSpec::UInt => "unsigned int".into(),
            TypeSpec::Hyper => "hyper".into(),
            TypeSpec::UHyper => "unsigned hyper".into(),
            TypeSpec::Bool => "bool".into(),
            TypeSpec::Named(n, _) => n.clone(),
            _ => "(inline type)".into(),
        },
    };
    match kind {
        DeclKind::Plain => format!("{t} {name}"),
        DeclKind::Fixed(x) => format!("{t} {name}[{}]", v(x)),
        DeclKind::Var(Some(x)) => format!("{t} {name}<{}>", v(x)),
        DeclKind::Var(None) => format!("{t} {name}<>"),
        DeclKind::Optional => format!("{t} *{name}"),
    }
}
